"""Domain errors raised by the service modules; the API maps them to HTTP."""


class MemoryError_(Exception):
    """Base class (named to avoid shadowing the builtin MemoryError)."""


class MemoryNotFound(MemoryError_):
    pass


class VersionConflict(MemoryError_):
    """The row changed since the caller read it, or it is no longer current."""

    def __init__(self, message: str, *, current_version: int | None = None, superseded_by: str | None = None):
        super().__init__(message)
        self.current_version = current_version
        self.superseded_by = superseded_by


class InvalidOperation(MemoryError_):
    """The request is well-formed but the rule forbids it (e.g. merging across users)."""

    def __init__(self, message: str, *, field: str = "non_field_errors"):
        super().__init__(message)
        self.field = field
