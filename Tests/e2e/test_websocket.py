"""WebSocket transport (RT-2) with the third-party `websockets` client: the JSON protocol, the
same history/resume/retain/slow-consumer rules as SSE, and the handshake refusals."""
import asyncio
import json
import socket
import threading
import time

import httpx
import pytest
import websockets

TIMEOUT = 5


from conftest import recv_json, recv_until, ws_url, run_async as run


def test_ready_subscribe_and_receive(herald):
    token = herald.token(sub="42", sid="phone", channels=["generation:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            ready = await recv_json(ws)
            assert ready["type"] == "ready"
            assert ready["user_id"] == "42" and ready["session_id"] == "phone"
            assert ready["channels"] == ["user:42"]
            await ws.send(json.dumps({"type": "subscribe", "channels": ["generation:7"]}))
            subscribed = await recv_json(ws)
            assert subscribed == {"type": "subscribed", "channels": ["generation:7"], "id": subscribed["id"]}
            sent = herald.publish("generation:7", {"state": "done"}, event="status")
            personal = herald.publish("user:42", {"n": 1}, event="notification.created")
            first = await recv_json(ws)
            second = await recv_json(ws)
            assert first == {"type": "event", "channel": "generation:7", "event": "status", "offset": 1,
                             "data": {"state": "done"}, "id": sent["id"]}
            assert second["channel"] == "user:42" and second["id"] == personal["id"]
            await ws.send(json.dumps({"type": "ping"}))
            assert await recv_json(ws) == {"type": "pong"}

    run(scenario())


def test_auth_frame_instead_of_a_token_on_the_url(herald):
    async def scenario():
        async with websockets.connect(ws_url(herald)) as ws:
            await ws.send(json.dumps({"type": "subscribe", "channels": ["user:1"]}))
            assert (await recv_json(ws))["error"] == "unauthenticated"
            await ws.send(json.dumps({"type": "auth", "access_token": herald.token(sub="1")}))
            ready = await recv_json(ws)
            assert ready["type"] == "ready" and ready["user_id"] == "1"

    run(scenario())


def test_bad_auth_frame_closes_with_policy_violation(herald):
    async def scenario():
        async with websockets.connect(ws_url(herald)) as ws:
            await ws.send(json.dumps({"type": "auth", "access_token": "not.a.jwt"}))
            error = await recv_json(ws)
            assert error["type"] == "error" and error["error"] == "invalid_token"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd.code == 1008

    run(scenario())


def test_forbidden_and_invalid_channels_get_error_frames_and_the_socket_stays_open(herald):
    token = herald.token(sub="9", channels=["generation:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "subscribe", "channels": ["orders:1"]}))
            error = await recv_json(ws)
            assert error == {"type": "error", "error": "forbidden_channel", "channel": "orders:1", "message": error["message"]}
            await ws.send(json.dumps({"type": "subscribe", "channels": ["bad name"]}))
            error = await recv_json(ws)
            assert error["error"] == "invalid_request" and error["field"] == "channels"
            await ws.send("not json")
            assert (await recv_json(ws))["error"] == "invalid_request"
            await ws.send(json.dumps({"type": "ping"}))
            assert await recv_json(ws) == {"type": "pong"}

    run(scenario())


def test_subscribe_messages_reach_64_channels_besides_the_personal_one_as_the_upgrade_does(herald):
    # protocol.md: at most 64 distinct channels besides user:{sub} per stream or WebSocket. The
    # upgrade's ?channels= took 64; subscribe messages counted the personal channel and stopped
    # at 63 (breaker8).
    token = herald.token(sub="64", channels=["c:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token, channels="c:0,c:1")) as ws:
            assert (await recv_json(ws))["channels"] == ["user:64", "c:0", "c:1"]
            await ws.send(json.dumps({"type": "subscribe", "channels": [f"c:{i}" for i in range(2, 64)]}))
            subscribed = await recv_json(ws)
            assert subscribed["type"] == "subscribed" and len(subscribed["channels"]) == 62, subscribed
            await ws.send(json.dumps({"type": "subscribe", "channels": ["c:64"]}))
            refused = await recv_json(ws)
            assert refused["error"] == "invalid_request" and refused["field"] == "channels", refused
            assert "at most 64 channels" in refused["message"]
            # The refusal subscribed nothing: an unsubscribe makes room for exactly one.
            await ws.send(json.dumps({"type": "unsubscribe", "channels": ["c:0"]}))
            assert (await recv_json(ws))["type"] == "unsubscribed"
            await ws.send(json.dumps({"type": "subscribe", "channels": ["c:64"]}))
            assert (await recv_json(ws))["channels"] == ["c:64"]

    run(scenario())


def test_a_message_naming_a_member_twice_or_not_json_is_refused_and_nothing_of_it_is_done(herald):
    """Request bodies refuse an object that names a member twice (parsers disagree on which copy
    wins); WebSocket messages pass the same check, before authentication too."""
    token = herald.token(sub="dk", channels=["doc:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald)) as ws:
            # Read by the last copy, this would authenticate; by the first, it is a ping.
            await ws.send('{"type":"ping","type":"auth","access_token":"%s"}' % token)
            error = await recv_json(ws)
            assert error["type"] == "error" and error["error"] == "invalid_request", error
            assert '"type" appears twice' in error["message"], error
            await ws.send('{"type":"auth","access_token":"%s"}' % token)
            assert (await recv_json(ws))["type"] == "ready"
            refused = [
                '{"type":"subscribe","channels":["doc:1"],"channels":["doc:2"]}',
                '{"type":"subscribe","channels":["doc:1"],"last_event_id":null,"last_event_id":"x"}',
                '{"type":"subscribe","channels":["doc:1"],}',
                '{"type":"subscribe","channels":["doc:1"]} {}',
                '{"type":"subscribe","channels":[' + "[" * 70 + "]" * 70 + ']}',
                '{"type":"ping","n":1e400}',
            ]
            for message in refused:
                await ws.send(message)
                error = await recv_json(ws)
                assert error["type"] == "error" and error["error"] == "invalid_request", (message, error)
            # Nothing of them was done: no channel was subscribed.
            await ws.send(json.dumps({"type": "unsubscribe", "channels": ["doc:1", "doc:2"]}))
            assert await recv_json(ws) == {"type": "unsubscribed", "channels": []}
            await ws.send(json.dumps({"type": "ping"}))
            assert await recv_json(ws) == {"type": "pong"}

    run(scenario())


def test_resume_with_last_event_id_gets_exactly_the_missed_messages(herald):
    token = herald.token(sub="r", channels=["doc:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "subscribe", "channels": ["doc:1"]}))
            await recv_json(ws)
            seen = herald.publish("doc:1", 1)
            assert (await recv_json(ws))["id"] == seen["id"]
        missed = [herald.publish("doc:1", n)["id"] for n in (2, 3)]
        herald.publish("doc:other", "not subscribed")
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "subscribe", "channels": ["doc:1"], "last_event_id": seen["id"]}))
            assert (await recv_json(ws))["type"] == "subscribed"
            replayed = [await recv_json(ws), await recv_json(ws)]
            assert [m["id"] for m in replayed] == missed
            assert [m["data"] for m in replayed] == [2, 3]
            live = herald.publish("doc:1", 4)
            assert (await recv_json(ws))["id"] == live["id"]

    run(scenario())


def test_unknown_cursor_gets_reset_and_retained_message_arrives_without_id(herald):
    token = herald.token(sub="z", channels=["gen:*"])
    herald.publish("gen:5", {"state": "running"}, event="status", retain=True)

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "subscribe", "channels": ["gen:5"], "last_event_id": "garbage"}))
            assert (await recv_json(ws))["type"] == "subscribed"
            reset = await recv_json(ws)
            assert reset == {"type": "reset", "channels": ["gen:5"], "id": reset["id"]}, reset
            retained = await recv_json(ws)
            assert retained["retained"] is True and retained["id"] is None
            assert retained["data"] == {"state": "running"}

    run(scenario())


def test_a_reset_carries_the_live_position_so_a_reconnect_is_not_reset_again(herald_factory):
    # protocol.md "Cursors, resume and reset": as SSE's reset event's id (test_resume.py).
    h = herald_factory(HERALD_HISTORY_SIZE=3)
    token = h.token(sub="rs", channels=["generation:*", "order:*"])

    async def scenario():
        async with websockets.connect(ws_url(h, access_token=token, channels="generation:1,order:77")) as ws:
            cursor = (await recv_json(ws))["id"]
        for i in range(5):
            h.publish("generation:1", {"n": i})
        kept = h.publish("order:77", {"kept": True})
        async with websockets.connect(ws_url(h, access_token=token, channels="generation:1,order:77", last_event_id=cursor)) as ws:
            assert (await recv_json(ws))["id"] == cursor
            assert (await recv_json(ws))["id"] == kept["id"]
            reset = await recv_json(ws)
            assert reset == {"type": "reset", "channels": ["generation:1"], "id": kept["id"]}, reset
        # The reset's id as the last id: the next reconnect replays from there, no second reset.
        async with websockets.connect(ws_url(h, access_token=token, channels="generation:1,order:77", last_event_id=reset["id"])) as ws:
            await recv_json(ws)
            sentinel = h.publish("order:77", {"s": 1})
            m = await recv_json(ws)
            assert m["type"] == "event" and m["id"] == sentinel["id"], m

    run(scenario())


@pytest.mark.parametrize("cursor", [None, ""])
def test_subscribe_with_a_null_or_empty_last_event_id_is_a_fresh_subscribe(herald, cursor):
    # As an empty Last-Event-ID on SSE: no cursor, so no replay and no reset; the retained state arrives.
    token = herald.token(sub="nc", channels=["gen:*"])
    herald.publish("gen:9", {"state": "done"}, retain=True)

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "subscribe", "channels": ["gen:9"], "last_event_id": cursor}))
            assert (await recv_json(ws))["type"] == "subscribed"
            retained = await recv_json(ws)
            assert retained["type"] == "event" and retained["retained"] is True, retained
            await ws.send(json.dumps({"type": "subscribe", "channels": ["gen:10"], "last_event_id": 42}))
            error = await recv_json(ws)
            assert (error["type"], error["error"], error["field"]) == ("error", "invalid_request", "last_event_id"), error

    run(scenario())


def test_state_frames_and_acks_are_visible_in_presence(herald):
    token = herald.token(sub="p", sid="tablet", channels=["room:*"])

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token, channels="room:1")) as ws:
            await recv_json(ws)
            h = herald.server_headers()
            live = httpx.get(herald.base + "/v1/users/p/sessions/live", headers=h).json()
            assert live["sessions"][0]["session_id"] == "tablet"
            assert live["sessions"][0]["foreground"] is True
            assert live["sessions"][0]["connections"][0]["transport"] == "websocket"
            await ws.send(json.dumps({"type": "state", "state": "background"}))
            await ws.send(json.dumps({"type": "ack", "id": "abc-1"}))
            await ws.send(json.dumps({"type": "ping"}))
            await recv_until(ws, lambda m: m["type"] == "pong")   # frames are handled in order
            live = httpx.get(herald.base + "/v1/users/p/sessions/live", headers=h).json()
            assert live["sessions"][0]["foreground"] is False
            assert live["sessions"][0]["state"] == "background"
            assert live["sessions"][0]["last_ack_id"] == "abc-1"
            presence = httpx.get(herald.base + "/v1/channels/room:1/presence", headers=h).json()
            assert presence["connections"] == 1
            assert presence["users"][0]["user_id"] == "p"
            assert presence["users"][0]["sessions"][0]["connections"][0]["state"] == "background"
            # Another channel has nobody.
            empty = httpx.get(herald.base + "/v1/channels/room:2/presence", headers=h).json()
            assert empty == {"channel": "room:2", "connections": 0, "users": []}
        # Once closed, the session is no longer live.
        for _ in range(100):
            live = httpx.get(herald.base + "/v1/users/p/sessions/live", headers=herald.server_headers()).json()
            if not live["sessions"]:
                break
            await asyncio.sleep(0.02)
        assert live["sessions"] == []

    run(scenario())


