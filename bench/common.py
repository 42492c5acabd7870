"""Helpers shared by the benchmarks: Django set-up on a separate database,
percentiles, a table printer, and a gunicorn server for HTTP timings."""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database: str = "memory_bench", provider: str = "hash") -> None:
    """Benchmarks use their own database in the embedded server, never the dev one."""
    os.environ.setdefault("EMBEDDED_DB_NAME", database)
    os.environ.setdefault("EMBEDDING_PROVIDER", provider)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def wait_for_jobs(tenant, timeout: float = 1800.0) -> None:
    """POST /conversations answers 202 and, with no broker, the job runs on the in-process
    background pool: a bench that reads what jobs kept waits until none is left to run."""
    from memories.models import ConversationJob

    deadline = time.monotonic() + timeout
    while ConversationJob.objects.filter(tenant=tenant, status__in=["queued", "running", "retrying"]).exists():
        if time.monotonic() > deadline:
            raise RuntimeError("conversation jobs did not finish")
        time.sleep(0.5)


def wait_for_cycles(tenant, timeout: float = 600.0) -> None:
    """POST /sessions/{id}/end answers 202 and queues the session's reflection cycle on the background pool:
    a bench that reads traits waits until no cycle of the tenant is queued or running (reading at once had
    scored the last session's cycle as if it had found nothing, or found it only on some runs)."""
    from reflection.models import CycleStatus, ReflectionCycle

    deadline = time.monotonic() + timeout
    while ReflectionCycle.objects.filter(tenant=tenant, status__in=[CycleStatus.QUEUED, CycleStatus.RUNNING]).exists():
        if time.monotonic() > deadline:
            raise RuntimeError("reflection cycles did not finish")
        time.sleep(0.2)


def unlimited_api_client(name: str):
    """A fresh tenant, its key's auth header and Django's test client, with the request and pending-job
    limits lifted: a bench that sends weeks of conversations through the API measures what is kept, not
    the abuse limits. Returns (tenant, auth, client)."""
    import uuid

    from django.conf import settings
    from django.test import Client

    from memories.keys import api_key_create
    from memories.models import Tenant

    settings.RATE_LIMIT_KEY_REQUESTS = settings.RATE_LIMIT_TENANT_REQUESTS = 0
    settings.TENANT_MAX_PENDING_JOBS = 10_000
    settings.ALLOWED_HOSTS = ["*"]
    tenant = Tenant.objects.create(name=f"{name}-{uuid.uuid4().hex[:8]}")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_key_create(tenant_name=tenant.name).raw_key}"}
    return tenant, auth, Client()


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return {"p50": statistics.median(ordered), "p95": pick(0.95), "p99": pick(0.99), "n": len(ordered)}


def print_table(title: str, rows: list[dict], columns: list[str]) -> None:
    print(f"\n## {title}\n")
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join(" --- " for _ in columns) + "|")
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column, "")
            cells.append(f"{value:.2f}" if isinstance(value, float) else str(value))
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def gunicorn_server(env: dict[str, str], workers: int | None = 2, *, checkout: Path = ROOT, as_make_run: bool = False,
                    app: str = "memory_project.wsgi:application"):
    """Serve the project with gunicorn on a free loopback port; yields the port.
    Benchmarks measure throughput, not rate limits: one key may send as fast as it can.
    `as_make_run`: `make run`'s own gunicorn.conf.py and logging (WEB_CONCURRENCY=`workers`; None: its own
    count, as shipped);
    `checkout`: another working tree of the project (a baseline commit) served with this venv."""
    port = free_port()
    # Request logs off: nobody reads the pipe, and a full pipe would block the workers.
    full_env = {**os.environ, "RATE_LIMIT_KEY_REQUESTS": "0", "RATE_LIMIT_TENANT_REQUESTS": "0",
                **({"PORT": str(port), **({"WEB_CONCURRENCY": str(workers)} if workers else {})} if as_make_run
                   else {"REQUEST_LOG_LEVEL": "WARNING"}),
                **env}
    options = (["-c", "gunicorn.conf.py"] if as_make_run
               else ["-b", f"127.0.0.1:{port}", "-w", str(workers or 2), "--log-level", "warning", "--timeout", "120"])
    # Its output goes to a file: a pipe nobody reads would fill and block the workers (make run logs a line
    # per request).
    output = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", app, *options],
        cwd=checkout, env=full_env, stdout=subprocess.DEVNULL, stderr=output,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if process.poll() is not None:
                output.seek(0)
                raise RuntimeError(f"gunicorn exited: {output.read().decode()[-2000:]}")
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        output.close()


@contextlib.contextmanager
def baseline_checkout(commit: str):
    """A worktree of `commit` (removed afterwards) for a baseline server or topology to run from: this venv
    linked in as .venv (make up's Procfile commands are relative), a var/ for beat's schedule (the data,
    models and secret key stay this checkout's: the benches pass MEMORY_VAR_DIR)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(folder), commit], check=True,
                   capture_output=True)
    try:
        (folder / ".venv").symlink_to(ROOT / ".venv")
        (folder / "var").mkdir(exist_ok=True)
        yield folder
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False,
                       capture_output=True)
