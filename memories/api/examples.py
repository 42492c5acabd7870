"""OpenAPI examples (drf-spectacular) of the search request and answer: the controls seeds 001 and 002 name."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample

_MEMORY = {
    "id": "6f1c2b1e-8a3d-4c55-9e0a-2b1f3c4d5e6f", "user_id": "alice", "agent_id": "", "session_id": "s-2026-11-20",
    "group_id": "", "memory_type": "fact", "text": "Alice's database is MySQL 8 on port 3307.", "tags": [],
    "importance": 0.5, "confidence": 0.8, "status": "active", "version": 1, "content_hash": "9c1e…",
    "valid_at": None, "invalid_at": None, "created_at": "2026-11-20T09:14:03Z", "expired_at": None,
    "updated_at": "2026-11-20T09:14:03Z", "archived_at": None, "expires_at": None, "superseded_by": None,
    "embedding_state": "done", "access_count": 3, "last_accessed_at": "2026-11-27T16:02:11Z",
    "subject": {"id": "0b7e9d2c-4f1a-4e8b-9c3d-5a6b7c8d9e0f", "name": "Alice"}, "object": None, "emotion": None,
}
_SCORES = {"relevance": 1.0, "semantic": 0.71, "keyword": 3.42, "fusion": 0.1136, "recency": 0.28,
           "importance": 0.075, "stage": 0.0}

SEARCH_EXAMPLES = [
    OpenApiExample(
        "hybrid with keywords, the last 30 days", request_only=True,
        summary="seed 001 §8.3: a hybrid search with an explicit keyword list, a time range and a floor",
        value={"user_id": "alice", "query": "what database does Alice use?", "keywords": ["MySQL", "database"],
               "mode": "hybrid", "memory_types": ["fact"], "time_range_days": 30, "min_score": 0.3, "limit": 5,
               "include_turns": True}),
    OpenApiExample(
        "keyword search", request_only=True, summary="seed 001 §8.2: only the keyword side, on the words given",
        value={"user_id": "alice", "query": "MySQL配置", "keywords": ["MySQL", "数据库", "配置"], "mode": "keyword"}),
    OpenApiExample(
        "an answer", response_only=True, status_codes=["200"],
        summary="matched keywords, a preview, the original turns, the total and the groups",
        value={"results": [{
            "memory": _MEMORY, "score": 0.156, "scores": _SCORES,
            "sources": [{"session_id": "s-2026-11-20", "message_indices": [2], "job_id": "2d4c…"}],
            "matched_keywords": ["MySQL", "database"], "preview": "Alice's database is MySQL 8 on port 3307.",
            "turns": [{"job_id": "2d4c…", "index": 2, "role": "user", "speaker": "Alice",
                       "content": "We moved the database to MySQL 8, it listens on 3307 now.",
                       "created_at": "2026-11-20T09:13:58Z"}],
            "turns_total": 1}],
            "total_count": 1, "total_count_exact": True,
            "groups": [{"group_id": "", "count": 1, "best_score": 0.156, "memory_ids": [_MEMORY["id"]]}],
            "degraded": [], "degraded_reason": ""}),
    OpenApiExample(
        "the vector side failed", response_only=True, status_codes=["200"],
        summary="a hybrid answer from the keyword side alone, told apart from an empty result",
        value={"results": [{"memory": _MEMORY, "score": 0.182, "scores": {**_SCORES, "semantic": None},
                            "sources": [], "matched_keywords": ["MySQL"],
                            "preview": "Alice's database is MySQL 8 on port 3307."}],
               "total_count": 1, "total_count_exact": True,
               "groups": [{"group_id": "", "count": 1, "best_score": 0.182, "memory_ids": [_MEMORY["id"]]}],
               "degraded": ["semantic"],
               "degraded_reason": "embedding failed: embedding endpoint failed: Connection error."}),
]
