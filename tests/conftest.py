"""Shared fixtures: two tenants with keys (every test can check isolation),
and an API client that runs on-commit work (embedding) as a real request would."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from memories.keys import api_key_create

# The suite runs in two pytest-xdist worker processes (pyproject's addopts); each has its own test database
# (pytest-django's gw0/gw1 suffix). What the workers share, the machine's Redis databases, RabbitMQ's queues
# and fixed database names in subprocess tests, is made per worker here or kept to one worker by an
# xdist_group mark (see pytest_collection_modifyitems).
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
# Redis databases a worker may flush: worker n uses 14-4n down to 12-4n (three of them; 0 and 1 are the
# developer's own, `make up`'s), so at most three workers.
REDIS_DATABASES_PER_WORKER = 4


def worker_index() -> int:
    """0 outside xdist and for gw0, 1 for gw1, ..."""
    return int(XDIST_WORKER.removeprefix("gw") or 0)


def per_worker(name: str) -> str:
    """A database (or other) name of this worker: `name` outside xdist, `name_gw1` in worker gw1."""
    return f"{name}_{XDIST_WORKER}" if XDIST_WORKER else name


def redis_test_url(slot: int) -> str:
    """A Redis database only this worker uses (slot 0: the redis_url fixture, 1 and 2: brokers); tests
    flush it, so two workers must never share one (outside xdist: 14, 13, 12 as before)."""
    assert 0 <= slot < 3 and worker_index() < 3, (slot, XDIST_WORKER)
    return f"redis://127.0.0.1:6379/{14 - slot - REDIS_DATABASES_PER_WORKER * worker_index()}"


# Files whose tests use RabbitMQ's default queue ("celery" on vhost /, purged at their start) or start
# `make up`'s processes: one worker runs them all, one after another.
SHARED_BROKER_FILES = {"test_production.py", "test_load_smoke.py", "test_replay_load.py"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the marks
def pytest_collection_modifyitems(config, items):
    """`--dist loadgroup` sends each group to one worker: a group per file (a file's module fixtures
    are made once), the files on the machine's shared broker together."""
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("shared-broker" if name in SHARED_BROKER_FILES else name))


class Api:
    """A tenant's API client; on-commit callbacks (embedding) run before it returns."""

    def __init__(self, raw_key: str, capture):
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        self._capture = capture
        self.raw_key = raw_key

    def _call(self, method: str, path: str, data=None, **kwargs):
        with self._capture(execute=True):
            return getattr(self.client, method)(f"/api/v1/{path}", data, format="json", **kwargs)

    def get(self, path: str, data=None):
        with self._capture(execute=True):
            return self.client.get(f"/api/v1/{path}", data)

    def post(self, path: str, data=None):
        return self._call("post", path, data)

    def patch(self, path: str, data=None):
        return self._call("patch", path, data)

    def delete(self, path: str):
        with self._capture(execute=True):
            return self.client.delete(f"/api/v1/{path}")

    def remember(self, user_id: str, text: str, **fields) -> dict:
        response = self.post("memories", {"user_id": user_id, "text": text, **fields})
        assert response.status_code == 201, response.content
        return response.json()["memory"]

    def search(self, user_id: str, query: str, **fields) -> list[dict]:
        response = self.post("memories/search", {"user_id": user_id, "query": query, **fields})
        assert response.status_code == 200, response.content
        return response.json()["results"]


@pytest.fixture
def key_a(db):
    """Tenant A's agent key, allowed to erase users (an app's back end that handles erasure requests);
    tests/test_one_gate.py shows what a key without that permission may erase."""
    return api_key_create(tenant_name="acme", can_erase=True)


@pytest.fixture
def key_b(db):
    """Tenant B's key is a reviewer key: isolation tests try the review queue too."""
    return api_key_create(tenant_name="globex", role="reviewer")


@pytest.fixture
def reviewer_key_a(db, key_a):
    return api_key_create(tenant_name="acme", name="reviewer", role="reviewer")


@pytest.fixture
def reviewer(reviewer_key_a, django_capture_on_commit_callbacks) -> Api:
    """A reviewer key of tenant acme (the review queue), beside the agent key `api`."""
    return Api(reviewer_key_a.raw_key, django_capture_on_commit_callbacks)


@pytest.fixture(scope="session", autouse=True)
def _flush_access_counts_before_the_database_goes(django_db_setup, django_db_blocker):
    """Reads counted in this process are written while the test database still
    exists, not by the at-exit hook after pytest-django has dropped it."""
    yield
    from memories.access import discard_local_access_counts

    discard_local_access_counts()


@pytest.fixture(autouse=True)
def _background_jobs_end_with_their_test():
    """A job a test queued on the in-process background pool finishes before the next test starts
    (torn down after the test's transaction is rolled back, so a job waiting on its locks can end)."""
    yield
    from memories.queue import drain_background

    drain_background(timeout=30)


@pytest.fixture
def tenant_a(key_a):
    return key_a.api_key.tenant


@pytest.fixture
def tenant_b(key_b):
    return key_b.api_key.tenant


@pytest.fixture
def api(key_a, django_capture_on_commit_callbacks) -> Api:
    return Api(key_a.raw_key, django_capture_on_commit_callbacks)


