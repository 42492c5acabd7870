"""Production serving: `make up` (gunicorn web + Celery worker + beat from the Procfile) on
RabbitMQ and on Redis, /metrics, /api/v1/ready, request ids and JSON log lines."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from memories.keys import api_key_create
from memory_project.observability import JsonFormatter, request_id_for
from tests.conftest import redis_test_url

ROOT = Path(__file__).resolve().parent.parent
BROKERS = {"rabbitmq": "amqp://guest:guest@127.0.0.1:5672//", "redis": redis_test_url(2)}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def _read(log) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")


def _purge(url: str) -> None:
    from kombu import Connection

    with Connection(url) as conn:
        try:
            conn.default_channel.queue_purge("celery")
        except conn.channel_errors:  # no queue yet: nothing to purge
            pass


@pytest.mark.slow
@pytest.mark.parametrize("broker", ["rabbitmq", "redis"])
def test_make_up_runs_web_worker_and_beat_on_a_real_broker(transactional_db, broker):
    from django.db import connection

    key = api_key_create(tenant_name="acme").raw_key
    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.test_settings",
           "EMBEDDED_DB_NAME": connection.settings_dict["NAME"], "CELERY_BROKER_URL": BROKERS[broker],
           "REDIS_URL": redis_test_url(1), "WEB_CONCURRENCY": "2", "WORKER_CONCURRENCY": "1",
           "EXPIRY_INTERVAL": "1", "LOG_FORMAT": "json",
           # honcho writes to a file: unbuffered, so a kill at the end can't drop what it printed.
           "PYTHONUNBUFFERED": "1"}
    _purge(BROKERS[broker])  # the machine's broker is shared: start from an empty queue
    # Output to a file, not a pipe: nobody reads a pipe while the test runs, and a full one blocks the processes.
    log = tempfile.TemporaryFile()
    # Not var/prometheus, which `make run` in another xdist worker empties at its start.
    metrics_dir = tempfile.mkdtemp(prefix="memory-up-metrics-")
    up = subprocess.Popen(["make", "up", f"PORT={port}", f"BROKER={broker}", f"METRICS_DIR={metrics_dir}"], cwd=ROOT,
                          env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {key}"}
    try:
        _until(lambda: httpx.get(f"{base}/api/v1/ready", timeout=30).status_code == 200, 180, "web ready")

        answer = httpx.post(f"{base}/api/v1/conversations", headers=headers, timeout=30, json={
            "user_id": "alice", "session_id": "s1", "messages": [
                {"role": "user", "content": "I live in Lisbon and I work as a nurse."}]})
        # Its state as the answer was written: a worker that is already up may have taken it by then.
        assert answer.status_code == 202 and answer.json()["status"] in {"queued", "running", "done"}, answer.text
        job_id = answer.json()["job_id"]
        job = _until(lambda: (lambda j: j if j["status"] == "done" else None)(
            httpx.get(f"{base}/api/v1/jobs/{job_id}", headers=headers, timeout=30).json()), 120, "the worker")
        assert job["counts"].get("ADD", 0) >= 1

        saved = httpx.post(f"{base}/api/v1/memories", headers=headers, timeout=30,
                           json={"user_id": "alice", "text": "A note that lasts two seconds.", "ttl_seconds": 2})
        memory_id = saved.json()["memory"]["id"]
        _until(lambda: httpx.get(f"{base}/api/v1/memories/{memory_id}", headers=headers, timeout=30)
               .json()["status"] == "archived", 120, "beat's archive-expired job")

        scraped = httpx.get(f"{base}/metrics", timeout=30)
        assert scraped.status_code == 200
        text = scraped.text
        assert 'memory_tasks_total{outcome="success",task="memories.tasks.run_conversation_job"}' in text
        assert 'memory_tasks_total{outcome="success",task="memories.tasks.archive_expired"}' in text
        assert 'memory_http_request_duration_seconds_count{method="POST",route="api/v1/conversations",status="202"}' \
            in text
        assert "memory_queue_depth" in text and "memory_review_queue_size" in text
        for process in ("web.1", "worker.1", "beat.1"):
            _until(lambda name=process: f"{name} started" in _read(log), 30, f"honcho's line for {process}")
    finally:
        os.killpg(up.pid, signal.SIGINT)  # Ctrl-C, as a person stops it
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(up.pid, signal.SIGKILL)
            up.wait()
        output = _read(log)
    assert "Traceback" not in output, output[-5000:]
    assert "SIGKILL" not in output, "every process stops on its own, none is killed: " + output[-3000:]


def test_metrics_are_closed_to_the_public_and_open_to_the_token(client, settings, api):
    api.remember("alice", "Alice likes tea.")
    api.search("alice", "tea")
    settings.METRICS_ALLOWED_NETWORKS, settings.METRICS_TOKEN = ["10.0.0.0/8"], "s3cret"
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/plain")
    text = answer.content.decode()
    for name in ("memory_http_request_duration_seconds_bucket", 'memory_search_duration_seconds_count{mode="hybrid"',
                 "memory_embedding_backlog", "memory_review_queue_size", "memory_review_queue_oldest_age_seconds",
                 "memory_queue_depth 0.0", "memory_conversation_jobs",
                 'memory_query_vector_cache_total{outcome="miss"}'):
        assert name in text, name
    settings.METRICS_ALLOWED_NETWORKS, settings.METRICS_TOKEN = ["127.0.0.0/8"], ""
    assert client.get("/metrics").status_code == 200  # the test client's REMOTE_ADDR is 127.0.0.1


def test_a_repeated_query_reuses_its_vector_and_the_metrics_count_it(api):
    """The per-process LRU of query vectors (embedding._QueryCache): a query asked again is not
    embedded again, and memory_query_vector_cache_total says how often that happens."""
    from prometheus_client import REGISTRY

    def count(outcome: str) -> float:
        return REGISTRY.get_sample_value("memory_query_vector_cache_total", {"outcome": outcome}) or 0.0

    api.remember("alice", "Alice keeps bees on her roof.")
    query = f"bees on the roof {uuid.uuid4().hex}"  # never asked before in this process
    hits, misses = count("hit"), count("miss")
    first = api.search("alice", query)
    assert (count("hit"), count("miss")) == (hits, misses + 1)
    again = api.search("alice", query)
    assert (count("hit"), count("miss")) == (hits + 1, misses + 1)
    assert [r["memory"]["id"] for r in first] == [r["memory"]["id"] for r in again]


def test_ready_and_health_answer_separately(client, db):
    ready = client.get("/api/v1/ready")
    assert ready.status_code == 200 and ready.json()["checks"]["migrations"] == {"ok": True, "pending": 0}
    assert ready.json()["checks"]["model"]["ok"] and client.get("/api/v1/health").status_code == 200


@pytest.mark.parametrize("incoming, kept", [
    ("abc-123", True), ("trace.1:span_2", True), ("", False), (None, False), ("x" * 65, False),
    ("bad id", False), ("inject\nline", False), ("<script>", False),
])
def test_request_ids_are_the_callers_when_sane(incoming, kept):
    rid = request_id_for(incoming)
    assert (rid == incoming) is kept and 1 <= len(rid) <= 64


def test_every_response_echoes_its_request_id_and_logs_carry_it(api, caplog):
    with caplog.at_level(logging.INFO, logger="memory.requests"):
        echoed = api.client.get("/api/v1/memories?user_id=alice", HTTP_X_REQUEST_ID="req-42")
    assert echoed["X-Request-ID"] == "req-42"
    fresh = api.client.get("/api/v1/memories?user_id=alice")
    assert len(fresh["X-Request-ID"]) == 32 and fresh["X-Request-ID"] != "req-42"
    record = next(r for r in caplog.records if r.name == "memory.requests" and r.getMessage().startswith("GET"))
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-42" and line["status"] == 200 and line["route"] == "api/v1/memories"
    assert line["level"] == "INFO" and line["duration_ms"] >= 0 and line["key_id"]
