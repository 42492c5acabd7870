"""The per-user keyword statistics (migration 0017): drift against a fresh count, and a rebuild.

The triggers keep them exact; these exist for what they cannot see (a trigger
disabled during a manual restore, rows edited with triggers off) and serve
consistency_check's report and repair."""

from __future__ import annotations

from django.db import connection, transaction

from memories import vocabulary
from memories.writing import user_write_lock

_FRESH_TOTALS = f"""SELECT m.tenant_id, m.user_id, count(*) AS documents,
                           sum(coalesce(length(m.search_vector), 0)) AS total_length
                    FROM memory_items m WHERE {vocabulary.sql_keyword_counted("m")} GROUP BY 1, 2"""
_FRESH_TERMS = f"""SELECT m.tenant_id, m.user_id, l.lexeme, count(*) AS documents
                   FROM memory_items m CROSS JOIN LATERAL unnest(m.search_vector) AS l
                   WHERE {vocabulary.sql_keyword_counted("m")} GROUP BY 1, 2, 3"""


def drifted_users() -> list[tuple[int, str]]:
    """(tenant id, user id) of every user whose kept counts differ from a fresh count of their memories."""
    with connection.cursor() as cursor:
        cursor.execute(f"""
            SELECT coalesce(f.tenant_id, k.tenant_id), coalesce(f.user_id, k.user_id)
            FROM ({_FRESH_TOTALS}) AS f FULL JOIN memory_user_text_stats k
              ON k.tenant_id = f.tenant_id AND k.user_id = f.user_id
            WHERE f.documents IS DISTINCT FROM k.documents OR f.total_length IS DISTINCT FROM k.total_length
            UNION
            SELECT coalesce(f.tenant_id, k.tenant_id), coalesce(f.user_id, k.user_id)
            FROM ({_FRESH_TERMS}) AS f FULL JOIN memory_user_term_stats k
              ON k.tenant_id = f.tenant_id AND k.user_id = f.user_id AND k.lexeme = f.lexeme
            WHERE f.documents IS DISTINCT FROM k.documents
            ORDER BY 1, 2""")
        return [(tenant_id, user_id) for tenant_id, user_id in cursor.fetchall()]


@transaction.atomic
def rebuild_user_statistics(tenant_id: int, user_id: str) -> None:
    """Count one user's memories afresh, under the user's write lock (the triggers take it too)."""
    user_write_lock(tenant_id, user_id)
    with connection.cursor() as cursor:
        for table in ("memory_user_text_stats", "memory_user_term_stats"):
            cursor.execute(f"DELETE FROM {table} WHERE tenant_id = %s AND user_id = %s", [tenant_id, user_id])
        cursor.execute(f"""INSERT INTO memory_user_text_stats (tenant_id, user_id, documents, total_length)
                           SELECT * FROM ({_FRESH_TOTALS}) AS f WHERE f.tenant_id = %s AND f.user_id = %s""",
                       [tenant_id, user_id])
        cursor.execute(f"""INSERT INTO memory_user_term_stats (tenant_id, user_id, lexeme, documents)
                           SELECT * FROM ({_FRESH_TERMS}) AS f WHERE f.tenant_id = %s AND f.user_id = %s""",
                       [tenant_id, user_id])