def test_a_refused_ack_names_the_member_and_the_rule_and_acks_nothing(herald):
    """A new user's report (breaker6): every refused `ack` said "ack needs an event id (id) or
    ids" with `field: id`, also for 1001 `ids` or an id of 65 characters, and an `ids` of the
    wrong type beside a good `id` was dropped without a word while the `id` was acked. Now each
    refusal names its member and rule, as `POST /v1/me/acks` does, and nothing of it is acked."""
    token = herald.token(sub="ak", sid="ak-1")
    h = herald.server_headers()

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as ws:
            await recv_json(ws)
            refused = [
                ({"type": "ack"}, "id"),
                ({"type": "ack", "ids": ["a-1"] * 1001}, "ids"),
                ({"type": "ack", "ids": []}, "ids"),
                ({"type": "ack", "ids": ["x" * 65]}, "ids"),
                ({"type": "ack", "ids": "a-1"}, "ids"),
                ({"type": "ack", "id": "a-1", "ids": [5]}, "ids"),
                ({"type": "ack", "id": ""}, "id"),
                ({"type": "ack", "id": 7}, "id"),
            ]
            for message, field in refused:
                await ws.send(json.dumps(message))
                error = await recv_json(ws)
                assert error["type"] == "error" and error["error"] == "invalid_request", (message, error)
                assert error["field"] == field, (message, error)
                if field == "ids" and message.get("ids") != []:
                    assert "ack needs" not in error["message"], (message, error)
            await ws.send(json.dumps({"type": "ping"}))
            assert await recv_json(ws) == {"type": "pong"}   # the socket stays open
            live = httpx.get(herald.base + "/v1/users/ak/sessions/live", headers=h).json()
            assert live["sessions"][0]["last_ack_id"] is None, live
            await ws.send(json.dumps({"type": "ack", "ids": ["a-1"] * 1000}))
            await ws.send(json.dumps({"type": "ping"}))
            await recv_until(ws, lambda m: m["type"] == "pong")
            live = httpx.get(herald.base + "/v1/users/ak/sessions/live", headers=h).json()
            assert live["sessions"][0]["last_ack_id"] == "a-1", live

    run(scenario())


