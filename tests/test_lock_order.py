"""Issue 51: jobs of the same people never deadlock, and a transient failure is run again.

- which database failures a retry cures (a table of the errors Django hands over);
- a real deadlock between two transactions, cured by running the victim again;
- the lock-order check: a user's write lock asked for after the transaction wrote a row is refused, as is a
  memory row written before its user's lock (the keyword-statistics trigger);
- a job for A and B and a job for B and A, run side by side in threads, both finish;
- a job whose transaction is a deadlock victim is run again and finishes with its memories, once.
"""

from __future__ import annotations

import threading
import time

import psycopg.errors
import pytest
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connection, transaction

from memories.extraction import ExtractionError
from memories.ingestion import conversation_job_create, conversation_job_run
from memories.job_states import failure_cause, job_failure_reason
from memories.models import ConversationJob, JobStatus, MemoryItem, Tenant
from memories.transient import CONNECTION, DEADLOCK, SERIALIZATION, backoff_seconds, run_retrying, transient_cause
from memories.writing import LockOrderViolation, MemorySpec, memory_create, users_write_lock


def _wrapped(django_error: type[DatabaseError], driver_error: Exception) -> DatabaseError:
    """As Django hands a driver's error over: its own class, the driver's error as the cause."""
    error = django_error(str(driver_error))
    error.__cause__ = driver_error
    return error


