"""Behind a reverse proxy: only TRUSTED_PROXIES may name the client, and every
per-address rule (/metrics, bad keys, admin logins, logs) uses the client so found."""

import ipaddress
import json
import logging

import pytest
from django.test import Client, override_settings

from memories.network import Client as Found
from memories.network import client_bucket, client_of, forwarded_for_hops, meta_of_asgi_scope, resolve_client
from memories.ratelimit import login_buckets

PROXY = (ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8"))


@pytest.mark.parametrize(("peer", "forwarded_for", "trusted", "found"), [
    # No proxy configured: the TCP peer is the client, forwarding headers only mark it as unvouched.
    ("203.0.113.5", "", (), Found("203.0.113.5")),
    ("127.0.0.1", "198.51.100.7", (), Found("127.0.0.1", forwarded_by_untrusted_peer=True)),
    # A trusted proxy: the right-most address that is not itself trusted.
    ("127.0.0.1", "198.51.100.7", PROXY, Found("198.51.100.7")),
    ("127.0.0.1", "1.1.1.1, 198.51.100.7", PROXY, Found("198.51.100.7")),  # the client prepended a lie
    ("127.0.0.1", "198.51.100.7, 10.1.2.3", PROXY, Found("198.51.100.7")),  # two proxies of ours
    ("127.0.0.1", "10.1.2.3", PROXY, Found("10.1.2.3")),  # every hop trusted: the left-most
    ("127.0.0.1", "", PROXY, Found("127.0.0.1")),  # the proxy's own request (a health check)
    ("127.0.0.1", "198.51.100.7:4431", PROXY, Found("198.51.100.7")),  # a port on the hop
    ("127.0.0.1", "[2001:db8::1]:443", PROXY, Found("2001:db8::1")),
    ("127.0.0.1", "unknown", PROXY, Found("", forwarded_by_untrusted_peer=True)),
    # An untrusted peer cannot name anyone, whatever it sends.
    ("203.0.113.5", "127.0.0.1", PROXY, Found("203.0.113.5", forwarded_by_untrusted_peer=True)),
    ("::ffff:127.0.0.1", "198.51.100.7", PROXY, Found("198.51.100.7")),  # IPv4 mapped into IPv6
    ("", "", PROXY, Found("")),
])
def test_resolve_client(peer, forwarded_for, trusted, found):
    assert resolve_client(peer, forwarded_for, trusted=trusted) == found


def test_an_asgi_scope_reads_as_wsgi_meta():
    scope = {"client": ("127.0.0.1", 5000), "headers": [(b"x-forwarded-for", b"198.51.100.7"), (b"host", b"x")]}
    assert meta_of_asgi_scope(scope) == {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}


def test_an_unknown_network_in_settings_stops_the_start(monkeypatch):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], capture_output=True, text=True,
                          env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "memory_project.settings",
                               "TRUSTED_PROXIES": "10.0.0.0/8,proxy.local"})
    assert done.returncode != 0 and "TRUSTED_PROXIES: 'proxy.local' is not a network" in done.stderr