def test_every_valid_ack_is_answered_acked_in_the_order_sent(herald):
    """ADR 0026: an ack is answered once kept (here no push waits, so after a read), each
    message with its own ids, in order; a token without `sid` is answered too (nothing can wait
    for a session-less ack)."""
    with_session = herald.token(sub="ack-order", sid="ack-order-1")
    without = herald.token(sub="ack-order", sid=None)

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=with_session)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "ack", "id": "a-1"}))
            await ws.send(json.dumps({"type": "ack", "id": "a-2", "ids": ["a-3", "a-4"]}))
            await ws.send(json.dumps({"type": "ack", "ids": ["a-5"]}))
            answers = [await recv_until(ws, lambda m: m["type"] != "event") for _ in range(3)]
            assert answers == [{"type": "acked", "ids": ["a-1"]}, {"type": "acked", "ids": ["a-2", "a-3", "a-4"]},
                               {"type": "acked", "ids": ["a-5"]}], answers
        async with websockets.connect(ws_url(herald, access_token=without)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "ack", "id": "b-1"}))
            assert await recv_until(ws, lambda m: m["type"] != "event") == {"type": "acked", "ids": ["b-1"]}

    run(scenario())


def test_put_session_state_changes_every_connection_of_the_session(herald):
    token = herald.token(sub="m", sid="s-1")
    other = herald.token(sub="m", sid="s-2")

    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=token)) as a, \
                websockets.connect(ws_url(herald, access_token=token)) as b, \
                websockets.connect(ws_url(herald, access_token=other)) as c:
            for ws in (a, b, c):
                await recv_json(ws)
            r = httpx.put(herald.base + "/v1/me/sessions/current/state", json={"state": "background"},
                          headers={"Authorization": f"Bearer {token}"})
            assert r.status_code == 200
            assert r.json() == {"session_id": "s-1", "state": "background", "connections": 2}
            live = httpx.get(herald.base + "/v1/users/m/sessions/live", headers=herald.server_headers()).json()
            states = {s["session_id"]: s["foreground"] for s in live["sessions"]}
            assert states == {"s-1": False, "s-2": True}

    run(scenario())