@pytest.fixture
def api_b(key_b, django_capture_on_commit_callbacks) -> Api:
    return Api(key_b.raw_key, django_capture_on_commit_callbacks)


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def fake_openai():
    from tests.fake_openai import FakeOpenAI

    server = FakeOpenAI().start()
    yield server
    server.stop()


def converse(api: Api, messages: list, *, user_id: str = "alice", session_id: str = "s1", **fields) -> dict:
    """Send a conversation (strings are user turns) and return the finished job."""
    turns = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages]
    response = api.post("conversations", {"user_id": user_id, "session_id": session_id, "messages": turns,
                                          **fields})
    assert response.status_code == 202, response.content
    # Inside a test transaction the job runs after the view returns: read it back.
    return api.get(f"jobs/{response.json()['job_id']}").json()


def end_session(api: Api, session_id: str, user_id: str = "alice") -> dict:
    """End a session and wait for its reflection cycle to complete; return the cycle."""
    ended = api.post(f"sessions/{session_id}/end", {"user_id": user_id})
    assert ended.status_code == 202, ended.content
    return wait_for_cycle(api, ended.json()["id"])


def wait_for_cycle(api: Api, cycle_id: int, seconds: float = 90) -> dict:
    """The reflection cycle once it has run (read through the API), asserting it completed within `seconds`."""
    deadline = time.monotonic() + seconds
    while (cycle := api.get(f"reflection-cycles/{cycle_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, cycle
        time.sleep(0.1)
    assert cycle["status"] == "completed", cycle
    return cycle


@pytest.fixture
def redis_url(settings):
    """The machine's Redis (a database of this xdist worker, redis_test_url), emptied before and after."""
    import redis

    url = redis_test_url(0)
    client = redis.Redis.from_url(url)
    client.flushdb()
    settings.REDIS_URL = url
    yield url
    client.flushdb()


@pytest.fixture
def operator(db):
    """Make a staff user in a group (reviewers or auditors), scoped to a tenant,
    or to every tenant (the default for non-superusers), or with no scope at all (scope=None)."""
    from django.contrib.auth.models import Group, User

    from memories.models import OperatorProfile

    def make(username: str, group: str | None = None, tenant=None, superuser: bool = False,
             scope: str | None = "all") -> User:
        if group and not Group.objects.filter(name=group).exists():
            # transactional tests flush the tables a data migration filled: make the groups again, the same way
            import importlib

            from django.apps import apps

            importlib.import_module("memories.migrations.0005_operator_groups").create_groups(apps, None)
        user = User.objects.create_user(username, password="correct horse battery staple", is_staff=True,
                                        is_superuser=superuser)
        if group:
            user.groups.add(Group.objects.get(name=group))
        if tenant is not None:
            OperatorProfile.objects.create(user=user, tenant=tenant)
        elif scope == "all" and not superuser:
            OperatorProfile.objects.create(user=user, all_tenants=True)
        return user

    return make


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from tests.figures import FIGURES

    if FIGURES:
        terminalreporter.section("reliability figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")


@contextlib.contextmanager
def celery_on_broker(url: str, transport_options: dict | None = None):
    """Point this process's Celery app at a real broker (not eager) for the
    block; the broker database is emptied before and after."""
    import redis

    from memory_project.celery import app

    def reset_pools() -> None:
        # Drop references only: kombu keeps pools per URL in a global registry, and
        # Celery's eager path acquires a producer from it too.
        app._pool = None
        app.amqp._producer_pool = None

    redis.Redis.from_url(url).flushdb()
    previous = (app.conf.task_always_eager, app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.task_always_eager, app.conf.broker_url = False, url
    if transport_options is not None:
        app.conf.broker_transport_options = transport_options
    reset_pools()  # pools made earlier point at the old broker URL
    try:
        yield
    finally:
        app.conf.task_always_eager, app.conf.broker_url, app.conf.broker_transport_options = previous
        reset_pools()
        redis.Redis.from_url(url).flushdb()


def start_celery_worker(broker: str, *, capture_output: bool = False, prefork: bool = False,
                        **env) -> subprocess.Popen:
    """A real worker on `broker`, using the test database: solo, or as `make up` runs it, prefork (here
    one child process)."""
    from django.db import connection

    full_env = {**os.environ, "CELERY_BROKER_URL": broker, "EMBEDDED_DB_NAME": connection.settings_dict["NAME"],
                "DJANGO_SETTINGS_MODULE": "memory_project.test_settings", **env}
    output = subprocess.PIPE if capture_output else subprocess.DEVNULL
    pool = ["--pool=prefork", "--concurrency=1"] if prefork else ["--pool=solo"]
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "memory_project", "worker", *pool,
                             "-l", "warning", "--without-heartbeat", "--without-gossip", "--without-mingle"],
                            cwd=Path(__file__).resolve().parent.parent, env=full_env, stdout=output,
                            stderr=subprocess.STDOUT if capture_output else subprocess.DEVNULL)


def stop_process(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def run_async(main, *args):
    """Run an async scenario on a fresh event loop in its own thread: the browser tests' sync
    Playwright leaves a loop running in the main thread, where asyncio.run would refuse."""
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, main, *args).result()
