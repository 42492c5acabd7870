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
from memories.transient import CONNECTION, DEADLOCK, SERIALIZATION


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


# What a failed job's stored error says, first match wins, -> the cause it is counted under (metrics, the
# dashboard). Transient database failures that kept coming are "database <cause> N times" (ingestion).
FAILURE_CAUSES: tuple[tuple[str, str], ...] = (
    ("database deadlock", DEADLOCK), ("deadlock detected", DEADLOCK),
    ("database serialization failure", SERIALIZATION), ("could not serialize", SERIALIZATION),
    ("database connection lost", CONNECTION), ("CONVERSATION_JOB_TIME_LIMIT", "time limit"),
    ("the worker running it stopped", "worker stopped"), ("extraction failed: embedding failed", "embedding"),
    ("extraction failed", "extraction"),
)
BROKEN_CONNECTION = ("OperationalError: ", "InterfaceError: ")


def failure_cause(error: str) -> str:
    """The cause a failed job is counted under, read off its stored error: a transient database failure
    that kept coming (memories.transient), the job's time limit, a worker that died, the extractor or the
    embedder, or a crash (any other exception)."""
    for words, cause in FAILURE_CAUSES:
        if words in error:
            return cause
    if error.startswith(BROKEN_CONNECTION) and "connection" in error:
        return CONNECTION
    return "crash"


def conversation_job_fail(job_id: str, exc: Exception) -> None:
    """The job ends `failed` with the reason (its turns kept for `POST /jobs/{id}/retry`), counted by cause."""
    reason = job_failure_reason(exc)
    conversation_job_mark(job_id, JobStatus.FAILED, reason)
    metrics.observe_job_failed(cause=failure_cause(reason))


FAILED_JOBS_READ = 5000  # the newest failed jobs whose errors a breakdown reads (a scrape, the dashboard)


def failed_jobs_by_cause(tenant_id: int | None = None) -> dict[str, int]:
    """Failed conversation jobs by the cause their stored error says (newest FAILED_JOBS_READ; tenant None:
    every tenant): the dashboard's and /metrics' breakdown of what an operator has to look at."""
    scope = {"tenant_id": tenant_id} if tenant_id is not None else {}
    counts: dict[str, int] = {}
    for error in (ConversationJob.objects.filter(status=JobStatus.FAILED, **scope).order_by("-finished_at")
                  .values_list("error", flat=True)[:FAILED_JOBS_READ]):
        cause = failure_cause(error)
        counts[cause] = counts.get(cause, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
