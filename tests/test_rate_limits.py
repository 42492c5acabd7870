"""Rate limits per key and per tenant, bad keys per address, admin login
lockout: counters in Redis when configured, else in the database."""

import pytest
from django.test import Client, override_settings

from memories import ratelimit
from memories.keys import api_key_create
from memories.process_state import reset
from memories.ratelimit import Limit, decide
from tests.conftest import Api


@pytest.mark.parametrize(("count", "limit", "now", "allowed", "retry_after"), [
    (1, Limit(5, 10), 100.0, True, 0),
    (5, Limit(5, 10), 100.0, True, 0),
    (6, Limit(5, 10), 100.0, False, 10),
    (6, Limit(5, 10), 107.5, False, 2),
    (6, Limit(5, 10), 109.9, False, 1),
    (99, Limit(0, 10), 100.0, True, 0),  # 0 turns the limit off
])
def test_decide(count, limit, now, allowed, retry_after):
    decision = decide(count, limit, now)
    assert (decision.allowed, decision.retry_after) == (allowed, retry_after)


@pytest.fixture(params=["database", "redis"])
def store(request, settings):
    if request.param == "redis":
        request.getfixturevalue("redis_url")
    else:
        settings.REDIS_URL = ""
    return request.param


@override_settings(RATE_LIMIT_KEY_REQUESTS=5, RATE_LIMIT_TENANT_REQUESTS=10, RATE_LIMIT_WINDOW_SECONDS=3600)
def test_a_key_past_its_rate_gets_429_with_retry_after(api, store, django_capture_on_commit_callbacks):
    codes = [api.get("memories?user_id=a").status_code for _ in range(7)]
    assert codes == [200] * 5 + [429] * 2
    limited = api.get("memories?user_id=a")
    assert 1 <= int(limited["Retry-After"]) <= 3600 and "detail" in limited.json()
    # Another key of the same tenant has its own rate, until the tenant's is spent too.
    other = Api(api_key_create(tenant_name="acme", name="second").raw_key, django_capture_on_commit_callbacks)
    assert [other.get("memories?user_id=a").status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.parametrize(("counts", "limits", "size", "granted"), [
    ([1, 1], [5, 10], 1, 1),  # room in both
    ([8, 8], [10, 100], 4, 4),
    ([12, 12], [10, 100], 4, 2),  # the key had room for two of the four
    ([14, 14], [10, 100], 4, 0),  # none: refused
    ([20, 101], [50, 100], 4, 3),  # the tenant is the stricter
    ([30, 30], [10, 100], 16, 0),
])
def test_lease_granted(counts, limits, size, granted):
    assert ratelimit.lease_granted(counts, limits, size) == granted


@pytest.mark.parametrize(("size", "granted", "cap", "after"), [
    (1, 1, 16, 2), (8, 8, 16, 16), (16, 16, 16, 16), (8, 8, 9, 9),
    (8, 3, 16, 1),  # the limit is near: start small again
    (4, 0, 16, 1),
])
def test_next_lease_size(size, granted, cap, after):
    assert ratelimit.next_lease_size(size, granted, cap) == after


@override_settings(RATE_LIMIT_LEASE_MAX=16)
def test_lease_cap_is_a_thirty_second_of_the_stricter_limit():
    assert ratelimit.lease_cap(Limit(300, 10), Limit(1000, 10)) == 9
    assert ratelimit.lease_cap(Limit(5, 10), Limit(10, 10)) == 1  # small limits: exact, no lease
    assert ratelimit.lease_cap(Limit(100_000, 10), Limit(100_000, 10)) == 16


@override_settings(RATE_LIMIT_KEY_REQUESTS=320, RATE_LIMIT_TENANT_REQUESTS=100_000, RATE_LIMIT_WINDOW_SECONDS=3600,
                   RATE_LIMIT_LEASE_MAX=16)
def test_two_processes_with_leases_never_pass_the_limit_together(db, store):
    """Two lease books are two processes sharing the counters: their admissions together stay
    within the limit, and lose at most what each could hold unused."""
    books = [ratelimit.LeaseBook(), ratelimit.LeaseBook()]
    admitted = [0, 0]
    for i in range(400):
        if ratelimit.api_request_allowed(key_id=987_654, tenant_id=987_654, book=books[i % 2]).allowed:
            admitted[i % 2] += 1
    cap = ratelimit.lease_cap(ratelimit.key_limit(), ratelimit.tenant_limit())
    assert cap == 10
    assert 320 - 2 * (cap - 1) <= sum(admitted) <= 320
    assert min(admitted) > 100  # neither process starves the other
    refused = ratelimit.api_request_allowed(key_id=987_654, tenant_id=987_654, book=books[0])
    assert not refused.allowed and 1 <= refused.retry_after <= 3600


@override_settings(RATE_LIMIT_KEY_REQUESTS=320, RATE_LIMIT_TENANT_REQUESTS=100_000, RATE_LIMIT_WINDOW_SECONDS=3600,
                   RATE_LIMIT_LEASE_MAX=16, REDIS_URL="")
def test_a_lease_spares_most_requests_the_round_trip(db):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    book = ratelimit.LeaseBook()
    with CaptureQueriesContext(connection) as statements:
        assert all(ratelimit.api_request_allowed(key_id=987_655, tenant_id=987_655, book=book).allowed
                   for _ in range(100))
    assert len(statements) <= 15  # leases of 1, 2, 4, 8, then 10 (a 32nd of 320): 13 reservations
    from memories.models import RateCounter

    reserved = RateCounter.objects.get(bucket="key:987655").count
    assert 100 <= reserved <= 100 + 9  # what the process holds ahead is counted, never less


@override_settings(RATE_LIMIT_BAD_KEY_REQUESTS=10, RATE_LIMIT_WINDOW_SECONDS=3600)
def test_an_address_sending_bad_keys_is_slowed(anonymous, store, key_a):
    codes = [anonymous.get("/api/v1/memories", HTTP_AUTHORIZATION=f"Bearer mk_bad_{i}").status_code
             for i in range(12)]
    assert codes == [401] * 10 + [429] * 2
    good = anonymous.get("/api/v1/memories", HTTP_AUTHORIZATION=f"Bearer {key_a.raw_key}")
    assert good.status_code == 200  # a valid key is not locked out by someone else's guesses


def test_counters_are_shared_state_not_process_memory(db, settings):
    settings.REDIS_URL = ""
    limit = Limit(3, 3600)
    for _ in range(3):
        assert ratelimit.hit("probe", limit).allowed
    from memories.models import RateCounter

    assert RateCounter.objects.get(bucket="probe").count == 3  # another process (or a restart) sees it
    assert not ratelimit.hit("probe", limit).allowed


def test_a_failing_redis_falls_back_to_the_database(db, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    reset()
    assert ratelimit.hit("fallback", Limit(1, 3600)).allowed
    assert not ratelimit.hit("fallback", Limit(1, 3600)).allowed
    reset()


@override_settings(ADMIN_LOGIN_MAX_FAILURES=3, ADMIN_LOGIN_LOCKOUT_SECONDS=3600)
def test_the_admin_locks_a_login_out_after_repeated_failures(operator, store, caplog):
    operator("rita", "reviewers")
    client = Client()
    for _ in range(3):
        page = client.post("/admin/login/", {"username": "rita", "password": "wrong"})
        assert page.status_code == 200 and "_auth_user_id" not in client.session
    right = client.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"})
    assert "Too many failed logins" in right.content.decode() and "_auth_user_id" not in client.session
    assert any("locked out" in r.getMessage() for r in caplog.records)
    other = Client(REMOTE_ADDR="10.0.0.9")  # the lockout is per name and address
    assert other.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"}
                      ).status_code == 302


@override_settings(ADMIN_LOGIN_MAX_FAILURES=3, ADMIN_LOGIN_LOCKOUT_SECONDS=3600)
def test_a_successful_login_clears_earlier_failures(operator, store):
    operator("rita", "reviewers")
    client = Client()
    for _ in range(2):
        client.post("/admin/login/", {"username": "rita", "password": "wrong"})
    assert client.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"}
                       ).status_code == 302
    client.logout()
    for _ in range(2):
        client.post("/admin/login/", {"username": "rita", "password": "wrong"})
    assert client.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"}
                       ).status_code == 302  # two new failures, not four


def _synchronous_commit() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_counters_commit_without_waiting_for_the_disk_but_a_callers_transaction_keeps_its_durable_commit():
    from django.db import transaction

    from memories.ratelimit import counters_committed_without_waiting

    with counters_committed_without_waiting():
        assert _synchronous_commit() == "off"  # the counters' own transaction only
    assert _synchronous_commit() == "on"
    with transaction.atomic(), counters_committed_without_waiting():
        assert _synchronous_commit() == "on"  # a memory written in the same transaction stays durable
