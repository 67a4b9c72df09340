"""Ordering under concurrency: several event loops, concurrent publishers, subscribers joining
and resuming while messages flow (docs/architecture.md, "Publishing and fan-out", "Resume")."""
import threading

import httpx

from conftest import SERVER_KEY, envelope

CHANNELS = ["room:a", "room:b", "room:c"]


def _publisher(herald, channel, count, receipts, errors, barrier):
    try:
        with httpx.Client(headers={"Authorization": f"Bearer {SERVER_KEY}"}, timeout=10) as client:
            barrier.wait(timeout=10)
            for i in range(count):
                r = client.post(herald.url("/v1/publish"), json={"channel": channel, "data": {"c": channel, "i": i}})
                assert r.status_code == 200, r.text
                receipts.append(r.json())
    except Exception as exc:  # surfaced by the test
        errors.append(exc)


def _run_publishers(h, count, before_start=None):
    receipts, errors = [], []
    barrier = threading.Barrier(len(CHANNELS) + 1)
    threads = [threading.Thread(target=_publisher, args=(h, c, count, receipts, errors, barrier)) for c in CHANNELS]
    for t in threads:
        t.start()
    barrier.wait(timeout=10)
    if before_start:
        before_start()
    return threads, receipts, errors


def _check_order(events, channels):
    """Cursor sequences strictly increase; every channel's offsets are gap-free from the first."""
    seqs = [int(e.id.split("-")[1]) for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "stream ids out of order or repeated"
    for channel in channels:
        offsets = [envelope(e)["offset"] for e in events if envelope(e)["channel"] == channel]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))) if offsets else True, (channel, offsets)


def test_concurrent_publishers_many_subscribers_on_several_loops(herald_factory):
    h = herald_factory(HERALD_LOOPS=4)
    token = h.token(channels=["room:*"])
    subs = [h.stream(token, channels=",".join(CHANNELS[: 1 + i % 3])) for i in range(8)]
    for s in subs:
        s.ready()
    count = 60
    threads, receipts, errors = _run_publishers(h, count)
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert len(receipts) == count * len(CHANNELS)
    for i, s in enumerate(subs):
        channels = CHANNELS[: 1 + i % 3]
        expected = sorted((r for r in receipts if r["channel"] in channels), key=lambda r: int(r["id"].split("-")[1]))
        got = s.take(len(expected), timeout=15)
        assert [e.id for e in got] == [r["id"] for r in expected], f"subscriber {i} order differs"
        _check_order(got, channels)
        for channel in channels:
            assert [envelope(e)["offset"] for e in got if envelope(e)["channel"] == channel] == list(range(1, count + 1))


def test_resume_while_publishing_has_no_gap_and_no_duplicate(herald_factory):
    """A client drops and resumes repeatedly while three publishers run: the union of what it
    received is every message of its channels exactly once, in publish order."""
    h = herald_factory(HERALD_LOOPS=4, HERALD_HISTORY_SIZE=1000)
    token = h.token(channels=["room:*"])
    count = 80
    s = h.stream(token, channels=",".join(CHANNELS))
    s.ready()
    threads, receipts, errors = _run_publishers(h, count)
    received = []
    for _ in range(6):
        # take a few, drop the connection mid-flow, resume from the last one handled
        received += s.take(15, timeout=10)   # 6 × 15 < the 240 published: never runs dry
        s.close()
        s = h.stream(token, channels=",".join(CHANNELS), last_event_id=received[-1].id)
        assert s.expect("ready").id == received[-1].id
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    total = count * len(CHANNELS)
    rest = total - len(received)
    received += s.take(rest, timeout=15)
    # nothing further: a sentinel is the next event
    sentinel = h.publish("room:a", {"sentinel": True})
    assert s.next().id == sentinel["id"]
    expected = sorted(receipts, key=lambda r: int(r["id"].split("-")[1]))
    assert [e.id for e in received] == [r["id"] for r in expected]
    assert all(e.event != "reset" for e in received)
    _check_order(received, CHANNELS)


def test_subscribers_joining_during_publishing_see_a_gap_free_suffix(herald_factory):
    h = herald_factory(HERALD_LOOPS=4)
    token = h.token(channels=["room:*"])
    count = 60
    joined = []

    def join_some():
        for _ in range(5):
            s = h.stream(token, channels=",".join(CHANNELS))
            s.ready()
            joined.append(s)

    threads, receipts, errors = _run_publishers(h, count, before_start=join_some)
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    final = h.publish("room:a", {"final": True})
    for s in joined:
        got = []
        while True:
            e = s.next(timeout=10)
            got.append(e)
            if e.id == final["id"]:
                break
        _check_order(got, CHANNELS)
        # from the moment it joined, each channel is complete up to the end
        per_channel_last = {c: max((envelope(e)["offset"] for e in got if envelope(e)["channel"] == c), default=None)
                            for c in CHANNELS}
        assert per_channel_last["room:a"] == count + 1
        for c in ("room:b", "room:c"):
            assert per_channel_last[c] in (None, count)
