"""Resume with a cursor and `reset` when a gap cannot be filled (docs/protocol.md, "Cursors,
resume and reset")."""
import os
import time

import pytest

from conftest import envelope, summary

GRANTS = ["generation:*", "order:77"]
CHANNELS = "generation:1,order:77"


def _open(herald, **kw):
    return herald.stream(herald.token(channels=GRANTS), channels=CHANNELS, **kw)


@pytest.mark.parametrize("via_query", [False, True], ids=["header", "query"])
def test_resume_replays_exactly_the_missed_messages_then_live(herald, via_query):
    s = _open(herald)
    s.ready()
    herald.publish("generation:1", {"n": 1})
    herald.publish("order:77", {"n": 2})
    first = s.take(2)
    cursor = first[-1].id
    assert cursor == s.last_event_id
    s.close()

    missed = [("generation:1", {"n": 3}), ("order:77", {"n": 4}), ("generation:2", {"other": 1}),
              ("user:alice", {"n": 5}), ("generation:1", {"n": 6}), ("order:77", {"n": 7})]
    receipts = [herald.publish(c, d) for c, d in missed]
    expected = [(c, d) for c, d in missed if c != "generation:2"]
    expected_ids = [r["id"] for (c, _), r in zip(missed, receipts) if c != "generation:2"]

    s2 = _open(herald, last_event_id=cursor, via_query=via_query)
    ready = s2.expect("ready")
    assert ready.id == cursor, "ready carries the cursor the client resumed from"
    replay = s2.take(len(expected))
    assert summary(replay) == expected
    assert [e.id for e in replay] == expected_ids
    assert all(e.has_id for e in replay)
    assert [envelope(e)["offset"] for e in replay] == [2, 2, 1, 3, 3]

    # then live, with nothing repeated in between
    live = herald.publish("generation:1", {"n": 8})
    m = s2.next()
    assert m.id == live["id"] and envelope(m)["data"] == {"n": 8}
    assert s2.last_event_id == live["id"]


def test_resume_from_ready_id_when_no_message_arrived(herald):
    s = _open(herald)
    ready = s.expect("ready")
    s.close()
    r1 = herald.publish("order:77", {"a": 1})
    r2 = herald.publish("generation:1", {"b": 2})

    s2 = _open(herald, last_event_id=ready.id)
    assert s2.expect("ready").id == ready.id
    got = s2.take(2)
    assert [e.id for e in got] == [r1["id"], r2["id"]]
    live = herald.publish("order:77", {"c": 3})
    assert s2.next().id == live["id"]


def test_resume_with_nothing_missed(herald):
    s = _open(herald)
    s.ready()
    r = herald.publish("generation:1", {"a": 1})
    cursor = s.next().id
    assert cursor == r["id"]
    s.close()
    s2 = _open(herald, last_event_id=cursor)
    assert s2.expect("ready").id == cursor
    live = herald.publish("generation:1", {"b": 2})
    m = s2.next()
    assert m.id == live["id"], f"expected only the live message, got {m}"


def test_resume_skips_retained_snapshot_when_no_gap(herald):
    """With a cursor and a complete history the client gets the replay, not the snapshot."""
    s = _open(herald)
    s.ready()
    herald.publish("generation:1", {"state": "a"}, retain=True)
    cursor = s.next().id
    s.close()
    r = herald.publish("generation:1", {"state": "b"}, retain=True)
    s2 = _open(herald, last_event_id=cursor)
    s2.ready()
    m = s2.next()
    assert m.id == r["id"] and m.has_id and envelope(m)["data"] == {"state": "b"}
    sentinel = herald.publish("order:77", {"s": 1})
    assert s2.next().id == sentinel["id"]


def test_resume_chain_across_several_reconnects(herald):
    seen = []
    cursor = None
    n = 0
    for _ in range(4):
        s = _open(herald, last_event_id=cursor)
        s.ready()
        for channel in ("generation:1", "order:77", "user:alice"):
            n += 1
            herald.publish(channel, {"n": n})
        taken = s.take(3)
        seen += [envelope(e)["data"]["n"] for e in taken]
        # resume from the last event handled: what was received but not handled, and what is
        # published while disconnected, arrive on the next connection
        cursor = taken[-1].id
        s.close()
        n += 1
        herald.publish("order:77", {"n": n})
    s = _open(herald, last_event_id=cursor)
    s.ready()
    while len(seen) < n:
        seen.append(envelope(s.next())["data"]["n"])
    # replayed (published while away) plus live ones: every number once, in order
    assert seen == list(range(1, n + 1))


