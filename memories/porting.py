"""Moving memories in and out: importers for other memory stores, our own
JSONL export, and the checkpoints that make long runs resumable.

Each source is read into ImportRecords; records are written in batches, one
transaction per batch, through memory_create_batch (so a second run is all
NOOPs by content hash). Records pass the review gate every door passes: one
carrying sensitive data becomes a review candidate instead of a memory, and an
id carrying it stops the run naming its line. Vectors whose model and size match the active
embedder are kept; any others are re-embedded, never stored under the wrong
model. A malformed record stops the run with its line number, before its
batch is written.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from psycopg.rows import dict_row

from memories import vocabulary
from memories.embedding import Embedder, get_embedder
from memories.errors import InvalidOperation
from memories.governance import HoldDecision, review_candidate_create, save_hold
from memories.identity import ID_FIELDS
from memories.models import (
    Candidate,
    CandidateOperation,
    CandidateStatus,
    MemoryHistory,
    MemoryItem,
    MemoryStatus,
    MemoryType,
    Tenant,
)
from memories.search import scope_filter
from memories.vectors import embed_items, refresh_planner_statistics, store_vectors
from memories.writing import MemorySpec, memory_create_batch, refuse_sensitive_identifiers, users_write_lock

SOURCES = ("memory-items", "agent-memories", "mem0", "jsonl")
OLD_TYPES = {"profile": MemoryType.PROFILE, "task": MemoryType.TASK, "fact": MemoryType.FACT,
             "episodic": MemoryType.EPISODIC, "semantic": MemoryType.FACT, "preference": MemoryType.FACT,
             "trait": MemoryType.FACT, "document": MemoryType.DOCUMENT}


class ImportFailed(Exception):
    """A record that cannot be imported; says where (the builtin ImportError is about Python modules)."""

    def __init__(self, message: str, *, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


@dataclass
class ImportRecord:
    line: int
    spec: MemorySpec
    vector: list[float] | None = None
    vector_model: str = ""


@dataclass
class ImportReport:
    read: int = 0
    added: int = 0
    noop: int = 0
    updated: int = 0
    vectors_kept: int = 0
    reembedded: int = 0
    skipped_resumed: int = 0
    held: int = 0  # records the sensitive-data screen sent to the review queue instead
    batches: int = 0
    dry_run: bool = False
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- field mapping


def _when(value, line: int, name: str) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = value if isinstance(value, datetime) else (
        parse_datetime(str(value).replace(" ", "T", 1)) if isinstance(value, str) else None)
    if parsed is None:
        raise ImportFailed(f"{name} {value!r} is not a timestamp", line=line)
    # The older schemas store `timestamp without time zone` written in UTC.
    return parsed if timezone.is_aware(parsed) else timezone.make_aware(parsed, UTC)


def _json(value, line: int, name: str, default):
    if value in (None, ""):
        return default
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            raise ImportFailed(f"{name} is not valid JSON", line=line) from None
    return value


def _importance(value, line: int) -> float:
    if value in (None, ""):
        return 0.5
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ImportFailed(f"importance {value!r} is not a number", line=line) from None
    if not 0 <= number <= 1:
        raise ImportFailed(f"importance {number} is outside 0..1", line=line)
    return number


def _text(value, line: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ImportFailed("the memory has no text", line=line)
    if len(value) > settings.MEMORY_MAX_TEXT_CHARS:
        raise ImportFailed(f"the text is longer than {settings.MEMORY_MAX_TEXT_CHARS} characters", line=line)
    return value.strip()


def _tags(value, line: int) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, str):  # Postgres array literal {a,b} from a CSV dump, or JSON
        value = _json(value, line, "tags", None) if value.startswith("[") else \
            [t.strip().strip('"') for t in value.strip("{}").split(",") if t.strip()]
    if not isinstance(value, list):
        raise ImportFailed("tags must be a list", line=line)
    return [str(t)[:100] for t in value]


def _vector(value, line: int) -> list[float] | None:
    payload = _json(value, line, "embedding", None)
    if payload is None:
        return None
    if isinstance(payload, dict):
        payload = payload.get("vector")
    if isinstance(payload, str):  # pgvector text form "[0.1,0.2]"
        payload = _json(payload, line, "embedding", None)
    if not isinstance(payload, list) or not all(isinstance(x, (int, float)) for x in payload):
        raise ImportFailed("embedding must be a list of numbers or {\"vector\": [...]}", line=line)
    return [float(x) for x in payload]


def map_memory_items(row: dict, vector_row: dict | None, line: int) -> ImportRecord:
    """memory_items (+ memory_vector_store) of the older schema."""
    old_type = str(row.get("type") or "fact").lower()
    data = _json(row.get("data"), line, "data", {}) or {}
    if row.get("id"):
        data = {**data, "imported_id": str(row["id"])}
    status = str(row.get("status", "1"))
    return ImportRecord(line=line, spec=MemorySpec(
        user_id=_user(row.get("user_id"), line), text=_text(row.get("text"), line),
        memory_type=OLD_TYPES.get(old_type, MemoryType.FACT), importance=_importance(row.get("importance"), line),
        tags=_tags(row.get("tags"), line), data=data,
        status=MemoryStatus.ACTIVE if status in ("1", "true", "True") else MemoryStatus.ARCHIVED,
        valid_at=_when(row.get("created_at"), line, "created_at"),
        session_id=str(row.get("source_session_id") or ""), source_session_id=str(row.get("source_session_id") or ""),
    ), vector=_vector(vector_row.get("embedding"), line) if vector_row else None,
        vector_model=str((_json(vector_row.get("metadata"), line, "metadata", {}) or {}).get("model", ""))
        if vector_row else "")


def map_agent_memory(row: dict, keywords: list[dict], line: int) -> ImportRecord:
    """agent_memories + agent_memory_keywords: summary and content become one text, keywords become tags."""
    summary, content = (row.get("summary") or "").strip(), (row.get("content") or "").strip()
    text = content if not summary or summary in content else f"{summary}\n\n{content}" if content else summary
    metadata = _json(row.get("content_metadata"), line, "content_metadata", {}) or {}
    active = str(row.get("is_active", "true")).lower() in ("1", "true", "t")
    ordered = sorted(keywords, key=lambda k: -float(k.get("weight") or 1.0))
    return ImportRecord(line=line, spec=MemorySpec(
        user_id=_user(row.get("user_id"), line), text=_text(text, line),
        memory_type=OLD_TYPES.get(str(row.get("memory_type") or "fact").lower(), MemoryType.FACT),
        tags=[str(k["keyword"])[:100] for k in ordered if k.get("keyword")][:50],
        data={**metadata, "memory_key": row.get("memory_key"),
              "keyword_weights": {k["keyword"]: float(k.get("weight") or 1.0) for k in ordered if k.get("keyword")}},
        agent_id=str(row.get("agent_id") or ""), session_id=str(row.get("thread_id") or ""),
        status=MemoryStatus.ACTIVE if active else MemoryStatus.ARCHIVED,
        valid_at=_when(row.get("created_at"), line, "created_at"),
    ), vector=_vector(row.get("embedding"), line), vector_model="")


def map_mem0(row: dict, line: int) -> ImportRecord:
    """Mem0's export: {id, memory, user_id, agent_id, metadata, created_at, updated_at}."""
    metadata = row.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ImportFailed("metadata must be an object", line=line)
    return ImportRecord(line=line, spec=MemorySpec(
        user_id=_user(row.get("user_id"), line), text=_text(row.get("memory"), line),
        memory_type=OLD_TYPES.get(str(metadata.get("type", "fact")).lower(), MemoryType.FACT),
        tags=_tags(metadata.get("tags"), line),
        data={**metadata, "mem0_id": row.get("id"), "mem0_updated_at": row.get("updated_at")},
        agent_id=str(row.get("agent_id") or ""), valid_at=_when(row.get("created_at"), line, "created_at"),
    ))


