"""Map every failure to a JSON body that names the field and the problem."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError, InterfaceError, OperationalError
from rest_framework import status
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memories.embedding import EmbeddingError
from memories.errors import (
    InvalidOperation,
    MemoryNotFound,
    NotAllowed,
    QuotaExceeded,
    TooBusy,
    VectorSearchError,
    VersionConflict,
)
from memories.working import WorkingMemoryUnavailable

logger = logging.getLogger(__name__)


def exception_handler(exc, context):
    if isinstance(exc, MemoryNotFound):
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, VersionConflict):
        body = {"detail": str(exc), "current_version": exc.current_version}
        if exc.superseded_by:
            body["superseded_by"] = exc.superseded_by
        return Response(body, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, TooBusy):
        return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS,
                        headers={"Retry-After": str(exc.retry_after)})
    if isinstance(exc, QuotaExceeded):
        return Response({"detail": str(exc), "quota": exc.quota, "limit": exc.limit, "used": exc.used},
                        status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, NotAllowed):
        return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, InvalidOperation):
        return Response({exc.field: [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, EmbeddingError):
        return Response({"detail": f"embedding service unavailable: {exc}"}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, VectorSearchError):
        return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, WorkingMemoryUnavailable):
        return Response({"detail": f"Redis unavailable, nothing was changed; retry later ({exc})"},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE)
    if isinstance(exc, RequestDataTooBig):
        return Response({"body": [f"the body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes "
                                  "(DATA_UPLOAD_MAX_MEMORY_SIZE)"]}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, IntegrityError):
        logger.warning("integrity error answered as 409", exc_info=exc)
        return Response({"detail": "the change conflicts with data already stored (a uniqueness or reference "
                                   "rule); nothing was written"}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DataError):
        logger.warning("data error answered as 400", exc_info=exc)
        return Response({"non_field_errors": ["a value is out of range or of the wrong form for storage; "
                                              "nothing was written"]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, OperationalError | InterfaceError):
        # The one fault a retry can cure: the database went away.
        logger.error("database unavailable, answered as 503", exc_info=exc)
        return Response({"detail": "database unavailable, nothing was written; retry later"},
                        status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})
    if isinstance(exc, ParseError):
        return Response({"body": [str(exc.detail)]}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