@pytest.mark.parametrize(("error", "cause"), [
    (_wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")), DEADLOCK),
    (_wrapped(OperationalError, psycopg.errors.SerializationFailure("could not serialize")), SERIALIZATION),
    (_wrapped(OperationalError, psycopg.errors.AdminShutdown("terminating connection")), CONNECTION),
    (_wrapped(OperationalError, psycopg.errors.ConnectionFailure("connection failure")), CONNECTION),
    (_wrapped(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")), CONNECTION),
    (_wrapped(InterfaceError, psycopg.InterfaceError("the connection is closed")), CONNECTION),
    (_wrapped(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")), None),
    (_wrapped(DatabaseError, psycopg.errors.RaiseException("memory rows written before the write lock")), None),
    (_wrapped(OperationalError, psycopg.errors.QueryCanceled("canceling statement due to statement timeout")), None),
    (ValueError("not a database error"), None),
])
def test_which_failures_a_retry_cures(error, cause):
    assert transient_cause(error) == cause


@pytest.mark.parametrize(("error", "cause"), [
    (ExtractionError("database deadlock 7 times running the job: deadlock detected", retryable=True), DEADLOCK),
    (ExtractionError("database serialization failure 7 times running the job", retryable=True), SERIALIZATION),
    (ExtractionError("database connection lost 7 times running the job", retryable=True), CONNECTION),
    (ExtractionError("the job took longer than 120 s (CONVERSATION_JOB_TIME_LIMIT)", retryable=False), "time limit"),
    (ExtractionError("embedding failed: TimeoutError", retryable=True), "embedding"),
    (ExtractionError("LLM answered 500; connection reset", retryable=True), "extraction"),
    (_wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")), DEADLOCK),
    (_wrapped(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")), CONNECTION),
    (RuntimeError("a bug"), "crash"),
])
def test_a_failed_job_is_counted_by_the_cause_its_stored_error_says(error, cause):
    assert failure_cause(job_failure_reason(error)) == cause


def test_a_job_the_sweep_failed_is_counted_as_its_worker_stopping():
    assert failure_cause("the worker running it stopped (4 runs, the last 301 s ago, reclaimed by the sweep)") == \
        "worker stopped"


@pytest.mark.parametrize("attempt", range(8))
def test_backoff_doubles_with_jitter_under_a_cap(attempt):
    ceiling = min(2.0, 0.1 * 2 ** attempt)
    waits = [backoff_seconds(attempt, base=0.1, cap=2.0) for _ in range(50)]
    assert all(ceiling / 2 <= w <= ceiling for w in waits)
    assert len(set(waits)) > 1  # two victims do not come back in step


@pytest.mark.parametrize(("error", "runs_expected"), [
    (_wrapped(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")), 1),  # permanent: at once
    (_wrapped(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")), 4),  # 3 retries, then raised
], ids=["permanent", "transient that keeps coming"])
def test_a_failure_is_raised_at_once_or_after_the_retries(error, runs_expected):
    runs = []

    def work():
        runs.append(1)
        raise error

    with pytest.raises(type(error)):
        run_retrying(work, attempts=3, base=0.001)
    assert len(runs) == runs_expected


@pytest.mark.django_db(transaction=True)
def test_a_real_deadlock_victim_is_run_again_and_both_commit():
    """Two transactions lock two users' rows in opposite orders (the shape issue 51 found): PostgreSQL kills
    one; run_retrying runs it again and both finish."""
    tenant = Tenant.objects.create(name="deadlock")
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS lock_order_probe (id int PRIMARY KEY, n int)")
        cursor.execute("INSERT INTO lock_order_probe VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING")
    both_hold_one = threading.Barrier(2, timeout=10)
    runs = {"a": 0, "b": 0}
    errors: list[BaseException] = []

    def worker(name: str, first: int, second: int) -> None:
        def work() -> None:
            runs[name] += 1
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE lock_order_probe SET n = n + 1 WHERE id = %s", [first])
                if runs[name] == 1:
                    both_hold_one.wait()
                cursor.execute("UPDATE lock_order_probe SET n = n + 1 WHERE id = %s", [second])

        try:
            run_retrying(work, attempts=5, base=0.05)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=("a", 1, 2)), threading.Thread(target=worker, args=("b", 2, 1))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert not errors, errors
        assert sorted(runs.values()) == [1, 2]  # one victim, run once more
        with connection.cursor() as cursor:
            cursor.execute("SELECT sum(n) FROM lock_order_probe")
            assert cursor.fetchone()[0] == 4  # each committed its two updates once
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE lock_order_probe")
        tenant.delete()


@pytest.mark.django_db(transaction=True)
def test_a_write_lock_asked_for_after_a_write_is_refused():
    tenant = Tenant.objects.create(name="late-lock")
    with pytest.raises(LockOrderViolation, match="after this transaction wrote"), transaction.atomic():
        users_write_lock(tenant.id, ["early"])
        memory_create(tenant=tenant, spec=MemorySpec(user_id="early", text="I like tea"), actor="test")
        users_write_lock(tenant.id, ["late"])
    with transaction.atomic():  # locks first, in any number, then the writes: fine
        users_write_lock(tenant.id, ["b", "a"])
        users_write_lock(tenant.id, ["a"])  # held already: free
        memory_create(tenant=tenant, spec=MemorySpec(user_id="a", text="I like tea"), actor="test")


@pytest.mark.django_db(transaction=True)
def test_a_memory_row_written_before_its_users_lock_is_refused_by_the_trigger():
    tenant = Tenant.objects.create(name="trigger-check")
    memory = memory_create(tenant=tenant, spec=MemorySpec(user_id="owner", text="I like tea"), actor="test").memory
    with pytest.raises(DatabaseError, match="before the write lock"), transaction.atomic():
        MemoryItem.objects.filter(id=memory.id).update(status="archived")  # counted no more: the counts change
    memory.refresh_from_db()
    assert memory.status == "active"
    with transaction.atomic():  # the lock first: fine
        users_write_lock(tenant.id, ["owner"])
        MemoryItem.objects.filter(id=memory.id).update(status="archived")


def _session(first: str, second: str, n: int) -> list[dict]:
    return [{"role": "user", "name": first, "content": f"I started pottery classes in Lisbon{n}{first} last week."},
            {"role": "user", "name": second, "content": f"I moved to Oslo{n}{second} last month."},
            {"role": "user", "name": first, "content": "I drink coffee every morning."}]


@pytest.mark.django_db(transaction=True)
def test_jobs_for_a_and_b_and_for_b_and_a_side_by_side_all_finish(settings):
    settings.EXTRACTION_PROVIDER = "rules"
    tenant = Tenant.objects.create(name="ab-ba")
    participants = {"Ana": "ana", "Ben": "ben"}
    jobs = []
    for n in range(6):  # the first speaker alternates, and each session is sent by both apps
        first, second = ("Ana", "Ben") if n % 2 == 0 else ("Ben", "Ana")
        for sender in ("ana", "ben"):
            jobs.append(conversation_job_create(tenant=tenant, user_id=sender, session_id=f"s{n}-{sender}",
                                                group_id="ab", participants=participants,
                                                messages=_session(first, second, n)))
    errors: list[BaseException] = []

    def run(job_id: str) -> None:
        try:
            conversation_job_run(job_id)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(str(job.id),)) for job in jobs]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.1, 120 - (time.monotonic() - started)))
    assert not errors, errors[:3]
    assert set(ConversationJob.objects.filter(tenant=tenant).values_list("status", flat=True)) == {JobStatus.DONE}
    for n in range(6):
        for name, user in participants.items():
            marker = f"Lisbon{n}{name}" if (n % 2 == 0) == (name == "Ana") else f"Oslo{n}{name}"
            assert MemoryItem.objects.filter(tenant=tenant, user_id=user, text__contains=marker).exists(), marker


def test_a_failed_job_is_visible_where_an_operator_looks(client, tenant_a, operator, settings):
    """The dashboard counts failed jobs (a link to them) by cause, the job's page shows its error, and
    /metrics counts them by cause."""
    from django.test import Client
    from django.urls import reverse

    from memories.job_states import conversation_job_fail

    reviewer = Client()
    reviewer.force_login(operator("rita", "reviewers"))

    job = conversation_job_create(tenant=tenant_a, user_id="ana", session_id="s1",
                                  messages=[{"role": "user", "content": "I like tea."}])
    error = ExtractionError("database deadlock 7 times running the job: deadlock detected", retryable=True)
    conversation_job_fail(str(job.id), error)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.messages  # its turns kept for POST /jobs/{id}/retry
    page = reviewer.get(reverse("admin:index")).content.decode()
    failed = page.split('id="failed-jobs"')[1].split("</table>")[0]
    assert "status__exact=failed" in failed and ">1</a>" in failed and "<th>deadlock</th><td>1</td>" in failed
    job_page = reviewer.get(reverse("admin:memories_conversationjob_change", args=[job.id])).content.decode()
    assert "database deadlock 7 times running the job" in job_page
    settings.METRICS_ALLOWED_NETWORKS, settings.METRICS_TOKEN = ["127.0.0.0/8"], ""
    metrics = client.get("/metrics").content.decode()
    assert 'memory_conversation_jobs_failed{cause="deadlock"} 1.0' in metrics
    assert 'memory_conversation_jobs_failed_total{cause="deadlock"}' in metrics
