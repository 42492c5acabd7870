"""Celery tasks: thin wrappers that re-fetch by id and call a service."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from django.conf import settings
from django.db import Error

from memories.access import flush_access_counts as flush
from memories.embedding import EmbeddingError, get_embedder
from memories.emotion import emotions_fill
from memories.extraction import ExtractionError
from memories.ingestion import conversation_job_run
from memories.job_states import conversation_job_fail, conversation_job_mark, conversation_turns_expire
from memories.maintenance import embeddings_sweep
from memories.models import ConversationJob, JobStatus
from memories.queue import holding_work
from memories.reclaim import jobs_reclaim
from memories.transient import transient_cause
from memories.vectors import EMBEDDING_TASK_COMPANIONS, embed_waiting, mark_embedding_failed
from memories.writing import memories_archive_expired

logger = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=5, acks_late=True)
def embed_memories(self, item_ids: list[str]) -> dict:
    """Embed memories after commit, with up to EMBEDDING_TASK_COMPANIONS others still waiting (on a
    worker; in-process, a request that saved one memory embeds only it). Memories whose vectors already
    hold their text are skipped: a companion batch embedded them, or the task is a redelivery."""
    try:
        report = embed_waiting(item_ids, companions=0 if self.request.is_eager else EMBEDDING_TASK_COMPANIONS)
    except Exception as exc:
        if not isinstance(exc, EmbeddingError):
            logger.exception("embedding task crashed")
            mark_embedding_failed(item_ids, exc)
        if self.request.is_eager:
            # In-process mode: leave the rows marked failed for `backfill` rather
            # than failing the request that saved them.
            logger.warning("embedding failed for %d memories: %s", len(item_ids), exc)
            return {"embedded": 0, "failed": len(item_ids)}
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 300)) from exc
    # Saves' emotions: read here, not in the request, from the vectors just made (companions' too: their own
    # tasks then find them fresh and read).
    emotions = emotions_fill(list(dict.fromkeys([*item_ids, *report.whole])), vectors=report.whole,
                             embedder=get_embedder()) if settings.MEMORY_EMOTION else 0
    return {"embedded": report.embedded, "vectors": report.vectors, "fresh": report.fresh, "emotions": emotions}


# The job stops itself at CONVERSATION_JOB_TIME_LIMIT; the worker's limits catch one stuck in a call.
@shared_task(bind=True, acks_late=True, max_retries=None, soft_time_limit=settings.CONVERSATION_JOB_TIME_LIMIT + 30,
             time_limit=settings.CONVERSATION_JOB_TIME_LIMIT + 60)
def run_conversation_job(self, job_id: str) -> dict:
    """Run one conversation job. Retryable extraction failures (timeout, 429,
    5xx, bad JSON) are retried with exponential backoff up to
    EXTRACTION_MAX_RETRIES; then the job fails with the reason and keeps its
    conversation for `POST /jobs/{id}/retry`. Idempotent on redelivery."""
    with holding_work("job", job_id) as mine:  # the reclaim sweep knows a live worker runs it
        # In-process (`make run`: one PostgreSQL, no pooler) a held lock means another live worker runs
        # it. With a broker the lock only informs the sweep (behind PgBouncer in transaction mode a
        # session lock is not to be trusted): the delivery runs, and a job is applied once whatever runs it.
        if not mine and self.request.is_eager:
            logger.info("conversation job %s is running in another worker; this delivery skipped", job_id)
            return {"status": "running elsewhere"}
        return _run_conversation_job(self, job_id)


def _run_conversation_job(self, job_id: str) -> dict:
    attempt = self.request.retries
    while True:
        try:
            job = conversation_job_run(job_id)
            return {"status": job.status, "counts": job.counts}
        except ConversationJob.DoesNotExist:
            # Erased with its user while it waited, or a message left on a shared broker: nothing to do.
            logger.warning("conversation job %s no longer exists; skipped", job_id)
            return {"status": "missing"}
        except (ExtractionError, Error) as exc:
            # A database failure outside the job's transaction (reading, marking it running) that a retry can
            # cure is retried like a retryable extraction error; any other is a crash.
            retryable = exc.retryable if isinstance(exc, ExtractionError) else transient_cause(exc) is not None
            if isinstance(exc, Error) and not retryable:
                logger.exception("conversation job %s crashed", job_id)
                conversation_job_fail(job_id, exc)
                raise
            if not retryable or attempt >= settings.EXTRACTION_MAX_RETRIES:
                conversation_job_fail(job_id, exc)
                return {"status": JobStatus.FAILED, "error": str(exc)}
            delay = settings.EXTRACTION_RETRY_BACKOFF * (2 ** attempt)
            conversation_job_mark(job_id, JobStatus.RETRYING, f"attempt {attempt + 1} failed: {exc}")
            if not self.request.is_eager:
                raise self.retry(exc=exc, countdown=delay) from exc
            time.sleep(delay)  # in-process mode: the request waits, still bounded
            attempt += 1
        except Exception as exc:
            logger.exception("conversation job %s crashed", job_id)
            conversation_job_fail(job_id, exc)
            raise


@shared_task
def embed_pending() -> dict:
    """Embed memories left `pending` (a crash between commit and embedding, a broker outage); a beat job."""
    return {"embedded": embeddings_sweep()}


@shared_task
def flush_access_counts() -> dict:
    """Write the buffered read counts (see memories.access); a beat job."""
    return {"updated": flush()}


@shared_task
def archive_expired() -> dict:
    """Archive memories past their expires_at, with history; a beat job (search skips them already)."""
    return {"archived": memories_archive_expired(limit=settings.EXPIRY_BATCH)}


@shared_task
def expire_conversation_turns() -> dict:
    """Empty the raw turns of jobs finished CONVERSATION_RAW_RETENTION_DAYS ago; a daily beat job."""
    return {"jobs_emptied": conversation_turns_expire()}


@shared_task
def reclaim_stuck_work() -> dict:
    """Conversation jobs a dead worker left running (or, with no broker, queued): run again or failed
    with the reason (memories.reclaim); a beat job."""
    return jobs_reclaim()
