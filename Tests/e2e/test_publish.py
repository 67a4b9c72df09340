"""The server API: `POST /v1/publish` and `POST /v1/publish/batch` (docs/api.md)."""
import re
import uuid

import httpx
import pytest

from conftest import SERVER_KEY, envelope, summary

CURSOR = re.compile(r"^[0-9a-f]{8}-[0-9]+$")


def post(herald, path, body=None, content=None, headers=None):
    hdrs = herald.server_headers() if headers is None else headers
    if content is not None:
        hdrs = {"Content-Type": "application/json", **hdrs}
        return httpx.post(herald.url(path), content=content, headers=hdrs, timeout=10)
    return httpx.post(herald.url(path), json=body, headers=hdrs, timeout=10)


def assert_error(r, status, code, field=None):
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    if field is not None:
        assert body.get("field") == field, body
    return body


GOOD = {"channel": "generation:1", "event": "status", "data": {"a": 1}}


def unique(prefix="c"):
    """A channel (or user) name no other test uses, for tests on the module's shared server."""
    return f"{prefix}:{uuid.uuid4().hex[:12]}"


@pytest.mark.parametrize("path", ["/v1/publish", "/v1/publish/batch"])
def test_server_key_required(shared_herald, path):
    herald = shared_herald
    channel = unique()
    good = dict(GOOD, channel=channel)
    body = good if path == "/v1/publish" else {"messages": [good]}
    assert_error(post(herald, path, body, headers={}), 401, "unauthorized")
    assert_error(post(herald, path, body, headers={"Authorization": "Bearer wrong-key"}), 401, "unauthorized")
    assert_error(post(herald, path, body, headers={"Authorization": f"Bearer {SERVER_KEY}x"}), 401, "unauthorized")
    assert_error(post(herald, path, body, headers={"Authorization": SERVER_KEY}), 401, "unauthorized")
    assert_error(post(herald, path, body, headers={"Authorization": f"Bearer {herald.token()}"}), 401, "unauthorized")
    # and nothing was published
    r = herald.publish(channel, {"check": True})
    assert r["offset"] == 1


def test_server_api_disabled_without_key(herald_factory):
    h = herald_factory(HERALD_SERVER_KEY="")
    assert_error(post(h, "/v1/publish", GOOD, headers={}), 401, "unauthorized")
    assert_error(post(h, "/v1/publish", GOOD, headers={"Authorization": f"Bearer {SERVER_KEY}"}), 401, "unauthorized")


def test_publish_response_and_delivered_count(herald):
    token = herald.token(channels=["generation:*"])
    r = herald.publish("generation:1", {"state": "queued"})
    assert set(r) == {"id", "channel", "offset", "delivered"}
    assert CURSOR.match(r["id"]) and r["channel"] == "generation:1"
    assert r["offset"] == 1 and r["delivered"] == 0

    a = herald.stream(token, channels="generation:1")
    b = herald.stream(token, channels="generation:1,generation:2")
    c = herald.stream(token, channels="generation:2")
    for s in (a, b, c):
        s.ready()
    r2 = herald.publish("generation:1", {"state": "running"})
    assert r2["delivered"] == 2 and r2["offset"] == 2
    assert int(r2["id"].split("-")[1]) > int(r["id"].split("-")[1])
    for s in (a, b):
        m = s.next()
        assert m.id == r2["id"] and envelope(m)["offset"] == 2
    assert herald.publish("user:alice", 1)["delivered"] == 3

    a.close()
    # `delivered` counts live subscribers: the closed one is gone once the server notices;
    # await that by publishing until it drops (bounded)
    for _ in range(50):
        r3 = herald.publish("generation:1", {"x": 1})
        if r3["delivered"] == 1:
            break
    assert r3["delivered"] == 1


def test_offsets_are_per_channel(herald):
    assert [herald.publish("c:1", i)["offset"] for i in range(3)] == [1, 2, 3]
    assert herald.publish("c:2", 0)["offset"] == 1
    assert herald.publish("c:1", 9)["offset"] == 4


