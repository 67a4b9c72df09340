"""Slow readers are cut off without holding anyone else up (docs/protocol.md, "Slow readers")."""
import re
import time

import pytest

from conftest import envelope

# 4 KiB events; the kernel's socket buffers on loopback absorb ~2 MB before Herald's own
# per-connection queue starts to fill, so publish well over that (≈5 MB, in 1 MiB-bounded batches).
N_MESSAGES = 1200
BATCH = 200
PAYLOAD = "p" * 4096


def _stalled_reader(raw, h, token, channels):
    """A raw-socket SSE client with a tiny receive buffer that stops reading after the head."""
    c = raw(h, timeout=5, rcvbuf=2048)
    c.send(f"GET /v1/stream?channels={channels} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    head = c.read_response(head=True)
    assert head.status == 200
    c.read_until(b"event: ready\n")
    c.read_until(b"\n\n")
    return c


def test_slow_consumer_is_cut_and_others_get_everything(herald_factory, raw):
    h = herald_factory(HERALD_OUTBOUND_MAX_BYTES=65536, HERALD_OUTBOUND_MAX_EVENTS=64)
    token = h.token(channels=["room:*"])
    stalled = _stalled_reader(raw, h, token, "room:1")
    fast = h.stream(token, channels="room:1", client="httpx-sse")
    fast.ready()

    started = time.monotonic()
    results = []
    for start in range(0, N_MESSAGES, BATCH):
        batch = [{"channel": "room:1", "event": "chunk", "data": {"i": i, "pad": PAYLOAD}}
                 for i in range(start, start + BATCH)]
        results += h.publish_batch(batch)["results"]
    assert results[0]["delivered"] == 2

    got = fast.take(N_MESSAGES, timeout=15)
    elapsed = time.monotonic() - started
    assert [envelope(e)["data"]["i"] for e in got] == list(range(N_MESSAGES))
    assert [e.id for e in got] == [r["id"] for r in results]
    assert elapsed < 10, f"the healthy subscriber waited {elapsed:.1f}s"

    # the stalled reader finally reads: a prefix of the messages, then `error` slow_consumer
    # and EOF — or a reset connection if the server gave up on it first
    read_after = time.monotonic() - started
    rest = stalled.read_all(timeout=10)
    text = rest.decode("utf-8", errors="replace")
    delivered = len(re.findall(r"^event: chunk$", text, re.M))
    assert delivered < N_MESSAGES, "the stalled reader was never cut off"
    if read_after < 4:
        # read inside the server's close grace (5 s): the final error event must be there
        assert "event: error" in text, text[-300:]
    if "event: error" in text:
        tail = text[text.index("event: error"):]
        assert re.match(r'event: error\ndata: \{"error":"slow_consumer","message":"[^"\n]*"\}\n\n$', tail), tail[:300]
        # the error comes after whole events only: the stream before it parses cleanly
        before = text[:text.index("event: error")]
        assert before.endswith("\n\n")
    # the healthy subscriber keeps receiving afterwards, and the cut one is no longer counted
    r = h.publish("room:1", {"after": True})
    assert fast.next().id == r["id"]
    for _ in range(50):
        if h.publish("room:1", {"probe": True})["delivered"] == 1:
            break
    else:
        raise AssertionError("the cut connection is still counted as a subscriber")


def test_slow_consumer_by_event_count(herald_factory, raw):
    """1 KiB events and the default 1 MiB byte bound: the event bound (10) cuts the reader."""
    h = herald_factory(HERALD_OUTBOUND_MAX_EVENTS=10)
    token = h.token(channels=["room:*"])
    stalled = _stalled_reader(raw, h, token, "room:2")
    fast = h.stream(token, channels="room:2")
    fast.ready()
    n = 4000
    for start in range(0, n, 800):
        h.publish_batch([{"channel": "room:2", "data": {"i": i, "pad": "q" * 1024}} for i in range(start, start + 800)])
    got = fast.take(n, timeout=20)
    assert [envelope(e)["data"]["i"] for e in got] == list(range(n))
    text = (stalled.read_all(timeout=10)).decode("utf-8", errors="replace")
    assert len(re.findall(r"^event: message$", text, re.M)) < n
    if "event: error" in text:
        assert '"error":"slow_consumer"' in text


def test_reconnect_after_cut_resumes_without_gap(herald_factory, raw):
    h = herald_factory(HERALD_OUTBOUND_MAX_BYTES=65536, HERALD_OUTBOUND_MAX_EVENTS=64,
                       HERALD_HISTORY_SIZE=N_MESSAGES)
    token = h.token(channels=["room:*"])
    stalled = _stalled_reader(raw, h, token, "room:3")
    results = []
    for start in range(0, N_MESSAGES, BATCH):
        results += h.publish_batch([{"channel": "room:3", "data": {"i": i, "pad": PAYLOAD}}
                                    for i in range(start, start + BATCH)])["results"]
    text = (stalled.read_all(timeout=10)).decode("utf-8", errors="replace")
    # the last complete event the client saw
    ids = re.findall(r"^id: (\S+)\nevent: message\ndata: [^\n]*\n\n", text, re.M)
    assert len(ids) < N_MESSAGES
    last = ids[-1] if ids else None
    assert last is not None, "no complete event before the cut"
    s = h.stream(token, channels="room:3", last_event_id=last)
    assert s.expect("ready").id == last
    start = [r["id"] for r in results].index(last) + 1
    got = s.take(N_MESSAGES - start, timeout=15)
    assert [e.id for e in got] == [r["id"] for r in results[start:]]


def _replay_cut(herald_factory, raw):
    """Publishes 120 × 60 KB while a client is away, then resumes it through a tiny receive
    buffer that is not read: live messages pile up behind the paced replay past the bound
    (4 events) and the client is cut."""
    import httpx
    from conftest import EventStreamParser

    h = herald_factory(HERALD_OUTBOUND_MAX_EVENTS=4, HERALD_LOOPS=1)
    token = h.token(channels=["a:*"])
    s = h.stream(token, channels="a:1")
    cursor = s.expect("ready").id
    s.close()
    published = []
    for _ in range(8):
        published += [r["id"] for r in h.publish_batch([{"channel": "a:1", "data": {"pad": "x" * 60000}}
                                                        for _ in range(15)])["results"]]
    c = raw(h, rcvbuf=4096)
    c.send(f"GET /v1/stream?channels=a:1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
           f"Last-Event-ID: {cursor}\r\n\r\n".encode())
    c.read_until(b"\r\n\r\n")
    # The replay is paced to the reader, so the stalled client is not cut for the replay
    # itself; live messages queue behind it, and more than the queue's bound of them cut it.
    for _ in range(6):
        published.append(h.publish("a:1", {"live": True})["id"])
    data = c.read_all(timeout=10)
    events = []
    parser = EventStreamParser(events.append, lambda _: None, lambda _: None)
    parser.feed(data)
    names = [e.event for e in events]
    assert "error" in names, "the replay did not overflow the queue; the test needs more data"
    cut = names.index("error")
    assert events[cut].json()["error"] == "slow_consumer"
    return h, token, published, events, cut, parser.last_event_id


def test_nothing_follows_the_error_when_cut_during_replay(herald_factory, raw):
    h, token, published, events, cut, last_id = _replay_cut(herald_factory, raw)
    assert [e.event for e in events[cut + 1:]] == []


def test_cut_during_replay_does_not_skip_dropped_messages(herald_factory, raw):
    """The client must be able to resume from its last id (as EventSource does) without losing
    the dropped messages."""
    h, token, published, events, cut, last_id = _replay_cut(herald_factory, raw)
    received = [e.id for e in events[:cut] if e.event == "message"]
    assert received == published[:len(received)] and len(received) < len(published)
    s2 = h.stream(token, channels="a:1", last_event_id=last_id)
    s2.ready()
    sentinel = h.publish("a:1", {"sentinel": True})
    rest = []
    while True:
        e = s2.next(timeout=10)
        if e.event == "reset":
            return  # the gap is announced: acceptable
        rest.append(e.id)
        if e.id == sentinel["id"]:
            break
    assert received + rest == published + [sentinel["id"]], \
        f"lost {len(published) - len(received) - len(rest) + 1} messages without a reset"


def test_a_replay_larger_than_the_queue_is_paced_not_cut(herald_factory):
    """A resume's replay may be far larger than the outbound bound (here 120 × 60 KB against 4
    events): it is fed at the reader's pace, so a reader that keeps reading gets all of it."""
    h = herald_factory(HERALD_OUTBOUND_MAX_EVENTS=4)
    token = h.token(channels=["a:*"])
    s = h.stream(token, channels="a:1")
    cursor = s.expect("ready").id
    s.close()
    published = []
    for _ in range(8):
        published += [r["id"] for r in h.publish_batch([{"channel": "a:1", "data": {"pad": "x" * 60000}}
                                                        for _ in range(15)])["results"]]
    s2 = h.stream(token, channels="a:1", last_event_id=cursor)
    s2.expect("ready")
    got = s2.take(len(published), timeout=30)
    assert [e.id for e in got] == published
    assert all(e.event == "message" for e in got)


def test_live_messages_behind_a_replay_respect_the_byte_bound(herald_factory, raw):
    """A stalled reader resuming a large replay while large live messages keep coming: once the
    live messages waiting behind the replay pass the byte bound (64 KiB here; 300 × 4 KiB are
    sent), the reader is cut as a slow consumer instead of the server holding ~1.2 MB for it."""
    import httpx

    h = herald_factory(HERALD_OUTBOUND_MAX_BYTES=65536, HERALD_HISTORY_SIZE=2000, HERALD_LOOPS=1)
    token = h.token(channels=["a:*"])
    s = h.stream(token, channels="a:1")
    cursor = s.expect("ready").id
    s.close()
    for _ in range(5):  # a 4 MB replay: more than the kernel buffers hold, so it stays queued
        h.publish_batch([{"channel": "a:1", "data": {"pad": PAYLOAD}} for _ in range(200)])
    c = raw(h, rcvbuf=4096)
    c.send(f"GET /v1/stream?channels=a:1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
           f"Last-Event-ID: {cursor}\r\n\r\n".encode())
    c.read_until(b"\r\n\r\n")
    assert httpx.get(h.url("/healthz"), timeout=10).status_code == 200  # the stream is set up
    for _ in range(3):
        h.publish_batch([{"channel": "a:1", "data": {"live": i, "pad": PAYLOAD}} for i in range(100)])
    h.publish("a:1", {"live": "end"})
    # read until the stream ends (cut) or the last live message arrives (not cut)
    deadline = time.monotonic() + 20
    marker = b'"live":"end"'
    tail = b""
    while not c.eof and time.monotonic() < deadline:
        c._fill(deadline)
        tail, c.buffer = (tail + c.buffer)[-4096:], b""
        if marker in tail:
            break
    assert b"slow_consumer" in tail or (c.eof and marker not in tail), \
        "all 1.2 MB of live messages were held behind the replay; the reader was never cut"
