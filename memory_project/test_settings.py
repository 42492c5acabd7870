"""Test settings: the fast deterministic `hash` embedder unless a test asks
for the real model; everything else as in production defaults."""

import os

os.environ.setdefault("EMBEDDING_PROVIDER", "hash")
os.environ.setdefault("EMBEDDING_DIMENSIONS", "384")

from memory_project.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
