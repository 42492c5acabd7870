from rest_framework.pagination import CursorPagination


class MemoryCursorPagination(CursorPagination):
    """Keyset pagination: no COUNT(*) and stable pages on large tables."""

    ordering = ("-created_at", "-id")
    page_size_query_param = "page_size"
    max_page_size = 500