def map_jsonl(row: dict, line: int) -> ImportRecord:
    """Our own export (see export_rows)."""
    if row.get("memory_type") not in MemoryType.values:
        raise ImportFailed(f"memory_type {row.get('memory_type')!r} is unknown", line=line)
    return ImportRecord(line=line, spec=MemorySpec(
        user_id=_user(row.get("user_id"), line), text=_text(row.get("text"), line), memory_type=row["memory_type"],
        importance=_importance(row.get("importance"), line), confidence=float(row.get("confidence", 1.0)),
        tags=_tags(row.get("tags"), line), data=row.get("data") or {}, agent_id=row.get("agent_id") or "",
        session_id=row.get("session_id") or "", group_id=row.get("group_id") or "",
        valid_at=_when(row.get("valid_at"), line, "valid_at"),
        status=str(row["status"]) if row.get("status") in (MemoryStatus.ACTIVE, MemoryStatus.ARCHIVED)
        else MemoryStatus.ACTIVE,
        source_session_id=(row.get("sources") or [{}])[0].get("session_id", "") if row.get("sources") else "",
        source_message_indices=(row.get("sources") or [{}])[0].get("message_indices", []) if row.get("sources")
        else [],
    ), vector=None)


def _user(value, line: int) -> str:
    if value in (None, ""):
        raise ImportFailed("user_id is missing", line=line)
    return str(value)[:255]


