"""Background work: Celery (eager, in-process, unless a broker is configured), the in-process pool that
stands in for workers without one, the sweeps that reclaim lost work, the beat schedule, and Redis."""

from __future__ import annotations

from memories.clock import ClockTime, parse_job_schedules
from memory_project.settings.env import env_float, env_int, env_str

CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None  # the service never reads a task's result
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery (5.6+) closes a prefork worker's whole connection pool after every task unless this is set: a new
# PostgreSQL backend for each task, 4-5 ms of the database's CPU per request in the mixed load (bench-load).
# With it the pool is closed every 2 x this many tasks; after each task memory_project/celery.py hands the
# connections back to the pool and drops broken ones, as Django does after each request.
CELERY_DB_REUSE_MAX = 1000
# Seconds a new worker process may take to start: each loads the embedding model first (memory_project/celery.py);
# Celery's default (4 s) is shorter than a load on a busy machine.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = 120.0
# With Redis as broker, a task whose worker died is redelivered once it has been
# unacknowledged this long (keep it above the longest task), found by a sweep
# every CELERY_RESTORE_INTERVAL seconds (kombu's default throttle made it ~100 s).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": 1,
}
CELERY_TASK_SERIALIZER = "json"

# --- Redis (working memory, rate-limit counters, the read-count buffer). Off when unset.
REDIS_URL = env_str("REDIS_URL")

# A conversation longer than CONVERSATION_SYNC_CHARS (settings/bounds.py) runs as a background job even
# when Celery is eager: a small in-process pool, EAGER_BACKGROUND_WORKERS threads per process.
EAGER_BACKGROUND_WORKERS = env_int("EAGER_BACKGROUND_WORKERS", 1)
# Tasks one process's in-process pool holds (waiting or running) before new background work is refused
# (429 with Retry-After; work already recorded stays queued for the reclaim sweep). 0: no bound.
EAGER_BACKGROUND_QUEUE_MAX = 50
# A job whose transaction is a deadlock victim, a serialization failure or loses its connection is run
# again from the start (memories/transient.py) up to this many times, with jittered backoff doubling from
# TRANSIENT_RETRY_BACKOFF seconds, inside CONVERSATION_JOB_TIME_LIMIT; then the task's own retries
# (EXTRACTION_MAX_RETRIES) take over, and only then does the job fail.
TRANSIENT_RETRIES = 6
TRANSIENT_RETRY_BACKOFF = 0.1
# A job or reflection cycle running this long whose worker is gone (its advisory lock is free), or, with no
# broker, a job queued this long, is reclaimed by the sweep (memories/reclaim.py): run again, or failed
# with the reason after EXTRACTION_MAX_RETRIES runs.
WORK_RECLAIM_AFTER = 300
WORK_RECLAIM_INTERVAL = 60.0  # seconds between sweeps
# The beat job embed-pending runs this often (settings/embedding.py: what it embeds).
EMBEDDING_SWEEP_INTERVAL = 120.0

CELERY_BEAT_SCHEDULE = {
    "embed-pending": {"task": "memories.tasks.embed_pending", "schedule": EMBEDDING_SWEEP_INTERVAL},
    "reflect-due-users": {"task": "reflection.tasks.reflect_due_users", "schedule": 3600.0},
    "end-idle-sessions": {"task": "reflection.tasks.end_idle_sessions", "schedule": 300.0},
    "expire-trends": {"task": "reflection.tasks.expire_trends", "schedule": 3600.0},
    "refresh-trait-decay": {"task": "reflection.tasks.refresh_trait_decay", "schedule": 1800.0},
    "dissolve-weak-traits": {"task": "reflection.tasks.dissolve_weak_traits", "schedule": 86400.0},
    "consistency-check": {"task": "reflection.tasks.consistency_check", "schedule": 86400.0},
    "flush-access-counts": {"task": "memories.tasks.flush_access_counts", "schedule": 300.0},
    "reclaim-stuck-work": {"task": "memories.tasks.reclaim_stuck_work", "schedule": WORK_RECLAIM_INTERVAL},
    "reclaim-stuck-cycles": {"task": "reflection.tasks.reclaim_stuck_cycles", "schedule": WORK_RECLAIM_INTERVAL},
    "expire-conversation-turns": {"task": "memories.tasks.expire_conversation_turns", "schedule": 86400.0},
    # How often memories past their expiry are archived (EXPIRY_BATCH, settings/extraction.py, per run).
    "archive-expired": {"task": "memories.tasks.archive_expired",
                        "schedule": env_float("EXPIRY_INTERVAL", 600.0)},
}

# A job's interval, or a clock time instead (memories/clock.py: `03:00`, `mon 04:00`, `0 4 * * 1`), as
# `name=when; name=when` (docs/settings.md). A name or time that does not parse stops the start.
for _name, _when in parse_job_schedules(env_str("JOB_SCHEDULES"), list(CELERY_BEAT_SCHEDULE)).items():
    CELERY_BEAT_SCHEDULE[_name]["schedule"] = _when.to_crontab() if isinstance(_when, ClockTime) else _when
