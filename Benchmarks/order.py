#!/usr/bin/env python3
"""Writes scripts/herald.order: the functions Herald runs at start and while streams sit idle, in
the order they first ran, for the linker's --symbol-ordering-file (scripts/build-release; issue 17,
idle footprint). Placed together, they fill a few pages of the binary instead of being spread over
most of its 17 MB of code, each page of which the kernel maps with its 64 KiB neighbourhood.

How: Herald runs under valgrind's callgrind (names not demangled) through a short workload: start,
/healthz, a client call and a server call, 40 SSE streams (personal and shared channels), publishes
to both, a WebSocket upgrade, heartbeats, closes, SIGTERM. Every function of the Herald binary with instructions counted is kept.

    scripts/build-release
    objcopy --strip-debug .build/release/herald /tmp/herald-nodbg   # valgrind 3.19 cannot read DWARF 5
    .venv/bin/python Benchmarks/order.py /tmp/herald-nodbg > scripts/herald.order

Needs valgrind, and httpx and pyjwt (Tests/e2e/requirements.txt, pip install pyjwt). The herald
process is started and stopped by its pid; its temporary directory is removed.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import jwt


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"herald exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("herald did not open its port")


def workload(port, secret, server_key):
    base = f"http://127.0.0.1:{port}"
    def token(i):
        return jwt.encode({"sub": str(i), "sid": f"s{i}", "exp": int(time.time()) + 3600, "channels": ["bench"]},
                          secret, algorithm="HS256")
    server = {"Authorization": f"Bearer {server_key}"}
    assert httpx.get(base + "/healthz", timeout=60).status_code == 200
    # A client call and a server call of their own (what idle.py makes before its streams): an
    # access token's and a server key's checks outside the stream and publish paths.
    assert httpx.get(base + "/v1/me/devices", headers={"Authorization": f"Bearer {token(0)}"}, timeout=60).status_code == 200
    assert httpx.get(base + "/v1/users/0/sessions/live", headers=server, timeout=60).status_code == 200
    streams = []
    for i in range(40):
        s = socket.create_connection(("127.0.0.1", port))
        shared = "&channels=bench" if i % 2 else ""
        s.sendall(f"GET /v1/stream?v=1{shared} HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {token(i)}\r\n"
                  "Accept: text/event-stream\r\n\r\n".encode())
        streams.append(s)
    time.sleep(3)
    for i in range(40):
        r = httpx.post(base + "/v1/publish", json={"channel": f"user:{i}", "event": "e", "data": {"i": i}},
                       headers=server, timeout=60)
        assert r.status_code == 200, r.text
    for k in range(5):
        httpx.post(base + "/v1/publish", json={"channel": "bench", "event": "e", "data": {"k": k}}, headers=server, timeout=60)
    ws = socket.create_connection(("127.0.0.1", port))
    ws.sendall(f"GET /v1/ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
               f"Authorization: Bearer {token(99)}\r\n\r\n".encode())
    time.sleep(4)   # heartbeats every second
    for s in streams[:20]:
        s.close()
    ws.close()
    time.sleep(2)
    for s in streams[20:]:
        s.close()
    time.sleep(1)


def executed_functions(callgrind_out, binary_name):
    """Functions of `binary_name` with a cost line, in their first order in the file."""
    objects, functions, current, seen, order = {}, {}, None, set(), []
    pattern = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")
    with open(callgrind_out, errors="replace") as f:
        for line in f:
            m = pattern.match(line.rstrip("\n"))
            if not m:
                continue
            called, kind, index, name = m.groups()
            if kind == "ob":
                if name:
                    objects[index] = name
                if not called:
                    current = objects.get(index)
            else:
                if name:
                    functions[index] = name
                if not called and current and os.path.basename(current) == binary_name:
                    symbol = re.sub(r"'\d+$", "", functions[index])   # callgrind's recursion suffix
                    if symbol not in seen and not symbol.startswith("0x"):
                        seen.add(symbol)
                        order.append(symbol)
    return order


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="herald-order-")
    try:
        port, secret, server_key = free_port(), "o" * 32, "s" * 32
        env = {"PATH": os.environ["PATH"], "HERALD_HOST": "127.0.0.1", "HERALD_PORT": str(port),
               "HERALD_DATABASE": os.path.join(work, "herald.db"), "HERALD_JWT_SECRET": secret,
               "HERALD_SERVER_KEY": server_key, "HERALD_LOOPS": "2", "HERALD_HEARTBEAT_SECONDS": "1",
               "HERALD_MAX_STREAMS_PER_USER": "0"}
        out = os.path.join(work, "callgrind.out")
        with open(os.path.join(work, "log"), "wb") as log:
            proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                                     binary, "serve"], env=env, stdout=log, stderr=log)
            try:
                wait_port(port, proc)
                time.sleep(2)
                workload(port, secret, server_key)
            finally:
                proc.terminate()
                proc.wait(timeout=120)
        functions = executed_functions(out, os.path.basename(binary))
        print(f"{len(functions)} functions", file=sys.stderr)
        print("\n".join(functions))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
