"""What a failed call raises: one class per answer a caller handles differently."""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """Any error answer (or none at all). `body` is the service's JSON, `request_id` its X-Request-ID."""

    def __init__(self, message: str, *, status_code: int | None = None, body: Any = None,
                 request_id: str | None = None):
        super().__init__(message)
        self.status_code = status_code
        self.body = body
        self.request_id = request_id


class ValidationError(MemoryServiceError):
    """400 or 413: `fields` maps each bad field to what is wrong with it."""

    @property
    def fields(self) -> dict[str, list[str]]:
        if not isinstance(self.body, dict):
            return {}
        return {name: problems if isinstance(problems, list) else [problems]
                for name, problems in self.body.items() if name != "detail"}


class AuthenticationError(MemoryServiceError):
    """401: the key is missing, wrong, revoked or expired."""


class PermissionDenied(MemoryServiceError):
    """403: the key may not do this (an agent key on the review queue, self-approval, ...)."""


class QuotaExceeded(PermissionDenied):
    """403 with a quota: nothing was written."""

    @property
    def quota(self) -> str | None:
        return self.body.get("quota") if isinstance(self.body, dict) else None


class NotFound(MemoryServiceError):
    """404: no such memory, job, trait or candidate in this tenant."""


class Conflict(MemoryServiceError):
    """409: the memory changed since you read it. Re-read it, or retry with `current_version`."""

    @property
    def current_version(self) -> int | None:
        return self.body.get("current_version") if isinstance(self.body, dict) else None

    @property
    def superseded_by(self) -> str | None:
        return self.body.get("superseded_by") if isinstance(self.body, dict) else None


class RateLimited(MemoryServiceError):
    """429 after the retries ran out; `retry_after` is the service's wait in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServiceUnavailable(RateLimited):
    """503 after the retries ran out (database, Redis or embedder down): nothing was written."""


class NotSupported(MemoryServiceError):
    """501: the service does not have this feature."""


class ServerError(MemoryServiceError):
    """Another 5xx."""


class TransportError(MemoryServiceError):
    """No answer: the connection failed or the call timed out."""


def error_for(status_code: int, body: Any, *, retry_after: float | None, request_id: str | None) -> MemoryServiceError:
    """The exception for an error answer (a pure function: tests/test_sdk.py tables it)."""
    detail = body.get("detail") if isinstance(body, dict) else None
    message = f"{status_code}: {detail or body}"
    common = {"status_code": status_code, "body": body, "request_id": request_id}
    if status_code in (400, 413, 422):
        return ValidationError(message, **common)
    if status_code == 401:
        return AuthenticationError(message, **common)
    if status_code == 403:
        quota = isinstance(body, dict) and "quota" in body
        return (QuotaExceeded if quota else PermissionDenied)(message, **common)
    if status_code == 404:
        return NotFound(message, **common)
    if status_code == 409:
        return Conflict(message, **common)
    if status_code == 429:
        return RateLimited(message, retry_after=retry_after, **common)
    if status_code == 501:
        return NotSupported(message, **common)
    if status_code == 503:
        return ServiceUnavailable(message, retry_after=retry_after, **common)
    if status_code >= 500:
        return ServerError(message, **common)
    return MemoryServiceError(message, **common)
