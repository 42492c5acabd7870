"""Prometheus metrics the services record as they work (the state-derived gauges —
review queue, embedding backlog, queue depth — are read at scrape time by
memory_project/metrics.py). With PROMETHEUS_MULTIPROC_DIR set (gunicorn, `make up`),
each process writes its samples there and /metrics adds them up."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Seconds; searches and requests sit between 2 ms and a few hundred.
LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUEST_SECONDS = Histogram("memory_http_request_duration_seconds", "HTTP request latency by route",
                            ["route", "method", "status"], buckets=LATENCY_BUCKETS)
SEARCH_SECONDS = Histogram("memory_search_duration_seconds", "Search latency in the service function",
                           ["mode", "vector_plan"], buckets=LATENCY_BUCKETS)
TASKS = Counter("memory_tasks_total", "Celery tasks that ended, by outcome", ["task", "outcome"])
QUERY_VECTORS = Counter("memory_query_vector_cache_total",
                        "Search and context query vectors: taken from the per-process cache or embedded",
                        ["outcome"])
JOBS_FAILED = Counter("memory_conversation_jobs_failed_total", "Conversation jobs that ended failed, by cause",
                      ["cause"])
JOB_RETRIES = Counter("memory_conversation_job_retries_total",
                      "Conversation job transactions run again after a transient database failure, by cause",
                      ["cause"])
REFLECTION_SECONDS = Histogram("memory_reflection_cycle_duration_seconds", "Reflection cycle duration",
                               ["status"], buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))


def observe_search(*, mode: str, vector_plan: str, seconds: float) -> None:
    SEARCH_SECONDS.labels(mode=mode, vector_plan=vector_plan or "none").observe(seconds)


def observe_request(*, route: str, method: str, status: int, seconds: float) -> None:
    REQUEST_SECONDS.labels(route=route, method=method, status=str(status)).observe(seconds)


def observe_task(*, task: str, outcome: str) -> None:
    TASKS.labels(task=task, outcome=outcome).inc()


def observe_reflection_cycle(*, status: str, seconds: float) -> None:
    REFLECTION_SECONDS.labels(status=status).observe(seconds)


def observe_query_vector(*, cached: bool) -> None:
    QUERY_VECTORS.labels(outcome="hit" if cached else "miss").inc()


def observe_job_failed(*, cause: str) -> None:
    JOBS_FAILED.labels(cause=cause).inc()


def observe_job_retry(*, cause: str) -> None:
    JOB_RETRIES.labels(cause=cause).inc()
