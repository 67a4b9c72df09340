"""A push is never sent twice because its provider stalled past the job's lease (issue 17, found by a
new user: with HERALD_PUSH_LEASE_SECONDS=10 and a 30 s stall, 128 of 2,000 pushes went twice).

Each push carries a send-by deadline, its lease's end less a margin (1 s for a 4 s lease): the HTTP/2
client drops a push still waiting for a stream then (never sent, retried without counting the
attempt) and cuts one on the wire then, so the worker records either outcome before another claim
may take the job. Observed from outside: the provider double's log (each request with its apns-id
and how it ended) and `GET /v1/jobs`.
"""
import time
import uuid

from test_push import all_jobs, ios, push
from test_push import HTTP  # noqa: F401  (the module's client, closed at the end of the session)

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ProviderDouble"))
from fixture import start_double  # noqa: E402

from conftest import Herald  # noqa: E402

DEVICES = 30
STREAMS = 10          # the double's SETTINGS_MAX_CONCURRENT_STREAMS: the rest wait for a stream
STALL_MS = 8_000      # each device's first request: twice the lease


def test_a_provider_stalling_past_the_lease_sends_no_push_twice(tmp_path):
    double = start_double(tmp_path / "double", "--max-streams", str(STREAMS))
    h = Herald({**double.herald_env(), "HERALD_PUSH_LEASE_SECONDS": "4", "HERALD_PUSH_MAX_CONNECTIONS": "1"}, tmp_path)
    try:
        user = f"u-{uuid.uuid4().hex[:8]}"
        devices = [ios(h, user=user) for _ in range(DEVICES)]
        for d in devices:
            double.set_outcomes("apns", d.token, [{"delay_ms": STALL_MS}])
        jobs = {j["job_id"] for j in push(h, {"kind": "alert", "title": "T", "body": "stalled"}, devices)["jobs"]}
        assert len(jobs) == DEVICES

        # Bounded: every job done and the double quiet (no request open, none for a second).
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            snapshot = {j: job for j, job in all_jobs(h).items() if j in jobs}
            log = double.requests("apns")
            quiet = log and all(e["outcome"] is not None for e in log) and time.time() - max(e["time"] for e in log) > 1
            if quiet and len(snapshot) == DEVICES and all(job["state"] == "done" for job in snapshot.values()):
                break
            time.sleep(0.2)
        log = double.requests("apns")
        snapshot = {j: job for j, job in all_jobs(h).items() if j in jobs}

        accepted, seen = {}, {}
        for e in log:
            apns_id = e["headers"]["apns-id"]
            seen[apns_id] = seen.get(apns_id, 0) + 1
            if e["status"] == 200:
                accepted[apns_id] = accepted.get(apns_id, 0) + 1
        twice = {i: n for i, n in accepted.items() if n > 1}
        assert not twice, f"{len(twice)} of {DEVICES} pushes accepted more than once: {list(twice.items())[:5]}"
        states = {}
        for job in snapshot.values():
            states[job["state"]] = states.get(job["state"], 0) + 1
        assert states == {"done": DEVICES}, states
        ids = {job["payload"]["apns_id"] for job in snapshot.values()}
        assert all(accepted.get(i) == 1 for i in ids), [i for i in ids if accepted.get(i) != 1][:5]
        # Both halves of the deadline were used: streams on the wire were cut at it (the double
        # saw the client give up), and pushes waiting for a stream were dropped unsent (claimed
        # more often than they reached the double).
        assert any(e["outcome"] == "cancelled-by-client" for e in log), [e["outcome"] for e in log][:10]
        unsent = [job for job in snapshot.values() if job["attempts"] > seen.get(job["payload"]["apns_id"], 0)]
        assert unsent, [(job["attempts"], seen.get(job["payload"]["apns_id"])) for job in snapshot.values()][:10]
        assert "send_by_passed" not in " ".join(str(job.get("dead_reason")) for job in snapshot.values())
    finally:
        h.stop(wait=False)
        double.stop()
