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
max_requests = int(os.environ.get("WEB_MAX_REQUESTS", "5000"))
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
    search does not wait for it (`manage.py prepare_models`, run by `make run`, made the files)."""
    if os.environ.get("EMBEDDING_PROVIDER", "local") == "local":
        from memories.embedding import EmbeddingError, prepare_embedder

        try:
            prepare_embedder()
        except EmbeddingError as exc:  # the worker still serves: search answers from keywords and says so
            worker.log.warning("the embedder is not ready: %s", exc)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def post_fork(server, worker):
    """A worker dies with its master: after a SIGKILL of the master (an unclean stop), orphaned
    workers held the port for a minute and the next `make run` failed with "Address already in
    use". Linux only (prctl); elsewhere the workers notice the master is gone on their own."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            server.log.warning("workers will not die with the master (prctl unavailable)")