def test_data_null_is_allowed_and_data_is_required(herald):
    assert herald.publish("c:1", None)["offset"] == 1
    assert_error(post(herald, "/v1/publish", {"channel": "c:1"}), 400, "invalid_request", "data")


@pytest.mark.parametrize("body,field", [
    ({"event": "x", "data": 1}, "channel"),
    ({"channel": "", "data": 1}, "channel"),
    ({"channel": "bad name", "data": 1}, "channel"),
    ({"channel": "a" * 201, "data": 1}, "channel"),
    ({"channel": "bad/slash", "data": 1}, "channel"),
    ({"channel": 42, "data": 1}, "channel"),
    ({"channel": "c:1", "event": "has space", "data": 1}, "event"),
    ({"channel": "c:1", "event": "line\nbreak", "data": 1}, "event"),
    ({"channel": "c:1", "event": "cr\rhere", "data": 1}, "event"),
    ({"channel": "c:1", "event": "", "data": 1}, "event"),
    ({"channel": "c:1", "event": "e" * 65, "data": 1}, "event"),
    ({"channel": "c:1", "event": "at@sign", "data": 1}, "event"),
    ({"channel": "c:1", "event": 5, "data": 1}, "event"),
    ({"channel": "c:1", "data": 1, "retain": "yes"}, "retain"),
    ({"channel": "c:1", "data": 1, "retain": 1}, "retain"),
])
def test_bad_publish_bodies_are_400_with_field(shared_herald, body, field):
    herald = shared_herald
    channel = unique()
    if body.get("channel") == "c:1":
        body = dict(body, channel=channel)
    s = herald.stream(herald.token(channels=["c:*"]), channels=channel)
    s.ready()
    assert_error(post(herald, "/v1/publish", body), 400, "invalid_request", field)
    # bad input changes nothing: the next message is offset 1 and the only one delivered
    r = herald.publish(channel, {"sentinel": True})
    assert r["offset"] == 1
    m = s.next()
    assert m.id == r["id"]


def test_longest_event_name_and_allowed_characters(herald):
    s = herald.stream()
    s.ready()
    name = "Az09_-.:" + "e" * 56
    r = herald.publish("user:alice", 1, event=name)
    m = s.next()
    assert m.event == name and m.id == r["id"]


@pytest.mark.parametrize("content", [b"{not json", b"", b"[]", b'[{"channel":"c:1","data":1}]', b'"string"',
                                     b"null", b'{"channel":"c:1","data":1', b"\xff\xfe"])
def test_body_not_a_json_object_is_400(shared_herald, content):
    r = post(shared_herald, "/v1/publish", content=content)
    assert_error(r, 400, "invalid_request")