def test_ring_overflow_resets_only_that_channel(herald_factory):
    h = herald_factory(HERALD_HISTORY_SIZE=3)
    s = _open(h)
    s.ready()
    h.publish("generation:1", {"n": 0})
    cursor = s.next().id
    s.close()

    for i in range(1, 6):
        h.publish("generation:1", {"n": i})
    kept = h.publish("order:77", {"kept": True})

    s2 = _open(h, last_event_id=cursor)
    assert s2.expect("ready").id == cursor
    # what can be replayed comes first, then one reset for the channel with the gap
    m = s2.next()
    assert m.id == kept["id"] and envelope(m) == {"channel": "order:77", "offset": 1, "data": {"kept": True}}
    reset = s2.next()
    assert reset.event == "reset" and reset.json() == {"channels": ["generation:1"]}
    # the reset carries the live position, so the client's last id moves past the gap
    assert reset.has_id and reset.id == kept["id"]
    live = h.publish("generation:1", {"n": 6})
    m = s2.next()
    assert m.id == live["id"] and envelope(m)["offset"] == 7
    s2.close()

    # a second reconnect from there does not reset again
    s3 = _open(h, last_event_id=s2.last_event_id)
    s3.ready()
    sentinel = h.publish("order:77", {"s": 1})
    m = s3.next()
    assert m.event != "reset", f"second reconnect reset again: {m}"
    assert m.id == sentinel["id"]


def test_reconnecting_right_after_a_reset_does_not_reset_again(herald_factory):
    """Right after a partial reset (before any live message) the client's last id is the reset's,
    past the gap, so reconnecting at once does not reset again."""
    h = herald_factory(HERALD_HISTORY_SIZE=2)
    s = _open(h)
    s.ready()
    h.publish("order:77", {"n": 0})
    cursor = s.next().id
    s.close()
    for i in range(3):
        h.publish("order:77", {"n": i + 1})
    other = h.publish("generation:1", {"g": 1})

    s2 = _open(h, last_event_id=cursor)
    s2.ready()
    assert s2.next().id == other["id"]
    reset = s2.expect("reset")
    assert reset.json() == {"channels": ["order:77"]} and reset.id == other["id"]
    s2.close()

    s3 = _open(h, last_event_id=s2.last_event_id)
    s3.ready()
    sentinel = h.publish("generation:1", {"s": 1})
    replay = s3.next()
    assert replay.event != "reset", replay
    assert replay.id == sentinel["id"]


def test_reset_after_restart_for_all_channels(herald):
    if os.environ.get("HERALD_E2E_BROKER"):
        pytest.skip("on a Redis broker history outlives a node's restart (SC-3): the resume is replayed, not reset")
    s = _open(herald)
    s.ready()
    herald.publish("generation:1", {"n": 1})
    cursor = s.next().id
    s.close()
    herald.restart()

    s2 = _open(herald, last_event_id=cursor)
    ready = s2.expect("ready")
    assert ready.id.split("-")[0] != cursor.split("-")[0], "a new start has a new epoch"
    reset = s2.expect("reset")
    assert sorted(reset.json()["channels"]) == sorted(["user:alice", "generation:1", "order:77"])
    r = herald.publish("generation:1", {"n": 2})
    m = s2.next()
    assert m.id == r["id"] and envelope(m)["offset"] == 1


@pytest.mark.parametrize("bad", ["garbage", "12345678-", "1234567-5", "ABCDEF12-5", "-", "0xdeadbeef-1",
                                 "deadbeef-1-2", "deadbeef-99999999999999999999999", "deadbeef--1",
                                 "deadbeef-18446744073709551616"])
def test_malformed_last_event_id_gives_ready_then_reset(shared_herald, bad):
    herald = shared_herald  # the same state each time: a retained message, nothing else
    herald.publish("generation:1", {"state": "x"}, retain=True)
    s = _open(herald, last_event_id=bad)
    ready = s.expect("ready")
    assert ready.id != bad
    reset = s.expect("reset")
    assert sorted(reset.json()["channels"]) == sorted(["user:alice", "generation:1", "order:77"])
    # a reset channel's retained message follows the reset
    snap = s.next()
    assert snap.has_id is False and envelope(snap)["data"] == {"state": "x"}
    live = herald.publish("order:77", {"live": 1})
    assert s.next().id == live["id"]


def test_cursor_from_the_future_resets(herald):
    s = _open(herald)
    ready = s.expect("ready")
    s.close()
    epoch, seq = ready.id.split("-")
    future = f"{epoch}-{int(seq) + 1000}"
    s2 = _open(herald, last_event_id=future)
    s2.ready()
    assert sorted(s2.expect("reset").json()["channels"]) == sorted(["user:alice", "generation:1", "order:77"])


def test_cursor_from_another_epoch_resets(herald):
    s = _open(herald)
    ready = s.expect("ready")
    epoch = ready.id.split("-")[0]
    other = format((int(epoch, 16) + 1) % 2**32, "08x")
    s2 = _open(herald, last_event_id=f"{other}-0")
    s2.ready()
    assert s2.expect("reset").json()["channels"]


# History older than HERALD_HISTORY_TTL_SECONDS gives `reset`: RealtimeMemoryTests/MemoryBrokerTests
# (historyOlderThanTheTTLGivesReset, on a manual clock).


def test_within_ttl_no_reset(herald_factory):
    """Control for the TTL test: a resume inside the TTL replays normally."""
    h = herald_factory(HERALD_HISTORY_TTL_SECONDS=60)
    s = _open(h)
    s.ready()
    h.publish("generation:1", {"n": 1})
    cursor = s.next().id
    s.close()
    r = h.publish("generation:1", {"n": 2})
    s2 = _open(h, last_event_id=cursor)
    s2.ready()
    assert s2.next().id == r["id"]