def test_session_state_and_acks_need_a_session_and_valid_bodies(herald):
    no_sid = herald.token(sub="n", sid=None)
    r = httpx.put(herald.base + "/v1/me/sessions/current/state", json={"state": "background"},
                  headers={"Authorization": f"Bearer {no_sid}"})
    assert r.status_code == 403 and r.json()["error"] == "session_required"
    token = herald.token(sub="n", sid="s")
    r = httpx.put(herald.base + "/v1/me/sessions/current/state", json={"state": "asleep"},
                  headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 400 and r.json()["field"] == "state"
    r = httpx.post(herald.base + "/v1/me/acks", json={"ids": []}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 400 and r.json()["field"] == "ids"
    r = httpx.post(herald.base + "/v1/me/acks", json={"ids": ["a-1", "a-2"]}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200 and r.json() == {"acknowledged": 2}
    r = httpx.get(herald.base + "/v1/users/n/sessions/live")
    assert r.status_code == 401


def test_handshake_refusals(herald):
    r = httpx.get(herald.base + "/v1/ws")
    assert r.status_code == 400 and r.json()["error"] == "upgrade_required"
    headers = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
               "Sec-WebSocket-Version": "8"}
    r = httpx.get(herald.base + "/v1/ws", headers=headers)
    assert r.status_code == 426 and r.headers["sec-websocket-version"] == "13"
    headers["Sec-WebSocket-Version"] = "13"
    r = httpx.get(herald.base + "/v1/ws?access_token=bad", headers=headers)
    assert r.status_code == 401 and r.json()["error"] == "invalid_token"
    r = httpx.get(herald.base + "/v1/ws?access_token=" + herald.token(sub="x") + "&channels=secret:1", headers=headers)
    assert r.status_code == 403 and r.json()["channel"] == "secret:1"
    # Not even an upgrade is served on the echo path unless HERALD_WS_ECHO=1.
    assert httpx.get(herald.base + "/v1/ws/echo").status_code == 404


def test_oversized_message_closes_with_1009(herald_factory):
    h = herald_factory(HERALD_WS_MAX_MESSAGE_BYTES=1024)

    async def scenario():
        async with websockets.connect(ws_url(h, access_token=h.token(sub="big"))) as ws:
            await recv_json(ws)
            await ws.send("x" * 2048)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd.code == 1009

    run(scenario())


def test_binary_messages_close_with_1003(herald):
    async def scenario():
        async with websockets.connect(ws_url(herald, access_token=herald.token(sub="bin"))) as ws:
            await recv_json(ws)
            await ws.send(b"\x00\x01")
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd.code == 1003

    run(scenario())


def test_token_expiry_closes_with_4003_unless_refreshed(herald):
    async def scenario():
        # Valid for ~2 more seconds thanks to the 60 s leeway.
        expiring = herald.token(sub="t", sid="s", ttl=-58)
        async with websockets.connect(ws_url(herald, access_token=expiring)) as ws:
            await recv_json(ws)
            error = await recv_until(ws, lambda m: m["type"] == "error", timeout=6)
            assert error["error"] == "token_expired"
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd.code == 4003
        refreshed_token = herald.token(sub="t", sid="s", ttl=-58)
        async with websockets.connect(ws_url(herald, access_token=refreshed_token)) as ws:
            await recv_json(ws)
            await ws.send(json.dumps({"type": "refresh", "access_token": herald.token(sub="t", sid="s", ttl=3600)}))
            refreshed = await recv_json(ws)
            assert refreshed["type"] == "refreshed"
            # Past the old expiry the socket is still open and answering.
            await asyncio.sleep(3.5)
            await ws.send(json.dumps({"type": "ping"}))
            assert (await recv_until(ws, lambda m: m["type"] == "pong"))["type"] == "pong"
            await ws.send(json.dumps({"type": "refresh", "access_token": herald.token(sub="someone-else", sid="s")}))
            assert (await recv_json(ws))["error"] == "invalid_token"

    run(scenario())


def test_slow_websocket_consumer_is_closed_with_1013_while_others_receive(herald_factory):
    h = herald_factory(HERALD_OUTBOUND_MAX_BYTES=262144)
    token = h.token(sub="slow", channels=["feed:*"])
    # A raw client that completes the handshake, subscribes, and then never reads.
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", h.port))
    stalled.sendall((f"GET /v1/ws?access_token={token}&channels=feed:1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    stalled.settimeout(TIMEOUT)
    head = b""
    while b"\r\n\r\n" not in head:
        head += stalled.recv(1)
    assert head.startswith(b"HTTP/1.1 101")

    # Once cut, the server keeps the close frame for its 5 s close grace only: the stalled reader
    # starts draining as soon as /metrics counts the cut, not after the whole scenario (which
    # outlasts the grace on a loaded machine).
    drained = {"data": b""}

    def drain():
        stalled.settimeout(30)
        try:
            while True:
                chunk = stalled.recv(65536)
                if not chunk:
                    break
                drained["data"] += chunk
        except ConnectionResetError:
            pass

    drainer = threading.Thread(target=drain, daemon=True)
    started = []

    def start_draining():
        if not started:
            started.append(True)
            drainer.start()

    def cuts() -> float:
        text = httpx.get(h.base + "/metrics", timeout=10).text
        line = next(l for l in text.splitlines() if l.startswith("herald_slow_consumer_disconnects_total"))
        return float(line.split()[-1])

    async def scenario():
        async with websockets.connect(ws_url(h, access_token=h.token(sub="fast", channels=["feed:*"]), channels="feed:1"),
                                      max_size=None) as ws:
            await recv_json(ws)
            blob = "x" * 4000
            # 8 MB in paced batches: the fast reader keeps up batch by batch, while the stalled one
            # falls behind by more than the kernel's socket buffers (tcp_wmem max 4 MiB) can hide.
            for batch in range(40):
                r = httpx.post(h.base + "/v1/publish/batch", headers=h.server_headers(), timeout=10,
                               json={"messages": [{"channel": "feed:1", "event": "tick", "data": {"n": batch * 50 + i, "blob": blob}}
                                                  for i in range(50)]})
                assert r.status_code == 200
                ids = [m["id"] for m in r.json()["results"]]
                got = []
                for _ in ids:
                    message = await recv_json(ws)
                    assert message["type"] == "event", message
                    got.append(message["id"])
                assert got == ids
                if not started and cuts() >= 1:
                    start_draining()

    run(scenario())
    start_draining()
    drainer.join(35)
    assert not drainer.is_alive(), "the stalled reader's connection was never closed"
    data = drained["data"]
    # The stalled reader was cut: what it drains ends in a close frame 1013.
    assert b'"error":"slow_consumer"' in data
    assert data.endswith(b"\x88\x0f\x03\xf5slow_consumer"), "expected a final close frame 1013 slow_consumer"
    stalled.close()