# --------------------------------------------------------------------------- readers


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """A JSON-lines file's rows with their line numbers, blank lines skipped (every importer's JSONL)."""
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                try:
                    yield number, json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise ImportFailed(f"{path.name} is not valid JSON ({exc.msg})", line=number) from None


def _read_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, row) from a .csv, .jsonl or .json (list) file."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            for number, row in enumerate(csv.DictReader(handle), start=2):
                yield number, row
    elif suffix == ".jsonl":
        yield from jsonl_rows(path)
    elif suffix == ".json":
        try:
            rows = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ImportFailed(f"not valid JSON ({exc.msg})", line=exc.lineno) from None
        if not isinstance(rows, list):
            raise ImportFailed("expected a JSON list of memories")
        for number, row in enumerate(rows, start=1):
            yield number, row
    else:
        raise ImportFailed(f"unsupported file type {suffix!r} (csv, jsonl or json)")


def _companion(path: Path, name: str) -> Path | None:
    """The second table's dump next to the first (memory_items.csv -> memory_vector_store.csv)."""
    for suffix in (path.suffix, ".csv", ".jsonl"):
        candidate = path.with_name(f"{name}{suffix}")
        if candidate.exists():
            return candidate
    return None


def read_records(source: str, *, path: Path | None = None, dsn: str | None = None) -> Iterator[ImportRecord]:
    if source not in SOURCES:
        raise ImportFailed(f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    if dsn:
        yield from _read_dsn(source, dsn)
        return
    assert path is not None
    if not path.exists():
        raise ImportFailed(f"{path} does not exist")
    if source == "memory-items":
        companion = _companion(path, "memory_vector_store")
        vectors = {str(r.get("item_id")): r for _, r in _read_rows(companion)} if companion else {}
        for number, row in _read_rows(path):
            yield map_memory_items(row, vectors.get(str(row.get("id"))), number)
    elif source == "agent-memories":
        companion = _companion(path, "agent_memory_keywords")
        keywords: dict[str, list[dict]] = {}
        for _, row in _read_rows(companion) if companion else []:
            keywords.setdefault(str(row.get("memory_key")), []).append(row)
        for number, row in _read_rows(path):
            yield map_agent_memory(row, keywords.get(str(row.get("memory_key")), []), number)
    elif source == "mem0":
        for number, row in _read_rows(path):
            yield map_mem0(row, number)
    else:
        for number, row in _read_rows(path):
            yield map_jsonl(row, number)


def _read_dsn(source: str, dsn: str) -> Iterator[ImportRecord]:
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        if source == "memory-items":
            vectors = {str(r["item_id"]): r for r in conn.execute(
                "SELECT item_id, embedding::text AS embedding, metadata::text AS metadata FROM memory_vector_store")}
            rows = conn.execute("SELECT id, user_id, type, text, data::text AS data, importance, tags, "
                                "source_session_id, dedupe_hash, status, created_at FROM memory_items ORDER BY "
                                "created_at, id")
            for number, row in enumerate(rows, start=1):
                yield map_memory_items(row, vectors.get(str(row["id"])), number)
        elif source == "agent-memories":
            keywords: dict[str, list[dict]] = {}
            for row in conn.execute("SELECT memory_key, keyword, weight FROM agent_memory_keywords"):
                keywords.setdefault(row["memory_key"], []).append(row)
            rows = conn.execute("SELECT id, user_id, agent_id, thread_id, memory_key, memory_type, summary, content, "
                                "content_metadata::text AS content_metadata, embedding::text AS embedding, "
                                "created_at, is_active FROM agent_memories ORDER BY created_at, id")
            for number, row in enumerate(rows, start=1):
                yield map_agent_memory(row, keywords.get(row["memory_key"], []), number)
        else:
            raise ImportFailed(f"--dsn is supported for memory-items and agent-memories, not {source}")


# --------------------------------------------------------------------------- checkpoints


def checkpoint_path(tenant: str, source: str, where: str) -> Path:
    digest = hashlib.sha256(f"{tenant}|{source}|{where}".encode()).hexdigest()[:16]
    return settings.VAR_DIR / "checkpoints" / f"import-{digest}.json"


def read_checkpoint(path: Path) -> int:
    try:
        return int(json.loads(path.read_text())["done"])
    except (FileNotFoundError, KeyError, ValueError):
        return 0


def write_checkpoint(path: Path, done: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"done": done}))
    temporary.replace(path)


