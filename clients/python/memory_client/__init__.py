"""Python client for the memory governance service: `MemoryClient` (sync) and `AsyncMemoryClient`."""

from memory_client._core import RetryPolicy
from memory_client.client import AsyncMemoryClient, MemoryClient
from memory_client.errors import (
    AuthenticationError,
    Conflict,
    MemoryServiceError,
    NotFound,
    NotSupported,
    PermissionDenied,
    QuotaExceeded,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    TransportError,
    ValidationError,
)
from memory_client.models import (
    Candidate,
    ContextBlock,
    Erasure,
    HistoryEvent,
    Job,
    Memory,
    Page,
    Person,
    PersonEdge,
    PersonFact,
    ReflectionCycle,
    ScoreParts,
    SearchGroup,
    SearchResponse,
    SearchResult,
    Session,
    SessionTurn,
    Trait,
    WriteResult,
)

__all__ = [
    "AsyncMemoryClient", "AuthenticationError", "Candidate", "Conflict", "ContextBlock", "Erasure", "HistoryEvent",
    "Job", "Memory", "MemoryClient", "MemoryServiceError", "NotFound", "NotSupported", "Page", "PermissionDenied",
    "Person", "PersonEdge", "PersonFact", "QuotaExceeded", "RateLimited", "ReflectionCycle", "RetryPolicy",
    "ScoreParts", "SearchGroup", "SearchResponse", "SearchResult", "ServerError", "ServiceUnavailable", "Session",
    "SessionTurn", "Trait",
    "TransportError", "ValidationError", "WriteResult",
]
