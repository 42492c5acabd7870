"""PostgreSQL: which server (DATABASE_URL, else the embedded one under var/), a replica for reads, the
per-process connection pool, prepared statements and the lock-order check."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from memory_project.settings.base import VAR_DIR
from memory_project.settings.env import env_bool, env_choice, env_float, env_int, env_str

# A statement is prepared on a connection once it has run this many times (psycopg's prepare_threshold):
# psycopg's own default, kept when parameters moved to the server (bench/results/2026-11-requests.md, session 13).
PREPARE_THRESHOLD = 5
# Seconds Django keeps a connection when the pool is off (DB_POOL_MAX_SIZE=0).
CONN_MAX_AGE_WITHOUT_POOL = 60


def _database_from_url(url: str) -> dict[str, Any]:
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DATABASE_URL must be a postgres:// URL, got scheme {parsed.scheme!r}")
    query = parse_qs(parsed.query)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": query.get("host", [parsed.hostname or ""])[0],
        "PORT": str(parsed.port or query.get("port", [""])[0]),
    }


_database: dict[str, Any]
if env_str("DATABASE_URL"):
    _database = _database_from_url(env_str("DATABASE_URL"))
else:
    from memory_project.embedded_db import embedded_database_settings  # starts a server: only when asked for

    _database = embedded_database_settings(VAR_DIR, env_str("EMBEDDED_DB_NAME", "memory"))
# Parameters bound by the server and statements prepared once a connection has run them PREPARE_THRESHOLD
# times: the search statement's plan is then kept per connection instead of made on every request (1 ms of a
# 3.5 ms statement; a search 5.1 -> 3.5 ms, a context 8.9 -> 7.2 ms at 600 memories,
# bench/results/2026-11-requests.md). The HNSW settings a search sets (hnsw.ef_search, iterative_scan) are
# read when the index is scanned, not when planned, so a kept plan honours them. Off
# (DB_PREPARED_STATEMENTS=0) behind a pooler that cannot keep prepared statements (PgBouncer in transaction
# mode before 1.21): parameters are then bound client-side.
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# How PostgreSQL plans the prepared statements (plan_cache_mode, sent as a startup option); empty sends nothing
# and PostgreSQL's default ("auto") keeps a generic plan once it costs no more than planning each run. Search
# names the model as a literal (vocabulary.sql_model_is) so that plan can use the per-model indexes; before,
# it read the heap at 1,000 memories a user, and "force_custom_plan" (each run planned, 1 ms at 600
# memories) was the way round it (bench/results/2026-11-core.md, round four).
DB_PLAN_CACHE_MODE = env_choice("DB_PLAN_CACHE_MODE", "", ("", "auto", "force_custom_plan", "force_generic_plan"))
_database["OPTIONS"] = ({"server_side_binding": True, "prepare_threshold": PREPARE_THRESHOLD,
                         **({"options": f"-c plan_cache_mode={DB_PLAN_CACHE_MODE}"} if DB_PLAN_CACHE_MODE else {})}
                        if DB_PREPARED_STATEMENTS else {"prepare_threshold": None})
# Connections are bounded per process whatever serves the app: a pool of at most DB_POOL_MAX_SIZE,
# shared by the process's threads; a burst waits up to DB_POOL_TIMEOUT seconds for a connection
# (then 503 with Retry-After), never "too many clients". Size: processes x DB_POOL_MAX_SIZE below
# the server's max_connections (docs/deploy.md). DB_POOL_MAX_SIZE=0 turns the pool off.
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 8)
# How long /api/v1/health waits for PostgreSQL (its own connection: connect and statement timeouts) before
# it reports the database down; libpq counts the connect in whole seconds, at least 2.
HEALTH_DATABASE_TIMEOUT = 2.0
if DB_POOL_MAX_SIZE > 0:
    _database["OPTIONS"]["pool"] = {"min_size": 0, "max_size": DB_POOL_MAX_SIZE,
                                    "timeout": env_float("DB_POOL_TIMEOUT", 10.0)}
    _database["CONN_MAX_AGE"] = 0  # the pool keeps connections; Django must not hold them per thread
else:
    _database["CONN_MAX_AGE"] = CONN_MAX_AGE_WITHOUT_POOL
    _database["CONN_HEALTH_CHECKS"] = True
# Checks that every writer takes its users' write locks before it writes or locks a row (issue 51: jobs of
# the same people deadlocked): a late lock raises writing.LockOrderViolation, and the keyword-statistics
# trigger refuses rows of a user whose lock was not taken first (the memory.write_lock_check option). On in
# the test suite; a development aid, it costs a pg_locks read per lock.
WRITE_LOCK_ORDER_CHECK = env_bool("WRITE_LOCK_ORDER_CHECK", False)
if WRITE_LOCK_ORDER_CHECK:
    _database["OPTIONS"]["options"] = " ".join(
        filter(None, [_database["OPTIONS"].get("options", ""), "-c memory.write_lock_check=on"]))
DATABASES = {"default": _database}
# A read replica (PostgreSQL streaming replication of the default database): searches and context read
# there (memories/replicas.py, memory_project/routers.py); writes and everything else use the primary.
if env_str("DATABASE_REPLICA_URL"):
    DATABASES["replica"] = {**_database_from_url(env_str("DATABASE_REPLICA_URL")),
                            "OPTIONS": dict(_database["OPTIONS"]), "CONN_MAX_AGE": _database["CONN_MAX_AGE"],
                            "TEST": {"MIRROR": "default"}}
DATABASE_ROUTERS = ["memory_project.routers.ReadReplicaRouter"]