def test_non_json_content_type_is_415(herald):
    r = httpx.post(herald.url("/v1/publish"), content=b'{"channel":"c:1","data":1}',
                   headers={**herald.server_headers(), "Content-Type": "text/plain"})
    assert_error(r, 415, "unsupported_media_type")
    r = httpx.post(herald.url("/v1/publish"), content=b'{"channel":"c:1","data":1}',
                   headers={**herald.server_headers(), "Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200, r.text


def test_data_size_limit_is_413(herald):
    limit = 64 * 1024
    ok = herald.publish("c:1", "x" * (limit - 2))      # a JSON string of exactly 64 KiB
    assert ok["offset"] == 1
    r = post(herald, "/v1/publish", {"channel": "c:1", "data": "x" * (limit - 1)})
    assert_error(r, 413, "payload_too_large")
    r = post(herald, "/v1/publish", {"channel": "c:1", "data": {"k": "x" * 70000}})
    assert_error(r, 413, "payload_too_large")
    assert herald.publish("c:1", 1)["offset"] == 2


def test_data_size_limit_setting(herald_factory):
    h = herald_factory(HERALD_MAX_DATA_BYTES=100)
    assert h.publish("c:1", "x" * 98)["offset"] == 1
    assert_error(post(h, "/v1/publish", {"channel": "c:1", "data": "x" * 99}), 413, "payload_too_large")


def test_large_data_arrives_intact(herald):
    s = herald.stream()
    s.ready()
    data = {"blob": "y" * 60000, "lines": "a\nb" * 100}
    r = herald.publish("user:alice", data)
    m = s.next()
    assert m.id == r["id"] and envelope(m)["data"] == data


def test_batch_publish_results_in_order(herald):
    token = herald.token(channels=["g:*"])
    s = herald.stream(token, channels="g:1,g:2")
    s.ready()
    messages = [{"channel": "g:1", "event": "a", "data": 1},
                {"channel": "g:2", "data": {"two": 2}},
                {"channel": "g:3", "event": "c", "data": 3},
                {"channel": "g:1", "event": "d", "data": [4], "retain": True}]
    out = herald.publish_batch(messages)
    results = out["results"]
    assert [r["channel"] for r in results] == ["g:1", "g:2", "g:3", "g:1"]
    assert [r["offset"] for r in results] == [1, 1, 1, 2]
    assert [r["delivered"] for r in results] == [1, 1, 0, 1]
    seqs = [int(r["id"].split("-")[1]) for r in results]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    got = s.take(3)
    assert [e.id for e in got] == [results[0]["id"], results[1]["id"], results[3]["id"]]
    assert [e.event for e in got] == ["a", "message", "d"]
    assert summary(got) == [("g:1", 1), ("g:2", {"two": 2}), ("g:1", [4])]
    # the retained flag of a batch message is honoured
    s2 = herald.stream(token, channels="g:1")
    s2.ready()
    snap = s2.next()
    assert snap.has_id is False and envelope(snap)["data"] == [4]


def test_batch_with_one_invalid_message_publishes_nothing(herald):
    token = herald.token(channels=["g:*"])
    s = herald.stream(token, channels="g:1,g:2")
    s.ready()
    bad = {"messages": [{"channel": "g:1", "data": 1}, {"channel": "bad name", "data": 2},
                        {"channel": "g:2", "data": 3}]}
    assert_error(post(herald, "/v1/publish/batch", bad), 400, "invalid_request", "messages[1].channel")
    bad_event = {"messages": [{"channel": "g:1", "data": 1}, {"channel": "g:2", "data": 2},
                              {"channel": "g:2", "event": "x y", "data": 3}]}
    assert_error(post(herald, "/v1/publish/batch", bad_event), 400, "invalid_request", "messages[2].event")
    missing = {"messages": [{"channel": "g:1", "data": 1}, {"channel": "g:2"}]}
    assert_error(post(herald, "/v1/publish/batch", missing), 400, "invalid_request", "messages[1].data")
    too_big = {"messages": [{"channel": "g:1", "data": 1}, {"channel": "g:2", "data": "z" * 70000}]}
    assert_error(post(herald, "/v1/publish/batch", too_big), 413, "payload_too_large", "messages[1].data")
    retain = {"messages": [{"channel": "g:1", "data": 1, "retain": True}, {"channel": "g:2", "data": 1, "retain": "no"}]}
    assert_error(post(herald, "/v1/publish/batch", retain), 400, "invalid_request", "messages[1].retain")

    # nothing was published: offsets start at 1, the subscriber's next event is the sentinel,
    # and no retained message was kept
    r = herald.publish("g:1", {"sentinel": True})
    assert r["offset"] == 1
    m = s.next()
    assert m.id == r["id"] and envelope(m)["data"] == {"sentinel": True}
    assert herald.publish("g:2", 0)["offset"] == 1
    s2 = herald.stream(token, channels="g:1")
    s2.ready()
    live = herald.publish("g:1", "live")
    assert s2.next().id == live["id"], "no retained message from the refused batch"


@pytest.mark.parametrize("body,field", [
    ({"messages": []}, "messages"),
    ({}, "messages"),
    ({"messages": "x"}, "messages"),
    ({"messages": {"channel": "c:1", "data": 1}}, "messages"),
])
def test_bad_batch_bodies(shared_herald, body, field):
    assert_error(post(shared_herald, "/v1/publish/batch", body), 400, "invalid_request", field)


def test_batch_size_limit(herald):
    ok = herald.publish_batch([{"channel": "c:1", "data": i} for i in range(1000)])
    assert len(ok["results"]) == 1000 and ok["results"][-1]["offset"] == 1000
    r = post(herald, "/v1/publish/batch", {"messages": [{"channel": "c:1", "data": i} for i in range(1001)]})
    assert_error(r, 400, "invalid_request", "messages")
    assert herald.publish("c:1", 0)["offset"] == 1001


def test_body_over_limit_is_413(herald):
    r = post(herald, "/v1/publish", content=b'{"channel":"c:1","data":"' + b"x" * (1024 * 1024) + b'"}')
    assert r.status_code == 413, r.text
    assert r.json()["error"] == "payload_too_large"
    assert httpx.get(herald.url("/healthz")).status_code == 200


def _nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [10, 63, 64, 100, 450, 511, 600, 5000])
def test_deeply_nested_data_does_not_crash(shared_herald, depth):
    herald = shared_herald
    user = unique("u").replace(":", "-")
    s = herald.stream(herald.token(sub=user))
    s.ready()
    body = '{"channel":"user:%s","data":' % user + "[" * depth + "]" * depth + "}"
    try:
        r = post(herald, "/v1/publish", content=body.encode())
        status = r.status_code
    except httpx.TransportError as exc:
        status = f"connection lost ({exc})"
    assert herald.proc.poll() is None, f"herald died with {herald.proc.returncode} (response: {status})"
    # Bodies nest at most 64 levels (the outer object is one), so data gets 63; deeper is refused
    # before decoding, which bounds the stack a hostile body can use.
    assert status == (200 if depth <= 63 else 400), status
    if status == 200:
        assert envelope(s.next())["data"] == _nested(depth)
    assert httpx.get(herald.url("/healthz")).status_code == 200


@pytest.mark.parametrize("name", ["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"])
def test_protocol_event_names_are_refused(shared_herald, name):
    herald = shared_herald
    channel = unique()
    assert_error(post(herald, "/v1/publish", {"channel": channel, "event": name, "data": 1}), 400, "invalid_request", "event")
    batch = {"messages": [{"channel": channel, "data": 1}, {"channel": channel, "event": name, "data": 2}]}
    assert_error(post(herald, "/v1/publish/batch", batch), 400, "invalid_request", "messages[1].event")
    assert herald.publish(channel, 0)["offset"] == 1
    # names that only resemble them are ordinary
    assert herald.publish(channel, 0, event=name.upper())["offset"] == 2


@pytest.mark.parametrize("content", [
    b'{"channel":"c:1","data":"h\xff\xfei"}', b'{"channel":"c:1","data":"\xc0\xaf"}', b'{"channel":"c:1","data":"\xed\xa0\x80"}',
    b'{"channel":"c:1","data":"\xe2\x82"}', b'{"channel":"c:1","data":{"\xff":1}}', b'{"channel":"c:1","data":"h\\ud83d"}',
    b'{"channel":"c:1","data":"h\\ude00x"}', b'{"channel":"c:1","data":"h\\ud83d\\u0041"}',
    b'{"channel":"c:dup","data":{"a":1,"a":2}}', b'{"channel":"c:dup","data":{"a":1,"\\u0061":2}}',
    b'{"channel":"c:1","chan\\u006eel":"c:2","data":1}', b'{"messages":[{"channel":"c:1","data":[{"x":1,"x":1}]}]}',
])
def test_invalid_utf8_lone_surrogates_and_duplicate_keys_are_400(shared_herald, content):
    path = "/v1/publish/batch" if content.startswith(b'{"messages"') else "/v1/publish"
    assert_error(post(shared_herald, path, content=content), 400, "invalid_request")


def test_paired_surrogates_and_utf8_are_carried(shared_herald):
    r = post(shared_herald, "/v1/publish", content='{"channel":"c:1","data":"\\ud83d\\ude00 é"}'.encode())
    assert r.status_code == 200, r.text
