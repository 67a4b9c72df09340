"""Issue 17, idle footprint: libcurl, libpq and libhiredis (and the gnutls/krb5/ldap chain behind
them), libssl and libcrypto are opened on first use, so a process that needs none of them never
maps them."""
import os
from pathlib import Path

import httpx
import pytest
import websockets

from conftest import recv_json, run_async as run, ws_url

LAZY = ("libcurl", "libpq", "libhiredis", "libgnutls", "libldap", "libkrb5")
# HS256 tokens and server keys are hashed in Swift; TLS and keys (push, public keys) use OpenSSL.
OPENSSL = ("libssl", "libcrypto")


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


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER") or os.environ.get("HERALD_E2E_POSTGRES")),
                    reason="the opt-in engine runs use libhiredis or libpq")
def test_the_embedded_default_maps_none_of_the_engine_or_push_libraries(herald):
    # A stream and a publish (an HS256 token, the server key): the paths an embedded server
    # without push runs.
    s = herald.stream(herald.token(channels=["news"]), channels="news")
    s.ready()
    r = herald.publish("news", {"n": 1})
    assert s.next().id == r["id"]
    assert mapped(herald, LAZY + OPENSSL) == set()


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER") or os.environ.get("HERALD_E2E_POSTGRES")),
                    reason="the opt-in engine runs use libhiredis or libpq")
def test_a_websocket_handshake_opens_no_openssl(herald):
    # Sec-WebSocket-Accept is SHA-1 + base64 in Swift: OpenSSL would cost 3.6 MB at the first upgrade.
    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=herald.token())) as ws:
            assert (await recv_json(ws))["type"] == "ready"
            assert mapped(herald, OPENSSL) == set()

    run(scenario())


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER")), reason="the opt-in broker run maps libhiredis")
def test_the_admin_api_alone_opens_no_libcurl(herald_factory):
    # The admin API starts the push client and worker (stored apps may bring credentials later),
    # but APNs and FCM send through Herald's own HTTP/2 client: libcurl waits for Expo or Web Push.
    h = herald_factory(HERALD_ADMIN_KEY="a" * 32)
    assert httpx.get(h.url("/healthz")).status_code == 200
    assert mapped(h, LAZY) == set()
    # The native client's TLS context: OpenSSL is opened at start for it.
    assert mapped(h, OPENSSL) == set(OPENSSL)


@pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER")), reason="the opt-in broker run maps libhiredis")
def test_expo_opens_libcurl_at_start_and_nothing_else(herald_factory):
    # Expo sends through libcurl: opened at start, so that a missing library stops the start.
    h = herald_factory(HERALD_EXPO_ENABLED="1")
    assert "libcurl" in mapped(h, LAZY)
    assert "libhiredis" not in mapped(h, LAZY)
    assert httpx.get(h.url("/healthz")).status_code == 200