# --------------------------------------------------------------------------- the import


def import_records(*, tenant: Tenant, records: Iterator[ImportRecord], actor: str, batch_size: int = 500,
                   dry_run: bool = False, checkpoint: Path | None = None, progress=None,
                   embedder: Embedder | None = None) -> ImportReport:
    """Write records in batches; resume after the last committed batch."""
    embedder = embedder or get_embedder()
    report = ImportReport(dry_run=dry_run)
    already = read_checkpoint(checkpoint) if checkpoint and not dry_run else 0
    batch: list[ImportRecord] = []
    for record in records:
        report.read += 1
        if report.read <= already:
            report.skipped_resumed += 1
            continue
        batch.append(record)
        if len(batch) >= batch_size:
            _write_batch(tenant, batch, actor, dry_run, report, embedder)
            batch = []
            if checkpoint and not dry_run:
                write_checkpoint(checkpoint, report.read)
            if progress:
                progress(report)
    if batch:
        _write_batch(tenant, batch, actor, dry_run, report, embedder)
    if checkpoint and not dry_run:
        checkpoint.unlink(missing_ok=True)  # finished: a new run starts from the top (and NOOPs)
    if not dry_run:
        refresh_planner_statistics()
    if progress:
        progress(report)
    return report


def _screen(batch: list[ImportRecord]) -> tuple[list[ImportRecord], list[tuple[ImportRecord, HoldDecision]]]:
    """An import passes the gate every door passes: ids carrying sensitive data stop the run naming the line
    (use pseudonymous ids); a record whose text, tags or data carry it waits for review, not written."""
    passed, held = [], []
    for record in batch:
        try:
            refuse_sensitive_identifiers({name: getattr(record.spec, name) for name in ID_FIELDS})
        except InvalidOperation as exc:
            raise ImportFailed(str(exc), line=record.line) from None
        hold = save_hold(record.spec)
        if hold.held:
            held.append((record, hold))
        else:
            passed.append(record)
    return passed, held


