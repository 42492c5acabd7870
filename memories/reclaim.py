"""Work a dead worker left behind: conversation jobs reclaimed, run again or failed with the reason.

Under `make run` background work runs on an in-process pool, and a worker process that dies (SIGKILL, out
of memory, a restart) takes its threads with it: the jobs they held stayed `running` for good, retry was
refused, their raw turns outlived the retention period (which counts from `finished_at`), and each held one
of the tenant's pending-job slots. A worker running a job holds an advisory lock on it (queue.holding_work)
that PostgreSQL releases with the worker's session; the sweep (a beat job, every WORK_RECLAIM_INTERVAL)
takes each job `running` longer than WORK_RECLAIM_AFTER whose lock it can take, so no live worker runs it:

- it ran fewer than EXTRACTION_MAX_RETRIES + 1 times: it is queued again (its kept conversation runs anew;
  a job writes in one transaction, so nothing of the lost run was kept);
- else it fails with the reason, finished now: `POST /jobs/{id}/retry` works, the retention period
  applies, and its slot is free.

With no broker, a job `queued` that long was lost with its process's pool (or refused by a full pool): it
is queued again. A delivery that finds the job done or held by a live worker does nothing, so a job
queued twice runs once.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories import metrics, vocabulary
from memories.job_states import failure_cause
from memories.models import ConversationJob, JobStatus
from memories.queue import enqueue, holding_work

logger = logging.getLogger(__name__)

RECLAIM_BATCH = 100  # jobs one sweep looks at


def _eager() -> bool:
    from celery import current_app as app  # the project's app (memory_project/celery.py)

    return bool(app.conf.task_always_eager)


def jobs_reclaim(*, now: datetime | None = None) -> dict[str, int]:
    """Reclaim the conversation jobs a dead worker left (see the module docstring): counts of those queued
    again and those failed."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.WORK_RECLAIM_AFTER)
    stuck = Q(status=JobStatus.RUNNING, started_at__lt=cutoff)
    if _eager():  # with a broker, the broker keeps queued work; here it was in a process's memory
        stuck |= Q(status__in=[JobStatus.QUEUED, JobStatus.RETRYING], last_moved__lt=cutoff)
    found = list(ConversationJob.objects.annotate(last_moved=Coalesce("started_at", "created_at")).filter(stuck)
                 .order_by("last_moved").values_list("id", flat=True)[:RECLAIM_BATCH])
    counts = {"requeued": 0, "failed": 0}
    for job_id in found:
        with holding_work("job", job_id) as free:
            if not free:  # a live worker runs it
                continue
            outcome = _reclaim_one(job_id, now, cutoff)
        if outcome == "requeued":  # sent once the lock is let go, or its worker would find it held
            enqueue(vocabulary.TASK_RUN_CONVERSATION_JOB, str(job_id), background=True)
        if outcome:
            counts[outcome] += 1
    return counts


def _reclaim_one(job_id: uuid.UUID, now: datetime, cutoff: datetime) -> str:
    with transaction.atomic():
        job = ConversationJob.objects.select_for_update().filter(id=job_id).first()
        if job is None or job.status not in vocabulary.PENDING_JOB_STATUSES or \
                (job.started_at or job.created_at) >= cutoff:
            return ""
        seconds = int((now - (job.started_at or job.created_at)).total_seconds())
        if job.status == JobStatus.RUNNING and job.attempts > settings.EXTRACTION_MAX_RETRIES:
            job.status, job.finished_at = JobStatus.FAILED, now
            job.error = (f"the worker running it stopped ({job.attempts} runs, the last {seconds} s ago, reclaimed "
                         "by the sweep); POST /jobs/{id}/retry runs it again")
            job.save(update_fields=["status", "error", "finished_at"])
            logger.warning("conversation job %s failed: its worker stopped %s times", job.id, job.attempts)
            metrics.observe_job_failed(cause=failure_cause(job.error))
            return "failed"
        was = job.status
        job.status, job.started_at = JobStatus.QUEUED, now  # started_at: when the sweep moved it last
        job.error = (f"reclaimed by the sweep: {was} for {seconds} s with no live worker; queued again "
                     f"(run {job.attempts + 1})")
        job.save(update_fields=["status", "error", "started_at"])
        logger.warning("conversation job %s reclaimed: %s for %s s with no live worker", job.id, was, seconds)
        return "requeued"
