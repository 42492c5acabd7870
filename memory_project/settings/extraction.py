"""What a conversation leaves: the extractor (an OpenAI-compatible LLM, else the offline meaning
extractor), its retries, the review gate's hold, working memory, episodes, and how long raw turns and
memories are kept. Thresholds a benchmark chose live beside their code (memories/ingestion.py,
memories/working.py)."""

from __future__ import annotations

from memory_project.settings.env import env_bool, env_choice, env_days_by_type, env_float, env_int, env_str

EXTRACTION_PROVIDER = env_str("EXTRACTION_PROVIDER", "")  # llm | rules; default: llm when LLM_BASE_URL is set
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_MODEL = env_str("LLM_MODEL", "gpt-4o-mini")
LLM_API_KEY = env_str("LLM_API_KEY", "not-needed")
LLM_TIMEOUT = env_float("LLM_TIMEOUT", 30.0)
EXTRACTION_MAX_RETRIES = env_int("EXTRACTION_MAX_RETRIES", 3)
EXTRACTION_RETRY_BACKOFF = 2.0  # seconds, doubled per try
MEMORY_REVIEW_CONFIDENCE = 0.5  # below: held for review
# A reviewer may undo their own last approve / reject for this long (the admin's Undo button).
REVIEW_UNDO_SECONDS = 120
# A finished conversation job's raw turns are emptied this many days after it finished (0: kept until
# the user is erased); the memories, episodes and sources it left stay.
CONVERSATION_RAW_RETENTION_DAYS = env_int("CONVERSATION_RAW_RETENTION_DAYS", 30)
WORKING_MEMORY_SIZE = 50  # a user's newest extracted memories kept there
WORKING_MEMORY_TTL = 24 * 3600  # seconds after the last push
# Where working memory lives: auto (Redis when REDIS_URL is set, else the database), redis, database, off.
WORKING_MEMORY_STORE = env_choice("WORKING_MEMORY_STORE", "auto", ("auto", "redis", "database", "off"))
# Each speaker's original turns of a session are kept as episodic memories (seed 002's MemUnit).
CONVERSATION_EPISODES = env_bool("CONVERSATION_EPISODES", True)
# Each memory written from a conversation or a save carries the emotion it was said with (memories/emotion.py).
MEMORY_EMOTION = True
# Long-term memories expire only when asked: per save (expires_at, ttl_seconds) or per type here.
MEMORY_TTL_DAYS_BY_TYPE = env_days_by_type("MEMORY_TTL_DAYS_BY_TYPE")
EXPIRY_BATCH = 500  # memories the beat job archives per run