def _hold_for_review(tenant: Tenant, held: list[tuple[ImportRecord, HoldDecision]], actor: str) -> None:
    """Held records as review candidates, once: a second run of the same import finds them pending."""
    for record, hold in held:
        spec = record.spec
        if Candidate.objects.filter(tenant=tenant, user_id=spec.user_id, text=spec.text,
                                    status=CandidateStatus.PENDING).exists():
            continue
        review_candidate_create(tenant=tenant, user_id=spec.user_id, operation=CandidateOperation.ADD, spec=spec,
                                target=None, reasons=hold.reasons, api_key_id=None,
                                detail=f"{hold.detail} (imported by {actor}, line {record.line})")


def _write_batch(tenant: Tenant, batch: list[ImportRecord], actor: str, dry_run: bool, report: ImportReport,
                 embedder: Embedder) -> None:
    report.batches += 1
    batch, held = _screen(batch)
    report.held += len(held)
    if dry_run:
        report.added += len(batch)
        return
    with transaction.atomic():
        users_write_lock(tenant.id, {r.spec.user_id for r in batch} | {r.spec.user_id for r, _ in held})
        _hold_for_review(tenant, held, actor)
        results = memory_create_batch(tenant=tenant, specs=[r.spec for r in batch], actor=actor,
                                      enqueue_embedding=False, count_for_reflection=False) if batch else []
        keep: list = []
        reembed: list = []
        for record, result in zip(batch, results, strict=True):
            report.added += result.operation == "ADD"
            report.noop += result.operation == "NOOP"
            report.updated += result.operation == "UPDATE"
            if result.operation != "ADD":
                continue
            usable = (record.vector is not None and len(record.vector) == embedder.dimensions
                      and record.vector_model in ("", embedder.name))
            (keep if usable else reembed).append((result.memory, record))
        if keep:
            store_vectors([(m, np.asarray(r.vector, dtype=np.float32)) for m, r in keep], embedder)
            report.vectors_kept += len(keep)
    if reembed:
        embed_items([str(m.id) for m, _ in reembed], embedder=embedder)
        report.reembedded += len(reembed)


# --------------------------------------------------------------------------- export


def export_rows(*, tenant: Tenant, user_id: str | None = None, include_history: bool = False,
                agent_id: str | None = None, session_id: str | None = None, group_id: str | None = None,
                ) -> Iterator[dict]:
    """One dict per current memory, with its sources (and history), ready for JSONL.
    Scopes follow search's rules (memories.search.scope_filter)."""
    items = MemoryItem.objects.filter(vocabulary.is_latest_version(), tenant=tenant).exclude(
        status=MemoryStatus.REJECTED).order_by("created_at", "id").defer("search_vector")
    items = items.filter(scope_filter(user_id=user_id or None, agent_id=agent_id, session_id=session_id,
                                      group_id=group_id))
    # Sources come per chunk of 1,000 memories, not one query per memory.
    for memory in items.prefetch_related("sources").iterator(chunk_size=1000):
        row = {"id": str(memory.id), "user_id": memory.user_id, "agent_id": memory.agent_id,
               "session_id": memory.session_id, "group_id": memory.group_id, "memory_type": memory.memory_type,
               "text": memory.text, "data": memory.data, "tags": list(memory.tags), "importance": memory.importance,
               "confidence": memory.confidence, "status": memory.status, "version": memory.version,
               "valid_at": _iso(memory.valid_at), "invalid_at": _iso(memory.invalid_at),
               "created_at": _iso(memory.created_at), "archived_at": _iso(memory.archived_at),
               "expires_at": _iso(memory.expires_at),
               "content_hash": memory.content_hash,
               "sources": [{"session_id": s.session_id, "message_indices": s.message_indices}
                           for s in memory.sources.all()]}
        if include_history:
            row["history"] = [{"event": h.event, "actor": h.actor, "old_text": h.old_text, "new_text": h.new_text,
                               "reason": h.reason, "created_at": _iso(h.created_at)}
                              for h in MemoryHistory.objects.filter(memory_id=memory.id).order_by("created_at")]
        yield row


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None

