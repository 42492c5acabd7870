"""Production settings: everything from the environment, nothing defaulted
that would be unsafe behind a real domain. `manage.py check --deploy` is clean."""

import os

from memory_project.settings import *  # noqa: F403
from memory_project.settings import env_bool, env_int, env_str

DEBUG = False
SECRET_KEY = os.environ["SECRET_KEY"]  # required: never the generated local one
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS").split(",") if h]
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
