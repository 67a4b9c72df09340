"""Issue 17, idle footprint: libcurl, libpq and libhiredis (and the gnutls/krb5/ldap chain behind
them), libssl and libcrypto, libnghttp2 and libz are opened on first use, so a process that needs none of them never
maps them, and the embedded default maps none at start. Its hashes (HS256 tokens, the server key,
the WebSocket accept value) are OpenSSL's low-level digests linked into the binary from
libcrypto.a, so its first requests map no OpenSSL either."""
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest
import websockets

from conftest import BINARY, ROOT, recv_json, run_async as run, ws_url

LAZY = ("libcurl", "libpq", "libhiredis", "libgnutls", "libldap", "libkrb5")
# Opened at start by a setting that needs TLS or keys (push, public keys, sealed secrets, dev mode).
OPENSSL = ("libssl", "libcrypto")
# Push alone uses them: libnghttp2 (opened by the native HTTP/2 client) and libz (Expo's gzip bodies).
PUSH = ("libnghttp2", "libz")
# The members of libcrypto.a that `Digests` links (the low-level SHA-256 and SHA-1, their assembly,
# the CPU feature probe they read, CRYPTO_memcmp): any other member would be OpenSSL code linked in
# by a call that should have gone through COpenSSLShim's forwarders.
LINKED_LIBCRYPTO_MEMBERS = {
    "libcrypto-lib-sha256.o", "libcrypto-lib-sha256-x86_64.o", "libcrypto-lib-sha1dgst.o",
    "libcrypto-lib-sha1-x86_64.o", "libcrypto-lib-cpuid.o", "libcrypto-lib-x86_64cpuid.o",
    "libcrypto-lib-ctype.o",
}
LIBCRYPTO_ARCHIVE = Path("/usr/lib/x86_64-linux-gnu/libcrypto.a")


def mapped(h, prefixes) -> set:
    """The shared objects among `prefixes` in the process's memory map."""
    found = set()
    for line in Path(f"/proc/{h.proc.pid}/maps").read_text().splitlines():
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        name = os.path.basename(path)
        for prefix in prefixes:
            if name.startswith(prefix + ".so") or name.startswith(prefix + "-"):
                found.add(prefix)
    return found


engines = pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER") or os.environ.get("HERALD_E2E_POSTGRES")),
                             reason="the opt-in engine runs use libhiredis or libpq")


@engines
def test_the_embedded_default_maps_none_of_the_libraries_at_start(herald):
    # HERALD_JWT_SECRET and HERALD_SERVER_KEY are set: neither is hashed before it is used.
    assert httpx.get(herald.url("/healthz")).status_code == 200
    assert mapped(herald, LAZY + OPENSSL + PUSH) == set()


@engines
def test_a_token_check_and_a_server_call_map_no_openssl(herald):
    # A stream and a publish (an HS256 token, the server key): the paths an embedded server
    # without push runs. Their SHA-256 is linked in: no libssl, no libcrypto, nothing of the engines.
    s = herald.stream(herald.token(channels=["news"]), channels="news")
    s.ready()
    r = herald.publish("news", {"n": 1})
    assert s.next().id == r["id"]
    assert mapped(herald, LAZY + OPENSSL + PUSH) == set()


@engines
def test_a_websocket_handshake_maps_no_openssl(herald):
    # Sec-WebSocket-Accept is OpenSSL's low-level SHA-1 (linked in) + Foundation's base64.
    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=herald.token())) as ws:
            assert (await recv_json(ws))["type"] == "ready"
            assert mapped(herald, LAZY + OPENSSL + PUSH) == set()

    run(scenario())


@pytest.mark.skipif(not LIBCRYPTO_ARCHIVE.exists(), reason="libcrypto.a (libssl-dev) is not where Debian puts it")
def test_only_the_digests_members_of_libcrypto_a_are_linked():
    # A member of the archive is linked when a symbol it defines is undefined elsewhere; the
    # forwarders define every other OpenSSL function Herald calls. A symbol of another member in
    # the binary (one the forwarders do not define) means a new OpenSSL call was linked statically.
    forwarders = set(re.findall(r"^\s+[FV]\((?:[^,]+, )?(\w+), \(",
                                (ROOT / "Sources/COpenSSLShim/openssl_forward.c").read_text(), re.M))
    assert {"EVP_PKEY_derive", "SSL_new", "BN_free"} <= forwarders
    member_of, member = {}, None
    archive = subprocess.run(["nm", "--defined-only", "-g", str(LIBCRYPTO_ARCHIVE)], capture_output=True, text=True, check=True)
    for line in archive.stdout.splitlines():
        if line.endswith(".o:"):
            member = line[:-1]
        elif len(line.split()) == 3:
            member_of.setdefault(line.split()[2], member)
    binary = subprocess.run(["nm", "--defined-only", BINARY], capture_output=True, text=True, check=True)
    defined = {line.split()[2] for line in binary.stdout.splitlines() if len(line.split()) == 3}
    linked = {member_of[name] for name in defined if name in member_of and name not in forwarders}
    assert "libcrypto-lib-sha256.o" in linked
    assert linked <= LINKED_LIBCRYPTO_MEMBERS, sorted(linked - LINKED_LIBCRYPTO_MEMBERS)


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER")), reason="the opt-in broker run maps libhiredis")
def test_the_admin_api_alone_opens_no_libcurl(herald_factory):
    # The admin API starts the push client and worker (stored apps may bring credentials later),
    # but APNs and FCM send through Herald's own HTTP/2 client: libcurl waits for Expo or Web Push.
    h = herald_factory(HERALD_ADMIN_KEY="a" * 32)
    assert httpx.get(h.url("/healthz")).status_code == 200
    assert mapped(h, LAZY) == set()
    # The native client's TLS context and framing: OpenSSL and libnghttp2 are opened at start for it.
    assert mapped(h, OPENSSL) == set(OPENSSL)
    assert mapped(h, PUSH) == {"libnghttp2"}


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER")), reason="the opt-in broker run maps libhiredis")
def test_expo_opens_libcurl_at_start_and_nothing_else(herald_factory):
    # Expo sends through libcurl: opened at start, so that a missing library stops the start.
    h = herald_factory(HERALD_EXPO_ENABLED="1")
    assert "libcurl" in mapped(h, LAZY)
    assert "libhiredis" not in mapped(h, LAZY)
    assert httpx.get(h.url("/healthz")).status_code == 200
