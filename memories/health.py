"""Service health: each dependency checked, none of them allowed to raise."""

from __future__ import annotations

import math

import psycopg
import redis
from django.conf import settings
from django.db import connection

from memories.embedding import build_embedder, get_embedder, last_known_spec
from memories.working import working_store


def _fault(exc: Exception) -> str:
    """What failed, without the exception's text (it can carry hosts, users or paths)."""
    return f"{type(exc).__name__} (details in the server log)"


def _check_database() -> dict:
    """Within HEALTH_DATABASE_TIMEOUT: on its own connection with a connect and a statement timeout, not
    through the pool, whose wait (DB_POOL_TIMEOUT) and connect (no timeout) made a down or hung
    PostgreSQL answer after 20 s (issue 43); a health check is asked precisely when things are wrong."""
    timeout = settings.HEALTH_DATABASE_TIMEOUT
    params = {k: v for k, v in connection.get_connection_params().items()
              if k not in ("cursor_factory", "context", "prepare_threshold")}
    params["options"] = f"{params.get('options', '')} -c statement_timeout={int(timeout * 1000)}".strip()
    try:
        # libpq counts whole seconds, at least 2; psycopg bounds the whole connect with it
        with psycopg.connect(**params, connect_timeout=max(2, math.ceil(timeout)), autocommit=True) as conn:
            row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return {"database": {"ok": True}, "vector_extension": {"ok": row is not None,
                                                               "version": row[0] if row else None}}
    except Exception as exc:  # noqa: BLE001 - health reports, never raises
        return {"database": {"ok": False, "error": _fault(exc)}, "vector_extension": {"ok": False}}


def _check_embedder(database_ok: bool) -> dict:
    try:  # with the database down, the model last read (asking would wait DB_POOL_TIMEOUT)
        embedder = get_embedder() if database_ok else build_embedder(last_known_spec())
        if getattr(embedder, "preparing", False):  # a first start: the service answers, from keywords
            return {"ok": False, "preparing": True, "provider": settings.EMBEDDING_PROVIDER, "model": embedder.name,
                    "note": "the model is being prepared (first start); search answers from keywords until it is"}
        return {"ok": True, "provider": settings.EMBEDDING_PROVIDER, "model": embedder.name,
                "dimensions": embedder.dimensions}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "provider": settings.EMBEDDING_PROVIDER, "error": _fault(exc)}


def _check_broker() -> dict:
    if not settings.CELERY_BROKER_URL:
        return {"ok": True, "mode": "eager"}
    try:
        from celery import current_app as app  # the project's app (memory_project/celery.py)

        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return {"ok": True, "mode": "broker"}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "mode": "broker", "error": _fault(exc)}


def _check_working_memory() -> dict:
    store = working_store(settings.WORKING_MEMORY_STORE, settings.REDIS_URL)
    if store != "redis":
        return {"ok": True, "enabled": store != "off", "store": store}
    return {**_check_redis(), "store": store}


def _check_redis() -> dict:
    if not settings.REDIS_URL:
        return {"ok": True, "enabled": False, "note": "REDIS_URL unset"}
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return {"ok": True, "enabled": True}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "enabled": True, "error": _fault(exc)}


def service_health() -> dict:
    """The full report (operators and API keys). The public sees only `status`."""
    database = _check_database()
    checks = {**database, "embedder": _check_embedder(database["database"]["ok"]), "broker": _check_broker(),
              "working_memory": _check_working_memory()}
    essential = ("database", "vector_extension", "embedder")  # a model being prepared: degraded, not down
    status = "ok" if all(checks[name]["ok"] or checks[name].get("preparing") for name in essential) \
        else "unavailable"
    if status == "ok" and not all(c["ok"] for c in checks.values()):
        status = "degraded"
    return {"status": status, "checks": checks}