def _sweep_forgot_channel(h, cursor, deadline):
    """Waits until the broker has forgotten the idle channel whose messages expired, observed
    from outside: a resume from `cursor` on a never-used channel then gets a reset."""
    probe = 0
    while time.monotonic() < deadline:
        probe += 1
        s = h.stream(h.token(sub="probe", channels=["probe:*"]), channels=f"probe:{probe}", last_event_id=cursor)
        s.ready()
        sentinel = h.publish(f"probe:{probe}", {"p": probe})
        e = s.next()
        s.close()
        if e.event == "reset":
            return True
        assert e.id == sentinel["id"]
        time.sleep(0.5)
    return False


def test_forgotten_then_recreated_channel_still_resets(herald_factory):
    h = herald_factory(HERALD_HISTORY_TTL_SECONDS=1)
    token = h.token(channels=["generation:*"])
    s = h.stream(token, channels="generation:1")
    s.ready()
    h.publish("generation:1", {"n": 1})
    cursor = s.next().id
    s.close()
    h.publish("generation:1", {"n": 2})          # missed by the client; expires after 1 s
    assert _sweep_forgot_channel(h, cursor, time.monotonic() + 12), "broker never swept the channel"
    h.publish("generation:1", {"n": 3})          # re-creates the channel with a fresh ring

    s2 = h.stream(token, channels="generation:1", last_event_id=cursor)
    s2.ready()
    first = s2.next()
    assert first.event == "reset" and "generation:1" in first.json()["channels"], \
        f"message n=2 was lost without a reset of generation:1; got {first}"


def test_empty_last_event_id_is_a_fresh_stream(herald):
    herald.publish("generation:1", {"state": "x"}, retain=True)
    s = _open(herald, last_event_id="")
    s.ready()
    snap = s.next()
    assert snap.event != "reset" and snap.has_id is False, snap
    assert envelope(snap)["data"] == {"state": "x"}


def test_header_and_query_cursor_agree(herald):
    """`?last_event_id=` is what browsers without headers use; it resumes the same way."""
    s = _open(herald)
    ready = s.expect("ready")
    s.close()
    r = herald.publish("order:77", {"n": 1})
    s2 = _open(herald, last_event_id=ready.id, via_query=True)
    assert s2.expect("ready").id == ready.id
    assert s2.next().id == r["id"]


def test_with_header_and_query_cursors_the_header_counts(herald):
    """EventSource reconnects to the URL it was made with (its `?last_event_id=` from then) and
    sends its newer last id as `Last-Event-ID`: the header counts, so nothing is replayed twice."""
    s = _open(herald)
    ready = s.expect("ready")
    seen = herald.publish("order:77", {"n": 1})
    assert s.next().id == seen["id"]
    s.close()
    missed = herald.publish("order:77", {"n": 2})
    s2 = _open(herald, params={"last_event_id": ready.id}, headers={"Last-Event-ID": seen["id"]})
    assert s2.expect("ready").id == seen["id"]
    assert s2.next().id == missed["id"]


def test_non_canonical_cursor_is_malformed(herald):
    """A cursor Herald did not issue (here the right epoch and sequence with a leading zero)
    resets; the canonical spelling resumes."""
    s = _open(herald)
    ready = s.expect("ready")
    herald.publish("order:77", {"n": 1})
    s.next()
    s.close()
    epoch, seq = ready.id.split("-")
    bad = _open(herald, last_event_id=f"{epoch}-0{seq}")
    bad.ready()
    assert bad.next().event == "reset"
    good = _open(herald, last_event_id=ready.id)
    good.ready()
    m = good.next()
    assert m.event == "update" and envelope(m)["data"] == {"n": 1}


def test_partial_reset_order_replay_then_reset_then_retained(herald_factory):
    """docs/protocol.md: after `ready`, the replay of the channels that could be replayed, then
    one `reset` (carrying the live position as its id), then the reset channel's retained
    message (no id), then live messages."""
    h = herald_factory(HERALD_HISTORY_SIZE=2)
    s = _open(h)
    s.ready()
    h.publish("generation:1", {"n": 0})
    cursor = s.next().id
    s.close()
    h.publish("generation:1", {"state": "old"}, retain=True)
    for i in range(3):
        h.publish("generation:1", {"n": i + 1})
    latest = h.publish("generation:1", {"state": "latest"}, retain=True)
    kept = h.publish("order:77", {"kept": 1})

    s2 = _open(h, last_event_id=cursor)
    assert s2.expect("ready").id == cursor
    replayed = s2.next()
    assert replayed.id == kept["id"]
    reset = s2.expect("reset")
    assert reset.json() == {"channels": ["generation:1"]} and reset.has_id and reset.id == kept["id"]
    snap = s2.next()
    assert snap.has_id is False and envelope(snap) == {"channel": "generation:1", "offset": latest["offset"],
                                                      "data": {"state": "latest"}}
    assert s2.last_event_id == kept["id"]
    live = h.publish("generation:1", {"n": "live"})
    assert s2.next().id == live["id"]
