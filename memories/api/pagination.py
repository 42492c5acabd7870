from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination


class MemoryCursorPagination(CursorPagination):
    """Keyset pagination: no COUNT(*) and stable pages on large tables."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 500

    def decode_cursor(self, request):
        """A forged or damaged cursor is a 400 naming it, never a database error."""
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise ValidationError({"cursor": ["invalid cursor: use the `next` or `previous` link as given"]}) from None
        if cursor is not None and cursor.position is not None:
            try:
                valid = parse_datetime(str(cursor.position)) is not None
            except ValueError:
                valid = False
            if not valid:
                raise ValidationError({"cursor": ["invalid cursor: use the `next` or `previous` link as given"]})
        return cursor


class HistoryCursorPagination(MemoryCursorPagination):
    """A memory's history, oldest first, 100 events a page (at most 500)."""

    ordering = ("created_at", "id")
    page_size = 100
