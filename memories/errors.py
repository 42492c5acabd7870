"""Domain errors raised by the service modules; the API maps them to HTTP."""

from django.core.exceptions import ValidationError


class ServiceError(Exception):
    """What a service refuses or cannot find, as the caller may show it: the API maps each kind to its HTTP
    status, the admin shows the message."""


class MemoryNotFound(ServiceError):
    pass


def get_or_not_found(queryset, what: str, **lookup):
    """One row by lookup, or MemoryNotFound: another tenant's id (the queryset is
    always tenant-scoped) and a malformed id look exactly like a missing one."""
    try:
        return queryset.get(**lookup)
    except (queryset.model.DoesNotExist, ValueError, TypeError, ValidationError):
        raise MemoryNotFound(f"{what} {next(iter(lookup.values()), '')} not found") from None


class VersionConflict(ServiceError):
    """The row changed since the caller read it, or it is no longer current."""

    def __init__(self, message: str, *, current_version: int | None = None, superseded_by: str | None = None):
        super().__init__(message)
        self.current_version = current_version
        self.superseded_by = superseded_by


class InvalidOperation(ServiceError):
    """The request is well-formed but the rule forbids it (e.g. merging across users)."""

    def __init__(self, message: str, *, field: str = "non_field_errors"):
        super().__init__(message)
        self.field = field


class QuotaExceeded(ServiceError):
    """A tenant's storage quota would be passed: nothing was written."""

    def __init__(self, message: str, *, quota: str, limit: int, used: int):
        super().__init__(message)
        self.quota, self.limit, self.used = quota, limit, used


class TooBusy(ServiceError):
    """The caller has too much work waiting; retry after `retry_after` seconds."""

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class NotAllowed(ServiceError):
    """The caller is known but may not do this (e.g. approve its own candidate)."""


class VectorSearchError(ServiceError):
    """The vector side of a search failed in the database (seed 001 §9): a semantic search has no other
    side to answer from (503); a hybrid one answers from its keywords and says so (`degraded`)."""
