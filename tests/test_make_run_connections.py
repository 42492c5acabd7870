"""Connections stay bounded under the README's `make run`: 1,000 light
requests from one key, 16 at a time, never run the database out of
connections (the thread-per-request server used to: 293 of them were 503)."""

import os
import signal
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

import pytest

from tests.figures import record

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str, headers: dict) -> int:
    try:
        with urlopen(Request(url, headers=headers), timeout=60) as response:
            return response.status
    except HTTPError as error:
        return error.code


@pytest.mark.slow
def test_a_burst_through_make_run_gets_no_server_error():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "EMBEDDED_DB_NAME")}
    port = _free_port()
    # Its metrics away from var/prometheus, which `make up` in another xdist worker empties at its start.
    metrics_dir = tempfile.mkdtemp(prefix="memory-run-metrics-")
    server = subprocess.Popen(["make", "run", f"PORT={port}", f"METRICS_DIR={metrics_dir}"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}/api/v1"
        deadline = time.monotonic() + 120
        while True:
            try:
                if _status(f"{base}/health", {}) == 200:
                    break
            except (URLError, OSError):
                pass
            assert time.monotonic() < deadline, "make run did not come up"
            time.sleep(0.5)
        # After the server is up: `make run` has migrated by then.
        key = subprocess.run([str(ROOT / ".venv/bin/python"), "manage.py", "api_keys", "create", "burst-test"],
                             cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120).stdout.strip()
        headers = {"Authorization": f"Bearer {key}"}

        def one(i: int) -> int:
            return _status(f"{base}/memories?user_id=u{i % 50}", headers)

        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(one, range(1000)))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    server_errors = sum(code >= 500 for code in codes)
    record("make run burst: requests / 5xx / 429", f"{len(codes)} / {server_errors} / {codes.count(429)}")
    assert server_errors == 0 and set(codes) <= {200, 429}


@pytest.mark.slow
def test_gunicorns_workers_die_with_their_master():
    """After a SIGKILL of the master (an unclean stop) no orphaned worker keeps the port: the next
    `make run` can bind it (they held it for 60-90 s before gunicorn.conf.py's post_fork)."""
    import socket

    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL")}
    env.update({"EMBEDDING_PROVIDER": "hash", "WEB_CONCURRENCY": "2"})
    port = _free_port()
    master = subprocess.Popen([str(ROOT / ".venv/bin/python"), "-m", "gunicorn", "memory_project.wsgi:application",
                               "-c", "gunicorn.conf.py", "-b", f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    deadline = time.monotonic() + 60
    while not listening():
        assert time.monotonic() < deadline and master.poll() is None, "gunicorn did not come up"
        time.sleep(0.2)
    time.sleep(2)  # the workers are forked and initialised

    def scheduler() -> list[str]:  # without a broker, gunicorn runs the scheduled jobs beside the workers
        found = subprocess.run(["pgrep", "-P", str(master.pid), "-f", "run_schedule"], capture_output=True, text=True)
        return found.stdout.split()

    (scheduler_pid,) = scheduler()
    master.send_signal(signal.SIGKILL)
    master.wait(10)
    deadline = time.monotonic() + 15
    while listening() or os.path.exists(f"/proc/{scheduler_pid}/cmdline") and _alive(int(scheduler_pid)):
        assert time.monotonic() < deadline, "orphaned workers still hold the port, or the scheduler lives on"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie waiting for its (gone) parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
