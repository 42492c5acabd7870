"""Production settings: everything from the environment, nothing defaulted
that would be unsafe behind a real domain. `manage.py check --deploy` is clean."""

import os

if not os.environ.get("DATABASE_URL"):
    # Checked before the base settings load: they would start the embedded server.
    raise RuntimeError("production settings need DATABASE_URL: the embedded database is for development only")

from memory_project.settings import *  # noqa: E402, F403
from memory_project.settings.env import env_bool, env_int, env_str  # noqa: E402

DEBUG = False
SECRET_KEY = os.environ["SECRET_KEY"]  # required: never the generated local one
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS").split(",") if h]
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Trust X-Forwarded-Proto only when a proxy in front is known to set it (and strip it from clients).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_PROXY_SSL_HEADER", False) else None
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)  # opt in: preload lists are hard to leave
# Not preloading is a choice, not an oversight: the deploy check's reminder is silenced unless opted in.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
