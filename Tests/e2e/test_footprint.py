"""Issue 17, idle footprint: libcurl, libpq and libhiredis (and the gnutls/krb5/ldap chain behind
them), libssl and libcrypto are opened on first use, so a process that needs none of them never
maps them, and the embedded default maps none at start. Its first hash opens OpenSSL for the
low-level digests, which initialise none of OpenSSL 3's providers."""
import os
from pathlib import Path

import httpx
import pytest
import websockets

from conftest import recv_json, run_async as run, ws_url

LAZY = ("libcurl", "libpq", "libhiredis", "libgnutls", "libldap", "libkrb5")
# Opened at the first hash (an HS256 token check, a server call, a WebSocket handshake: OpenSSL's
# low-level digests, `Digests`), or at start by a setting that needs TLS or keys (push, public keys).
OPENSSL = ("libssl", "libcrypto")
# libcrypto's resident pages after the low-level digests: ~1.4 MB at its load and ~0.2 MB for the
# digests. A digest through OpenSSL 3's provider (SHA256(), HMAC(), EVP_Digest) initialises the
# providers and adds ~2.2 MB more (issue 17): this bound lies between the two.
LIBCRYPTO_RSS_BOUND_KB = 2600


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


def resident_kb(h, prefix) -> int:
    """The resident kB of the process's mappings of the shared object `prefix` (smaps' Rss)."""
    total, inside = 0, False
    for line in Path(f"/proc/{h.proc.pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and ":" not in fields[0]:
            inside = len(fields) >= 6 and os.path.basename(fields[-1]).startswith(prefix + ".so")
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


engines = pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_BROKER") or os.environ.get("HERALD_E2E_POSTGRES")),
                             reason="the opt-in engine runs use libhiredis or libpq")


@engines
def test_the_embedded_default_maps_none_of_the_libraries_at_start(herald):
    # HERALD_JWT_SECRET and HERALD_SERVER_KEY are set: neither is hashed before it is used.
    assert httpx.get(herald.url("/healthz")).status_code == 200
    assert mapped(herald, LAZY + OPENSSL) == set()


@engines
def test_the_first_token_check_opens_openssl_for_its_digests_only(herald):
    # A stream and a publish (an HS256 token, the server key): the paths an embedded server
    # without push runs. They open OpenSSL for SHA-256, and nothing of the engines or push.
    s = herald.stream(herald.token(channels=["news"]), channels="news")
    s.ready()
    assert mapped(herald, OPENSSL) == set(OPENSSL)
    r = herald.publish("news", {"n": 1})
    assert s.next().id == r["id"]
    assert mapped(herald, LAZY) == set()
    # The low-level digests initialise no provider.
    assert 0 < resident_kb(herald, "libcrypto") < LIBCRYPTO_RSS_BOUND_KB


@engines
def test_a_server_call_alone_opens_openssl(herald):
    # The server key's hash is computed at the first server call, not at start.
    assert mapped(herald, OPENSSL) == set()
    herald.publish("news", {"n": 1})
    assert mapped(herald, OPENSSL) == set(OPENSSL)
    assert 0 < resident_kb(herald, "libcrypto") < LIBCRYPTO_RSS_BOUND_KB


@engines
def test_a_websocket_handshake_opens_openssl_without_its_providers(herald):
    # Sec-WebSocket-Accept is OpenSSL's low-level SHA-1 + Foundation's base64.
    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=herald.token())) as ws:
            assert (await recv_json(ws))["type"] == "ready"
            assert mapped(herald, OPENSSL) == set(OPENSSL)
            assert mapped(herald, LAZY) == set()
            assert 0 < resident_kb(herald, "libcrypto") < LIBCRYPTO_RSS_BOUND_KB

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