def test_metrics_behind_a_proxy(db, settings):
    settings.METRICS_ALLOWED_NETWORKS, settings.METRICS_TOKEN = ["127.0.0.0/8"], ""
    local = Client(REMOTE_ADDR="127.0.0.1")
    assert local.get("/metrics").status_code == 200
    # A proxy on this host that nobody named: whoever it forwards for is not loopback.
    assert local.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.5").status_code == 403
    assert local.get("/metrics", HTTP_X_REAL_IP="203.0.113.5").status_code == 403
    settings.TRUSTED_PROXIES = ["127.0.0.1/32"]
    assert local.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.5").status_code == 403  # the real client
    assert local.get("/metrics", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 200  # a local scraper
    assert Client(REMOTE_ADDR="203.0.113.5").get("/metrics", HTTP_X_FORWARDED_FOR="127.0.0.1").status_code == 403


@override_settings(RATE_LIMIT_BAD_KEY_REQUESTS=5, RATE_LIMIT_WINDOW_SECONDS=3600, TRUSTED_PROXIES=["127.0.0.1/32"])
def test_bad_keys_are_counted_per_forwarded_client(db, key_a, settings):
    settings.REDIS_URL = ""
    proxy = Client(REMOTE_ADDR="127.0.0.1")

    def codes(client_address, n):
        return [proxy.get("/api/v1/memories", HTTP_AUTHORIZATION=f"Bearer mk_bad_{i}",
                          HTTP_X_FORWARDED_FOR=client_address).status_code for i in range(n)]

    assert codes("203.0.113.5", 7) == [401] * 5 + [429] * 2
    assert codes("198.51.100.7", 2) == [401, 401]  # another client's typo is not punished for the guesser
    assert codes("9.9.9.9, 203.0.113.5", 1) == [429]  # prepending an address does not escape the count


@override_settings(ADMIN_LOGIN_MAX_FAILURES=3, ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT=5,
                   ADMIN_LOGIN_LOCKOUT_SECONDS=3600, TRUSTED_PROXIES=["127.0.0.1/32"])
def test_a_remote_guesser_cannot_lock_the_operator_out(operator, db, settings, caplog):
    settings.REDIS_URL = ""
    operator("rita", "reviewers")
    guesser = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")
    for _ in range(3):
        guesser.post("/admin/login/", {"username": "rita", "password": "wrong"})
    assert "Too many failed logins" in guesser.post(
        "/admin/login/", {"username": "rita", "password": "correct horse battery staple"}).content.decode()
    assert any("from 203.0.113.5" in r.getMessage() for r in caplog.records)  # the log names the real client
    operator_browser = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert operator_browser.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"}
                                 ).status_code == 302
    # Spraying many names from one client meets the per-client limit.
    sprayer = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="192.0.2.1")
    for name in ("a", "b", "c", "d", "e"):
        sprayer.post("/admin/login/", {"username": name, "password": "wrong"})
    assert "Too many failed logins" in sprayer.post(
        "/admin/login/", {"username": "rita", "password": "correct horse battery staple"}).content.decode()


def test_the_request_log_names_the_forwarded_client(api, settings, caplog):
    settings.TRUSTED_PROXIES = ["127.0.0.1/32"]
    with caplog.at_level(logging.INFO, logger="memory.requests"):
        api.client.get("/api/v1/memories?user_id=a", HTTP_X_FORWARDED_FOR="203.0.113.5")
    record = next(r for r in caplog.records if r.name == "memory.requests")
    assert record.client == "203.0.113.5"  # type: ignore[attr-defined]
    from memory_project.observability import JsonFormatter

    assert json.loads(JsonFormatter().format(record))["client"] == "203.0.113.5"


# --------------------------------------------------------------------------- one rule for the three headers

@pytest.mark.parametrize(("headers", "found"), [
    # Each header alone, from a trusted proxy, names the client the same way.
    ({"forwarded_for": "198.51.100.7"}, Found("198.51.100.7")),
    ({"forwarded": "for=198.51.100.7"}, Found("198.51.100.7")),
    ({"real_ip": "198.51.100.7"}, Found("198.51.100.7")),
    ({"forwarded": 'for="[2001:db8:cafe::17]:4711";proto=https'}, Found("2001:db8:cafe::17")),
    ({"forwarded": "for=1.1.1.1, For=198.51.100.7;by=10.0.0.1"}, Found("198.51.100.7")),  # right-most untrusted
    ({"forwarded": "for=198.51.100.7, for=10.1.2.3"}, Found("198.51.100.7")),  # through two proxies of ours
    # The finding: a trusted proxy's X-Real-IP or Forwarded used to be ignored, the proxy (loopback) was the client.
    ({"real_ip": "203.0.113.5"}, Found("203.0.113.5")),
    ({"forwarded": "for=203.0.113.5"}, Found("203.0.113.5")),
    # A header whose hops are all trusted has no opinion: a client-sent X-Real-IP passed through names nobody.
    ({"forwarded_for": "198.51.100.7", "real_ip": "127.0.0.1"}, Found("198.51.100.7")),
    ({"forwarded_for": "198.51.100.7", "forwarded": "for=10.9.9.9"}, Found("198.51.100.7")),
    # A load balancer's address in X-Real-IP, the client in X-Forwarded-For: they agree.
    ({"forwarded_for": "198.51.100.7, 10.0.0.2", "real_ip": "10.0.0.2"}, Found("198.51.100.7")),
    ({"forwarded_for": "198.51.100.7", "real_ip": "198.51.100.7", "forwarded": "for=198.51.100.7"},
     Found("198.51.100.7")),
    # Headers naming different clients: nobody is vouched for (never the proxy's own address).
    ({"forwarded_for": "198.51.100.7", "real_ip": "203.0.113.5"}, Found("", forwarded_by_untrusted_peer=True)),
    ({"forwarded_for": "198.51.100.7", "forwarded": "for=203.0.113.5"}, Found("", forwarded_by_untrusted_peer=True)),
    # Obfuscated or unknown hops (RFC 7239 section 6) leave the client unknown.
    ({"forwarded": "for=unknown"}, Found("", forwarded_by_untrusted_peer=True)),
    ({"forwarded": "for=_hidden"}, Found("", forwarded_by_untrusted_peer=True)),
    ({"forwarded": "for"}, Found("", forwarded_by_untrusted_peer=True)),
    ({"real_ip": "not an address"}, Found("", forwarded_by_untrusted_peer=True)),
    ({"forwarded": "proto=https"}, Found("127.0.0.1")),  # says nothing about the client: the peer
    ({"real_ip": "10.1.2.3"}, Found("10.1.2.3")),  # every hop trusted: the left-most, as with X-Forwarded-For
])
def test_which_header_names_the_client(headers, found):
    assert resolve_client("127.0.0.1", trusted=PROXY, **headers) == found


