"""The smallest end-to-end proof: the binary starts and answers its health check."""
import httpx


def test_healthz(herald):
    r = httpx.get(herald.base + "/healthz")
    assert r.status_code == 200
    assert r.json() == {"status": "ok"}


def test_unknown_route_is_json_404(herald):
    r = httpx.get(herald.base + "/nope")
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"
