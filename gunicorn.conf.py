"""gunicorn for `make run` and the Procfile's web process (docs/deploy.md).

Workers: WEB_CONCURRENCY, else two per CPU (bench/load.py measured the choice; see
docs/deploy.md). Each worker is a process with its own database pool
(DB_POOL_MAX_SIZE) and its own copy of the embedding model.
"""

import multiprocessing
import os

bind = os.environ.get("BIND") or f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2)
threads = int(os.environ.get("WEB_THREADS", "1"))
worker_class = "gthread" if threads > 1 else "sync"
timeout = int(os.environ.get("WEB_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# A worker is replaced after this many requests (jitter spreads the restarts): bounds slow leaks.
max_requests = 5000
max_requests_jitter = max_requests // 10
accesslog = None  # memory_project.observability logs one JSON line per request, with its id
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "warning")


def child_exit(server, worker):
    """A dead worker's Prometheus samples stop counting as live gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker):
    """Load the embedding model before the worker takes requests: the first health check or
    search does not wait for it. On a first start (no model files prepared yet under var/models) the
    files are made and loaded on a thread while the worker already serves: search answers from
    keywords until then, health says "degraded" (memories/model_warmup.py)."""
    from memories.embedding import prepare_local_embedder_for_a_worker

    failure = prepare_local_embedder_for_a_worker(background=True)
    if failure:  # the worker still serves: search answers from keywords and says so
        worker.log.warning("the embedder is not ready: %s", failure)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent() -> None:
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_schedule = None  # the in-process scheduler (memories/schedule.py) when there is no broker


def when_ready(server):
    """Without a broker (`make run`) no beat process runs: start the scheduled jobs beside the workers,
    as a child that dies with the master. IN_PROCESS_SCHEDULE=0 turns it off (then run
    `manage.py run_schedule` yourself, or a real beat)."""
    global _schedule
    import subprocess
    import sys

    if os.environ.get("CELERY_BROKER_URL") or os.environ.get("IN_PROCESS_SCHEDULE", "1") == "0":
        return
    linux = sys.platform.startswith("linux")
    _schedule = subprocess.Popen([sys.executable, "manage.py", "run_schedule"], cwd=os.path.dirname(__file__),
                                 preexec_fn=_die_with_parent if linux else None)  # noqa: PLW1509
    server.log.info("scheduled jobs run in process %s", _schedule.pid)


def on_exit(server):
    if _schedule is not None and _schedule.poll() is None:
        _schedule.terminate()


def post_fork(server, worker):
    """A worker dies with its master: after a SIGKILL of the master (an unclean stop), orphaned
    workers held the port for a minute and the next `make run` failed with "Address already in
    use". Linux only (prctl); elsewhere the workers notice the master is gone on their own."""
    import sys

    if sys.platform.startswith("linux"):
        try:
            _die_with_parent()
        except (OSError, AttributeError):
            server.log.warning("workers will not die with the master (prctl unavailable)")
