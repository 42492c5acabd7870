"""A conversation job's states once it was sent: running again, failed with the reason (counted by cause
in the metrics), its raw turns emptied after the retention period. What a job does is memories.ingestion;
what ends or keeps it is here, for the tasks and the sweeps."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from memories import metrics
from memories.extraction import ExtractionError
from memories.models import ConversationJob, JobStatus
from memories.transient import transient_cause


def conversation_turns_expire(*, now: datetime | None = None, batch: int = 1000) -> int:
    """Empty the raw turns of jobs finished more than CONVERSATION_RAW_RETENTION_DAYS ago (0: keep
    them): what a conversation said stays only as the memories and episodes it left (which have
    their own expiry and review), never as a second, unreviewed copy kept for as long as the user
    exists. The job keeps its status, outcome, counts and warnings; the memories keep their sources.
    Returns the jobs emptied (at most `batch` a run; the beat job comes back daily)."""
    days = settings.CONVERSATION_RAW_RETENTION_DAYS
    if days <= 0:
        return 0
    now = now or timezone.now()
    due = (ConversationJob.objects.filter(status__in=[JobStatus.DONE, JobStatus.FAILED], turns_dropped_at__isnull=True,
                                          finished_at__lt=now - timedelta(days=days))
           .order_by("finished_at").values_list("id", flat=True)[:batch])
    return ConversationJob.objects.filter(id__in=list(due)).update(messages=[], turns_dropped_at=now)


def conversation_job_mark(job_id: str, status: str, error: str = "") -> None:
    ConversationJob.objects.filter(id=job_id).exclude(status=JobStatus.DONE).update(
        status=status, error=error[:4000], finished_at=timezone.now() if status == JobStatus.FAILED else None
    )


def job_failure_reason(exc: Exception) -> str:
    if isinstance(exc, ExtractionError):
        return f"extraction failed: {exc}"
    return f"{type(exc).__name__}: {exc}"


def job_failure_cause(exc: BaseException) -> str:
    """The label a failed job is counted under (metrics, the dashboard): a transient database failure
    that kept coming (memories.transient), the job's time limit, the extractor or embedder, or a crash."""
    transient = transient_cause(exc.__cause__ if isinstance(exc, ExtractionError) and exc.__cause__ else exc)
    if transient:
        return transient
    if isinstance(exc, ExtractionError):
        if "CONVERSATION_JOB_TIME_LIMIT" in str(exc):
            return "time limit"
        return "embedding" if str(exc).startswith("embedding failed") else "extraction"
    return "crash"


def conversation_job_fail(job_id: str, exc: Exception) -> None:
    """The job ends `failed` with the reason (its turns kept for `POST /jobs/{id}/retry`), counted by cause."""
    conversation_job_mark(job_id, JobStatus.FAILED, job_failure_reason(exc))
    metrics.observe_job_failed(cause=job_failure_cause(exc))
