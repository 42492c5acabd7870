"""Django itself: where the checkout and var/ are, the secret, the apps, middleware, templates, static
files and the REST framework. Defaults run everything locally with no accounts or keys."""

from __future__ import annotations

import secrets
from pathlib import Path

from memory_project.settings.env import env_bool, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("MEMORY_VAR_DIR", str(BASE_DIR / "var")))


def _local_secret_key() -> str:
    """A per-checkout secret kept in var/ (git-ignored), made on first use."""
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


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