@pytest.mark.parametrize("headers", [{"real_ip": "127.0.0.1"}, {"forwarded": "for=127.0.0.1"},
                                     {"forwarded_for": "127.0.0.1"}])
def test_an_untrusted_peer_names_nobody_in_any_header(headers):
    assert resolve_client("203.0.113.5", trusted=PROXY, **headers) == Found("203.0.113.5", True)
    assert resolve_client("127.0.0.1", trusted=(), **headers) == Found("127.0.0.1", True)


@pytest.mark.parametrize(("header", "hops"), [
    ("for=192.0.2.60;proto=http;by=203.0.113.43", ["192.0.2.60"]),
    ('for="[2001:db8:cafe::17]:4711"', ['"[2001:db8:cafe::17]:4711"']),
    ("for=192.0.2.43, for=198.51.100.17", ["192.0.2.43", "198.51.100.17"]),
    ('for="a,b;c", for=1.2.3.4', ['"a,b;c"', "1.2.3.4"]),  # commas and semicolons inside quotes
    ("proto=https", [""]),
    ("", []),
])
def test_forwarded_for_hops(header, hops):
    assert forwarded_for_hops(header) == hops


@pytest.mark.parametrize(("address", "bucket"), [
    ("203.0.113.5", "203.0.113.5"),
    ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # anywhere in the /64: one client
    ("2001:db8:1:3::1", "2001:db8:1:3::/64"),  # the next /64: another
    ("::ffff:203.0.113.5", "203.0.113.5"),  # IPv4 mapped into IPv6 is the IPv4 client
    ("", "unknown"),
])
def test_which_bucket_an_address_falls_in(address, bucket):
    assert client_bucket(address) == bucket


def test_login_buckets_are_per_account_and_client_then_per_client(settings):
    settings.ADMIN_LOGIN_MAX_FAILURES, settings.ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT = 5, 20
    buckets = login_buckets("Rita", "2001:db8:1:2::99")
    assert [bucket for bucket, _ in buckets] == ["login:rita:2001:db8:1:2::/64", "login-client:2001:db8:1:2::/64"]
    assert [limit.requests for _, limit in buckets] == [5, 20]
    assert all("rita" not in b for b, _ in login_buckets("rita", "198.51.100.7")[1:])  # none per account


