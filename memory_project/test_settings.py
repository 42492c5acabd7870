"""Test settings: the fast deterministic `hash` embedder unless a test asks
for the real model; everything else as in production defaults."""

import os

os.environ.setdefault("EMBEDDING_PROVIDER", "hash")
os.environ.setdefault("EMBEDDING_DIMENSIONS", "384")
# Every writer takes its users' write locks first, or the test that drove it fails (settings/database.py).
os.environ.setdefault("WRITE_LOCK_ORDER_CHECK", "true")

from memory_project.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Suites that send thousands of requests with one key (fuzzing, load smoke) are not about rate limits;
# tests/test_rate_limits.py sets the production defaults (or smaller) explicitly.
RATE_LIMIT_KEY_REQUESTS = RATE_LIMIT_TENANT_REQUESTS = 1_000_000  # noqa: F405
# Inside a test transaction a background thread could not see the job: run them inline, except where a
# (transactional) test lowers it on purpose.
CONVERSATION_SYNC_CHARS = 1_000_000
# Likewise embeddings of a batch (tests/test_work_bounds.py lowers it in a transactional test).
EMBEDDING_INLINE_MAX_ITEMS = 1_000_000
# The fact-extraction suites count and name the facts a conversation leaves; episodes (the raw
# turns, docs/extraction.md) are on in production and in the suites about them (test_episodes,
# the erasure scan), which turn them on through the settings fixture.
CONVERSATION_EPISODES = False
