"""The keyword side: BM25 over the searched memories, or Postgres' ts_rank_cd."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings

from memories.models import Tenant
from memories.search import tuning
from memories.search.filters import db, item_filters
from memories.search.query import SearchQuery
from memories.search.rows import SCORE_COLUMNS, RetrievedRow, candidate, named
from memories.text import query_tokens, tsquery_from_tokens

BM25_K1 = 1.2
BM25_B = 0.75


def keyword_candidates(tenant: Tenant, q: SearchQuery, pool: int, now: datetime) -> list[RetrievedRow]:
    """Full-text candidates, best first."""
    statement = keyword_sql(tenant, q, pool, now)
    if statement is None:
        return []
    with db().cursor() as cursor:
        cursor.execute(*statement)
        return [candidate(r) for r in named(cursor)]


def uses_kept_statistics(q: SearchQuery) -> bool:
    """BM25 reads the per-user counts the database keeps (migration 0017) for a search of one
    user's present; a tenant- or group-wide search, or one as of a past moment, counts its scope."""
    return (tuning.SEARCH_KEYWORD_RANKING == "bm25" and tuning.SEARCH_KEYWORD_STATISTICS == "kept"
            and q.user_id is not None and q.as_of is None)


def keyword_terms(q: SearchQuery) -> list[str]:
    """The keyword side's terms: those of the explicit keywords when given (seed 001's keyword list), else the
    query's; what the search leaves out (the user's name) dropped; at most SEARCH_MAX_QUERY_TERMS (the API
    refuses more, internal callers pass long texts, and each term is a SQL column)."""
    text = " ".join(q.keywords) if q.keywords else q.query
    return [t for t in query_tokens(text) if t not in q.keyword_ignore][: settings.SEARCH_MAX_QUERY_TERMS]


def keyword_sql(tenant: Tenant, q: SearchQuery, pool: int, now: datetime) -> tuple[str, list[Any]] | None:
    """The full-text statement (columns id, rank_value and SCORE_COLUMNS) ranked
    as SEARCH_KEYWORD_RANKING says: bm25 (better recall; one heavier statement)
    or ts_rank (Postgres' ts_rank_cd: no IDF, about 1 ms cheaper per search).
    None when the query has no terms."""
    tokens = keyword_terms(q)
    if not tokens:
        return None
    if tuning.SEARCH_KEYWORD_RANKING == "ts_rank":
        return _ts_rank_sql(tenant, q, tokens, pool, now)
    if uses_kept_statistics(q):
        return _bm25_kept_sql(tenant, q, tokens, pool, now)
    return _bm25_sql(tenant, q, tokens, pool, now)


def _ts_rank_sql(tenant: Tenant, q: SearchQuery, tokens: list[str], pool: int, now: datetime) -> tuple[str, list[Any]]:
    where, params = item_filters(tenant, q, now)
    sql = f"""
        SELECT m.id AS id, ts_rank_cd(m.search_vector, query, 1) AS rank_value, {SCORE_COLUMNS}
        FROM memory_items m, to_tsquery('simple', %s) AS query
        WHERE {where} AND m.search_vector @@ query
        ORDER BY rank_value DESC, m.created_at DESC LIMIT %s"""
    return sql, [tsquery_from_tokens(tokens), *params, pool]


def _bm25_score(avglen: str) -> str:
    """BM25's sum over the matched terms (aliases: m the memory, tf its terms, idf the weights)."""
    return (f"SUM(idf.weight * (tf.n * ({BM25_K1} + 1))"
            f" / (tf.n + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(m.search_vector) / {avglen})))")


# The query's terms of each matching memory with their counts (one parameter: the terms).
# setweight marks the query's lexemes and ts_filter keeps only those, both in C, so the join
# sees one to four rows a memory instead of every lexeme (27 on a LoCoMo turn): 9.6 -> ms below.
_TERM_FREQUENCIES = """CROSS JOIN LATERAL (
            SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1) AS n
            FROM unnest(ts_filter(setweight(m.search_vector, 'A', %s::text[]), '{a}')) AS u) AS tf"""


# A term in more than this share of the searched memories, once there are at least COMMON_TERM_MIN_DOCUMENTS
# of them, scores the memories the other terms select but selects none itself (its weight is under a sixth
# of a rare word's at 100 memories, a twelfth at 650): a speaker's name in every LoCoMo turn made the keyword
# side score all 650 memories of the user, 4 of a search's 11 ms. Alone in a query it still selects (nothing
# else would); in a small scope every term selects, as before (there the weights are close, and it is cheap).
COMMON_TERM_SHARE = 0.5
COMMON_TERM_MIN_DOCUMENTS = 100
# The query that selects the memories BM25 scores: its terms that are not common, else all of them (one
# parameter: the whole query). Both BM25 statements use it, so kept and counted statistics rank alike.
_SELECTING = ("SELECT coalesce(to_tsquery('simple', string_agg(i.term, ' | ')), to_tsquery('simple', %s)) AS query "
              "FROM {source} WHERE {documents} > 0 "
              f"AND ({{total}} < {COMMON_TERM_MIN_DOCUMENTS} OR {{documents}} <= {{total}} * {COMMON_TERM_SHARE})")