def test_metrics_behind_a_proxy_that_sends_x_real_ip_or_forwarded(db, settings):
    settings.METRICS_ALLOWED_NETWORKS, settings.METRICS_TOKEN = ["127.0.0.0/8"], ""
    settings.TRUSTED_PROXIES = ["127.0.0.1/32"]
    local = Client(REMOTE_ADDR="127.0.0.1")
    assert local.get("/metrics", HTTP_X_REAL_IP="203.0.113.5").status_code == 403
    assert local.get("/metrics", HTTP_FORWARDED="for=203.0.113.5;proto=https").status_code == 403
    assert local.get("/metrics", HTTP_FORWARDED='for="[2001:db8::5]"').status_code == 403
    assert local.get("/metrics", HTTP_X_REAL_IP="127.0.0.1").status_code == 200  # a local scraper through the proxy
    # A client's own loopback claim next to what the proxy wrote: the proxy's word stands, or nobody's.
    assert local.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.5", HTTP_X_REAL_IP="127.0.0.1").status_code == 403
    assert local.get("/metrics", HTTP_X_REAL_IP="203.0.113.5", HTTP_FORWARDED="for=127.0.0.1").status_code == 403
    assert local.get("/metrics", HTTP_FORWARDED="for=unknown").status_code == 403


@override_settings(ADMIN_LOGIN_MAX_FAILURES=5, ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT=20,
                   ADMIN_LOGIN_LOCKOUT_SECONDS=3600, TRUSTED_PROXIES=["127.0.0.1/32"])
def test_behind_an_x_real_ip_proxy_five_guesses_lock_out_only_the_guesser(operator, db, settings):
    settings.REDIS_URL = ""
    operator("rita", "reviewers")
    guesser = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_REAL_IP="203.0.113.5")
    for _ in range(5):
        guesser.post("/admin/login/", {"username": "rita", "password": "wrong"})
    assert "Too many failed logins" in guesser.post(
        "/admin/login/", {"username": "rita", "password": "correct horse battery staple"}).content.decode()
    for header in ({"HTTP_X_REAL_IP": "198.51.100.7"}, {"HTTP_FORWARDED": "for=198.51.100.8"}):
        rita = Client(REMOTE_ADDR="127.0.0.1", **header)
        assert rita.post("/admin/login/", {"username": "rita", "password": "correct horse battery staple"}
                         ).status_code == 302


@override_settings(ADMIN_LOGIN_MAX_FAILURES=5, ADMIN_LOGIN_MAX_FAILURES_PER_CLIENT=20,
                   ADMIN_LOGIN_LOCKOUT_SECONDS=3600, TRUSTED_PROXIES=["127.0.0.1/32"])
def test_guesses_from_one_ipv6_64_are_counted_together(operator, db, settings):
    settings.REDIS_URL = ""
    operator("rita", "reviewers")
    refused = 0
    for i in range(100):  # a fresh address of the /64 for every guess
        page = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=f"2001:db8:1:2::{i + 1:x}").post(
            "/admin/login/", {"username": "rita", "password": "wrong"})
        refused += "Too many failed logins" in page.content.decode()
    assert refused == 95  # five were checked, not a hundred
    # Rita from her own network still logs in.
    assert Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="2001:db8:1:3::1").post(
        "/admin/login/", {"username": "rita", "password": "correct horse battery staple"}).status_code == 302


@override_settings(RATE_LIMIT_BAD_KEY_REQUESTS=5, RATE_LIMIT_WINDOW_SECONDS=3600, TRUSTED_PROXIES=["127.0.0.1/32"])
def test_bad_keys_from_one_ipv6_64_are_counted_together(db, settings):
    settings.REDIS_URL = ""
    proxy = Client(REMOTE_ADDR="127.0.0.1")
    codes = [proxy.get("/api/v1/memories", HTTP_AUTHORIZATION=f"Bearer mk_bad_{i}",
                       HTTP_X_REAL_IP=f"2001:db8:7:7::{i + 1:x}").status_code for i in range(7)]
    assert codes == [401] * 5 + [429] * 2
    assert proxy.get("/api/v1/memories", HTTP_AUTHORIZATION="Bearer mk_bad_x",
                     HTTP_X_REAL_IP="2001:db8:7:8::1").status_code == 401  # the next /64 is someone else


def test_the_mcp_transport_reads_the_same_three_headers(settings):
    settings.TRUSTED_PROXIES = ["127.0.0.1/32"]
    for header, value in ((b"x-real-ip", b"203.0.113.5"), (b"forwarded", b"for=203.0.113.5;proto=https"),
                          (b"x-forwarded-for", b"203.0.113.5")):
        scope = {"client": ("127.0.0.1", 5000), "headers": [(header, value), (b"host", b"x")]}
        assert client_of(meta_of_asgi_scope(scope)) == Found("203.0.113.5")
