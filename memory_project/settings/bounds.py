"""How much one request may ask for and one job may take (docs/reliability.md, "Bounds"): checked
before any work; over one is a 400/413 naming the field, or a job that stops writing nothing."""

from __future__ import annotations

from memory_project.settings.env import env_int

MEMORY_MAX_TEXT_CHARS = env_int("MEMORY_MAX_TEXT_CHARS", 8000)
MEMORY_BATCH_MAX = env_int("MEMORY_BATCH_MAX", 1000)
MEMORY_MAX_DATA_BYTES = 16 * 1024  # a memory's `data`, as JSON
MEMORY_MAX_TAGS = 50
CONVERSATION_MAX_MESSAGES = 500
CONVERSATION_MAX_CHARS = env_int("CONVERSATION_MAX_CHARS", 32_000)  # all turns together
CONVERSATION_MAX_PARTICIPANTS = 50
SEARCH_MAX_QUERY_CHARS = 2000
SEARCH_MAX_QUERY_TERMS = 64  # distinct words after stopwords
SEARCH_MAX_LIMIT = 100
JSON_MAX_DEPTH = 64
# Timestamps clients send (message times, valid_at): outside these years they are a typo or a probe.
TIMESTAMP_MIN_YEAR, TIMESTAMP_MAX_YEAR = 1900, 2200
# Bodies: Django's own cap, answered as a JSON 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440)
API_MAX_RESPONSE_BYTES = env_int("API_MAX_RESPONSE_BYTES", 4 * 1024 * 1024)  # 0: no limit
# Work bounds. A conversation longer than CONVERSATION_SYNC_CHARS runs as a background job even when
# Celery is eager (EAGER_BACKGROUND_WORKERS, settings/celery.py): the request answers 202 at once. Every
# job stops after CONVERSATION_JOB_TIME_LIMIT seconds, writing nothing.
CONVERSATION_SYNC_CHARS = env_int("CONVERSATION_SYNC_CHARS", 2000)
CONVERSATION_JOB_TIME_LIMIT = env_int("CONVERSATION_JOB_TIME_LIMIT", 120)
