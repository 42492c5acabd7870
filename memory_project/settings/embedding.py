"""The embedder: local (models installed with the packages), an OpenAI-compatible endpoint, or hash
(tests); where a save's vectors are made, and the sweep that makes the ones a crash left out. How the
local model runs and how text is cut into chunks were measured, and live beside that code
(memories/embedding.py, memories/vectors.py)."""

from __future__ import annotations

from memory_project.settings.env import env_float, env_int, env_str

EMBEDDING_PROVIDER = env_str("EMBEDDING_PROVIDER", "local")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "")
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 384)
EMBEDDING_BASE_URL = env_str("EMBEDDING_BASE_URL")
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY", "not-needed")
EMBEDDING_TIMEOUT = env_float("EMBEDDING_TIMEOUT", 30.0)
# A search's query vector: short and not retried; past it hybrid answers from keywords ("degraded").
EMBEDDING_QUERY_TIMEOUT = env_float("EMBEDDING_QUERY_TIMEOUT", 3.0)
# Threads per process for the local model, spin-free. 1 suits a machine shared by several gunicorn and Celery
# processes: three processes embedding queries at once managed 2.1x the queries with 1 thread each than with
# ONNX Runtime's default (all cores, spinning). 0: the runtime's default (one process doing large batches).
EMBEDDING_LOCAL_THREADS = env_int("EMBEDDING_LOCAL_THREADS", 1)
# A search's query vector through ONNX Runtime directly: int8 (MatMul weights quantized per channel, made once
# under var/models: 3.1 against 7.3 ms a query, cosine >= 0.99, dev-split hybrid hit@10 within one question) or
# fp32 (the stored vectors' own model). Searches and context only: stored vectors and deduplication stay fp32.
# make bench-query-precision; bench/results/2026-11-query-precision.md.
EMBEDDING_LOCAL_QUERY_PRECISION = env_str("EMBEDDING_LOCAL_QUERY_PRECISION", "int8")
# Saves of more memories than this at once embed on a worker (or the in-process background pool), not
# inside the request; the sweep embeds what stays pending (a crash) once it is EMBEDDING_SWEEP_AFTER old.
EMBEDDING_INLINE_MAX_ITEMS = 1
EMBEDDING_SWEEP_AFTER = 120  # seconds
EMBEDDING_SWEEP_BATCH = 500
