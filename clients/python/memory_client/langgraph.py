"""A LangGraph store backed by the memory service: `MemoryServiceStore(client)` is a
`langgraph.store.base.BaseStore` (put / get / search / delete / list_namespaces), so a
graph's long-term memory lands in the service — deduplicated, searchable by meaning,
audited and reviewable like every other memory.

Each item is one memory of the user its namespace names (`user_index`, default the
last element: `("memories", "alice")` is alice's). The item's namespace, key and value
travel in the memory's `data`; its text (what search ranks) is the value's "text",
"content" or "memory" field, else the value as JSON. Tags mark the namespace and every
prefix of it, so a prefix search is one tag filter.

    pip install -e "clients/python[langgraph]"
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from memory_client.client import MemoryClient
from memory_client.errors import NotFound
from memory_client.models import Memory

STORE_TAG = "langgraph"
DATA_KEY = "langgraph"


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:20]


def namespace_tag(namespace: tuple[str, ...]) -> str:
    return f"lg-ns:{_digest(*namespace)}"


def key_tag(namespace: tuple[str, ...], key: str) -> str:
    return f"lg-key:{_digest(*namespace, '', key)}"


def item_text(value: Mapping[str, Any]) -> str:
    for field in ("text", "content", "memory"):
        text = value.get(field)
        if isinstance(text, str) and text.strip():
            return text
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _when(value: datetime | None) -> datetime:
    return value or datetime.now(UTC)


class MemoryServiceStore(BaseStore):
    """LangGraph's BaseStore over a MemoryClient (sync; the async methods run the same calls)."""

    supports_ttl = False

    def __init__(self, client: MemoryClient, *, user_index: int = -1, agent_id: str | None = None):
        self.client = client
        self.user_index = user_index
        self.agent_id = agent_id

    # -- mapping
    def _user(self, namespace: tuple[str, ...]) -> str | None:
        try:
            return namespace[self.user_index] if namespace else None
        except IndexError:
            return None

    def _user_of_prefix(self, prefix: tuple[str, ...]) -> str | None:
        """The user a namespace prefix names, when it reaches the user's position."""
        if self.user_index >= 0:
            return prefix[self.user_index] if len(prefix) > self.user_index else None
        return None  # counted from the end: a prefix can't say where the end is

    @staticmethod
    def _item(memory: Memory, score: float | None = None) -> Item:
        stored = (memory.data or {}).get(DATA_KEY, {})
        fields = {"value": stored.get("value", {}), "key": stored.get("key", ""),
                  "namespace": tuple(stored.get("namespace", ())), "created_at": _when(memory.created_at),
                  "updated_at": _when(memory.updated_at or memory.created_at)}
        return SearchItem(**fields, score=score) if score is not None else Item(**fields)

    def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        user = self._user(namespace)
        if user is None:
            raise ValueError(f"namespace {namespace!r} names no user at position {self.user_index}")
        for memory in self.client.list(user_id=user, tag=key_tag(namespace, key), status="active",
                                       current=True, include_data=True, page_size=5).results:
            stored = (memory.data or {}).get(DATA_KEY, {})
            if tuple(stored.get("namespace", ())) == namespace and stored.get("key") == key:
                return memory
        return None

    # -- operations
    def _get(self, op: GetOp) -> Item | None:
        memory = self._find(op.namespace, op.key)
        return self._item(memory) if memory else None

    def _put(self, op: PutOp) -> None:
        existing = self._find(op.namespace, op.key)
        if op.value is None:
            if existing is not None:
                try:
                    self.client.delete(existing.id)
                except NotFound:
                    pass
            return
        user = self._user(op.namespace)
        assert user is not None
        data = {DATA_KEY: {"namespace": list(op.namespace), "key": op.key, "value": dict(op.value)}}
        text = item_text(op.value)
        if existing is not None:
            self.client.update(existing.id, text=text if text != existing.text else None, data=data)
            return
        tags = [STORE_TAG, key_tag(op.namespace, op.key)] + [namespace_tag(op.namespace[:depth])
                                                              for depth in range(1, len(op.namespace) + 1)]
        self.client.add(user, text, tags=tags, data=data, agent_id=self.agent_id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        user = self._user_of_prefix(prefix)
        wanted = op.limit + op.offset
        found: list[SearchItem] = []
        candidates: list[tuple[Memory, float | None]]
        if op.query and user is not None:
            answer = self.client.search(op.query, user_id=user, limit=min(max(wanted * 3, 10), 100),
                                        tags=[namespace_tag(prefix)] if prefix else [STORE_TAG], include_data=True)
            candidates = [(hit.memory, hit.score) for hit in answer.results]
        else:
            tag = namespace_tag(prefix) if prefix else STORE_TAG
            candidates = [(m, None) for m in self.client.iter_memories(user_id=user, tag=tag, status="active",
                                                                        current=True, include_data=True)]
        for memory, score in candidates:
            item = self._item(memory, score if score is not None else 1.0)
            if item.namespace[:len(prefix)] != prefix:
                continue
            if op.filter and any(item.value.get(k) != v for k, v in op.filter.items()):
                continue
            found.append(item)  # type: ignore[arg-type]
        return found[op.offset:op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        for memory in self.client.iter_memories(tag=STORE_TAG, status="active", current=True, include_data=True):
            namespace = tuple((memory.data or {}).get(DATA_KEY, {}).get("namespace", ()))
            if op.max_depth is not None:
                namespace = namespace[:op.max_depth]
            if all(_matches(namespace, c.match_type, tuple(c.path)) for c in op.match_conditions or ()):
                seen.add(namespace)
        return sorted(seen)[op.offset:op.offset + op.limit]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        import asyncio

        return await asyncio.to_thread(self.batch, list(ops))


def _matches(namespace: tuple[str, ...], match_type: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[:len(path)] if match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
