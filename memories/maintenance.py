"""Long-running upkeep: backfills and switching the embedding model without
an outage. Each works in batches and only ever picks up what is still
missing, so an interrupted run resumes by running again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memories import vocabulary
from memories.embedding import (
    LOCAL_MODELS,
    EmbedderSpec,
    EmbeddingError,
    active_spec,
    build_embedder,
    local_model_name,
    reset_embedders,
)
from memories.models import ActiveEmbedding, EmbeddingState, MemoryItem, MemorySource, MemoryVector
from memories.vectors import embed_items
from memories.writing import (
    memory_add_session_sources,
    memory_refresh_content_hash,
    memory_refresh_search_vectors,
)

logger = logging.getLogger(__name__)

BACKFILLS = ("embeddings", "hashes", "search-vectors", "sources")
Progress = Callable[[int, int], None] | None


class CoverageIncomplete(Exception):
    pass


@dataclass
class BatchReport:
    total: int = 0
    done: int = 0
    failed: int = 0


def _throttle(rate: float, started: float, batches: int) -> None:
    if rate > 0:
        wait = batches / rate - (time.monotonic() - started)
        if wait > 0:
            time.sleep(wait)


def _missing_vectors(model: str):
    """Current memories with no vector under `model`."""
    has_vector = MemoryVector.objects.filter(item_id=OuterRef("pk"), model=model)
    return MemoryItem.objects.filter(vocabulary.is_embeddable()).filter(~Exists(has_vector))


def embeddings_sweep(*, older_than_seconds: int | None = None, limit: int | None = None) -> int:
    """Embed current memories of the active model that have no vector and are older than
    EMBEDDING_SWEEP_AFTER (younger ones are still in their task's hands): the beat job `embed-pending`.
    Returns how many were embedded; a failure leaves the rows marked for the next sweep."""


    older = settings.EMBEDDING_SWEEP_AFTER if older_than_seconds is None else older_than_seconds
    embedder = build_embedder(active_spec())
    waiting = (_missing_vectors(embedder.name).filter(created_at__lte=timezone.now() - timedelta(seconds=older))
               .order_by("created_at").values_list("pk", flat=True)[:limit or settings.EMBEDDING_SWEEP_BATCH])
    ids = [str(i) for i in waiting]
    if not ids:
        return 0
    try:
        return embed_items(ids, embedder=embedder).embedded
    except EmbeddingError:
        logger.warning("embedding sweep: %d memories still waiting for a vector", len(ids))
        return 0


def backfill(*, what: str, batch_size: int = 200, rate: float = 0.0, dry_run: bool = False,
             progress: Progress = None) -> BatchReport:
    if what == "embeddings":
        embedder = build_embedder(active_spec())
        missing = _missing_vectors(embedder.name)
        return _in_batches(missing, batch_size, rate, dry_run, progress,
                           lambda ids: embed_items([str(i) for i in ids], embedder=embedder))
    if what == "hashes":
        def fix_hashes(ids):
            for memory_id in ids:
                memory_refresh_content_hash(memory_id=memory_id)
        return _in_batches(MemoryItem.objects.all(), batch_size, rate, dry_run, progress, fix_hashes)
    if what == "search-vectors":
        def fill(ids):
            memory_refresh_search_vectors(memory_ids=ids)
        return _in_batches(MemoryItem.objects.filter(search_vector__isnull=True), batch_size, rate, dry_run,
                           progress, fill)
    if what == "sources":
        has_source = MemorySource.objects.filter(item_id=OuterRef("pk"))
        missing = MemoryItem.objects.exclude(session_id="").filter(~Exists(has_source))

        def add_sources(ids):
            memory_add_session_sources(memory_ids=ids)
        return _in_batches(missing, batch_size, rate, dry_run, progress, add_sources)
    raise ValueError(f"unknown backfill {what!r}")


def _in_batches(queryset, batch_size: int, rate: float, dry_run: bool, progress: Progress, work) -> BatchReport:
    """Walk ids in primary-key order (stable across restarts) and apply `work` per batch."""
    report = BatchReport(total=queryset.count())
    if dry_run:
        return report
    started, batches, last = time.monotonic(), 0, None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        ids = list(page.values_list("pk", flat=True)[:batch_size])
        if not ids:
            return report
        try:
            with transaction.atomic():
                work(ids)
            report.done += len(ids)
        except EmbeddingError:
            report.failed += len(ids)  # marked failed on the rows; a later run retries them
        last, batches = ids[-1], batches + 1
        if progress:
            progress(report.done, report.total)
        _throttle(rate, started, batches)


# --------------------------------------------------------------------------- switching models


def spec_for_model(model: str, *, provider: str = "", dimensions: int = 0, base_url: str = "") -> EmbedderSpec:
    if not provider:
        provider = "local" if model in LOCAL_MODELS else "hash" if model.startswith("hash-") else "openai"
    if provider == "hash":
        dimensions = dimensions or int(model.split("-")[1])
    elif provider == "local":
        try:
            model = local_model_name(model)
        except EmbeddingError as exc:
            raise CoverageIncomplete(str(exc)) from exc
        dimensions = LOCAL_MODELS[model]
    elif not dimensions:
        raise CoverageIncomplete("--dimensions is required for a remote model")
    return EmbedderSpec(provider, model, dimensions, base_url)


@dataclass
class ReembedReport:
    embedded: int
    covered: int
    total: int


def coverage(model: str) -> tuple[int, int]:
    current = MemoryItem.objects.filter(vocabulary.is_embeddable())
    return current.count() - _missing_vectors(model).count(), current.count()


def reembed(*, spec: EmbedderSpec, batch_size: int = 200, dry_run: bool = False,
            progress: Progress = None) -> ReembedReport:
    """Embed every current memory lacking a vector of `spec`'s model. The
    memories' embedding_state keeps describing the active model, so it is
    left alone here."""
    embedder = build_embedder(spec)  # embed_items creates the model's index with its first vectors
    done = BatchReport()
    if not dry_run:
        done = _in_batches(_missing_vectors(embedder.name), batch_size, 0.0, False, progress,
                           lambda ids: embed_items([str(i) for i in ids], embedder=embedder, mark_state=False))
    covered, total = coverage(embedder.name)
    return ReembedReport(embedded=done.done, covered=covered, total=total)


def activate_model(spec: EmbedderSpec) -> None:
    """Switch search and new writes to the model, only once every current memory has its vectors."""
    embedder = build_embedder(spec)
    covered, total = coverage(embedder.name)
    if covered < total:
        raise CoverageIncomplete(f"{embedder.name} covers {covered} of {total} memories; run reembed again "
                                 "before --activate")
    with transaction.atomic():
        ActiveEmbedding.objects.all().delete()
        ActiveEmbedding.objects.create(provider=spec.provider, model=embedder.name, dimensions=embedder.dimensions,
                                       base_url=spec.base_url)
    reset_embedders()


def drop_other_models(spec: EmbedderSpec) -> int:
    """Remove vectors of every model but the active one (refused unless `spec` is active)."""
    embedder = build_embedder(spec)
    if build_embedder(active_spec()).name != embedder.name:
        raise CoverageIncomplete(f"{embedder.name} is not the active model; --activate it first")
    deleted, _ = MemoryVector.objects.exclude(model=embedder.name).delete()
    has_vector = MemoryVector.objects.filter(item_id=OuterRef("pk"), model=embedder.name)
    MemoryItem.objects.exclude(embedding_state=EmbeddingState.DONE).filter(Exists(has_vector)).update(
        embedding_state=EmbeddingState.DONE)
    return deleted