def _bm25_kept_sql(tenant: Tenant, q: SearchQuery, tokens: list[str], pool: int,
                   now: datetime) -> tuple[str, list[Any]]:
    """BM25 with the user's document count, average length and document frequencies read
    from the kept statistics: a few primary-key lookups instead of a scan of every memory. The
    memories scored are those holding a term that is not common (COMMON_TERM_SHARE)."""
    where, params = item_filters(tenant, q, now)
    # MATERIALIZED: the planner cannot estimate how many terms match and, inlined, drove the
    # memory scan once per term (13 ms against 2 ms on a 660-memory user).
    sql = f"""
        WITH totals AS MATERIALIZED (
            SELECT s.documents::float8 AS n, greatest(s.total_length::float8 / greatest(s.documents, 1), 1) AS avglen
            FROM memory_user_text_stats s WHERE s.tenant_id = %s AND s.user_id = %s
        ),
        idf AS MATERIALIZED (
            SELECT t.lexeme AS term, ln(1 + (s.n - t.documents + 0.5) / (t.documents + 0.5)) AS weight,
                   t.documents AS documents
            FROM memory_user_term_stats t CROSS JOIN totals s
            WHERE t.tenant_id = %s AND t.user_id = %s AND t.lexeme = ANY(%s::text[]) AND t.documents > 0
        ),
        selecting AS MATERIALIZED (
            {_SELECTING.format(documents="i.documents", total="s.n", source="idf i CROSS JOIN totals s")}
        )
        SELECT m.id AS id, {_bm25_score("s.avglen")} AS rank_value, {SCORE_COLUMNS}
        FROM memory_items m
        CROSS JOIN totals s
        {_TERM_FREQUENCIES}
        JOIN idf ON idf.term = tf.lexeme
        WHERE {where} AND m.search_vector @@ (SELECT query FROM selecting)
        GROUP BY m.id, s.avglen
        ORDER BY rank_value DESC, m.created_at DESC LIMIT %s"""
    return sql, [tenant.id, q.user_id, tenant.id, q.user_id, tokens, tsquery_from_tokens(tokens), tokens, *params,
                 pool]


def _bm25_sql(tenant: Tenant, q: SearchQuery, tokens: list[str], pool: int, now: datetime) -> tuple[str, list[Any]]:
    """BM25 over the searched memories: document frequencies and average
    length come from the same scope (the user, or the tenant), term
    frequencies from the tsvector's positions. ts_rank_cd has no IDF, so a
    speaker's name in half the memories weighed as much as a rare word."""
    where, params = item_filters(tenant, q, now)
    query = tsquery_from_tokens(tokens)
    term_counts = ", ".join(f"count(*) FILTER (WHERE m.search_vector @@ to_tsquery('simple', %s)) AS df{i}"
                            for i in range(len(tokens)))
    idf_rows = " UNION ALL ".join(
        f"SELECT %s::text, ln(1 + (s.n - s.df{i} + 0.5) / (s.df{i} + 0.5)), s.df{i} FROM stats s"
        for i in range(len(tokens)))
    # One statement: document frequencies and average length over the searched
    # scope, then BM25 over the matching memories.
    sql = f"""
        WITH stats AS (
            SELECT count(*)::float8 AS n, coalesce(avg(length(m.search_vector)), 1)::float8 AS avglen,
                   {term_counts}
            FROM memory_items m WHERE {where}
        ),
        idf(term, weight, df) AS ({idf_rows}),
        selecting AS MATERIALIZED ({_SELECTING.format(documents="i.df", total="s.n",
                                                       source="idf i CROSS JOIN stats s")})
        SELECT m.id AS id, {_bm25_score("s.avglen")} AS rank_value, {SCORE_COLUMNS}
        FROM memory_items m
        CROSS JOIN stats s
        {_TERM_FREQUENCIES}
        JOIN idf ON idf.term = tf.lexeme AND idf.df > 0
        WHERE {where} AND m.search_vector @@ (SELECT query FROM selecting)
        GROUP BY m.id, s.avglen
        ORDER BY rank_value DESC, m.created_at DESC LIMIT %s"""
    return sql, [*tokens, *params, *tokens, query, tokens, *params, pool]
