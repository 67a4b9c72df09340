"""One server per SQLite database file (ADR 0017, docs/operations.md "One server per SQLite
file"): a second `herald serve` or a `herald migrate` on a file a live server holds exits 3 naming
the file and the holder's pid, and touches nothing; `herald jobs retry` runs beside it; a server
killed with `kill -9` leaves no stale lock, so its restart starts at once and sends what the dead
process held (test_push.py's kill -9 bursts check that nothing is lost)."""
import os
import signal
import subprocess

import httpx
import pytest

from conftest import BINARY

pytestmark = pytest.mark.skipif(bool(os.environ.get("HERALD_E2E_POSTGRES")), reason="the lock is SQLite's")


def run(args, env, timeout=30):
    return subprocess.run([BINARY, *args], env={**env, "HERALD_PORT": "0"}, capture_output=True, text=True, timeout=timeout)


def test_a_second_server_on_the_same_file_exits_3_and_a_kill_9_leaves_no_stale_lock(herald_factory):
    h = herald_factory()
    path = h.env["HERALD_DATABASE"]
    second = run(["serve"], h.env)
    assert second.returncode == 3, (second.returncode, second.stderr[-2000:])
    assert f"HERALD_DATABASE '{path}'" in second.stderr, second.stderr
    assert f"held by another herald process (pid {h.proc.pid})" in second.stderr, second.stderr
    assert f"'{path}-lock'" in second.stderr and "listening" not in second.stdout + second.stderr
    # Migrating under a running server is refused the same way; a bulk retry of dead letters is not.
    migrate = run(["migrate"], h.env)
    assert migrate.returncode == 3 and f"pid {h.proc.pid}" in migrate.stderr, migrate
    retry = run(["jobs", "retry"], h.env)
    assert retry.returncode == 0, retry
    assert httpx.get(h.url("/healthz")).status_code == 200

    h.stop(sig=signal.SIGKILL)
    # The kernel dropped the lock with the process: the file stays, and locks again at once.
    assert os.path.exists(path + "-lock")
    h.start()   # healthy within its 20 s: not waiting for a lock
    again = run(["serve"], h.env)
    assert again.returncode == 3 and f"pid {h.proc.pid}" in again.stderr, again
    h.stop()
    migrate = run(["migrate"], h.env)
    assert migrate.returncode == 0, migrate


def test_a_lock_file_that_cannot_be_made_stops_the_start_with_exit_2(tmp_path):
    directory = tmp_path / "locked"
    directory.mkdir()
    (directory / "herald.db").write_bytes(b"")
    os.chmod(directory, 0o500)
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("running as a user that writes any directory (root)")
        env = {"PATH": "/usr/bin:/bin", "HERALD_HOST": "127.0.0.1", "HERALD_DATABASE": str(directory / "herald.db")}
        result = run(["serve"], env)
        assert result.returncode == 2, result
        assert f"'{directory}/herald.db-lock'" in result.stderr and "permission denied" in result.stderr, result.stderr
    finally:
        os.chmod(directory, 0o700)


def _schema(path):
    import sqlite3
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0], db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


def _set_version(path, version):
    import sqlite3
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {int(version)}")


def test_jobs_retry_never_migrates_and_refuses_another_schema_version_with_exit_4(tmp_path):
    """`herald jobs retry` runs beside a server without its lock, so a newer binary must not
    migrate the file under an older server: on a file at another schema version than its own
    (older or newer) it exits 4 naming `herald migrate`, and the file is left exactly as it was."""
    path = str(tmp_path / "herald.db")
    env = {"PATH": "/usr/bin:/bin", "HERALD_DATABASE": path}
    assert run(["migrate"], env).returncode == 0
    current, objects = _schema(path)
    assert current > 1
    ok = run(["jobs", "retry"], env)
    assert ok.returncode == 0 and ok.stdout.strip() == '{"retried":0}', ok

    for version, word in ((current - 1, "older"), (current + 1, "newer")):
        _set_version(path, version)
        refused = run(["jobs", "retry", "--provider", "apns"], env)
        assert refused.returncode == 4, (version, refused.returncode, refused.stderr)
        assert f"HERALD_DATABASE '{path}'" in refused.stderr, refused.stderr
        assert f"schema version {version}, {word} than this build's {current}" in refused.stderr, refused.stderr
        if word == "older":
            assert "herald migrate" in refused.stderr, refused.stderr
        assert refused.stdout == "", refused.stdout
        assert _schema(path) == (version, objects), "jobs retry changed the database"
    # Brought back to this build's version, it runs again.
    _set_version(path, current)
    assert run(["jobs", "retry"], env).returncode == 0
