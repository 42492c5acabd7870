"""Security basics that are not covered elsewhere."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.password_validation import get_default_password_validators

ROOT = Path(__file__).resolve().parent.parent
# The machine's plain PostgreSQL: production settings need some DATABASE_URL; `check` does not query it.
PLAIN_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


def test_deploy_checks_are_clean_under_production_settings():
    env = {**{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
           "DJANGO_SETTINGS_MODULE": "memory_project.production_settings",
           "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-value-0123456789",
           "ALLOWED_HOSTS": "memory.example.com", "DATABASE_URL": PLAIN_POSTGRES}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["DJANGO_SETTINGS_MODULE"] = "memory_project.production_settings"
    env["DATABASE_URL"] = PLAIN_POSTGRES
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "SECRET_KEY" in result.stderr


def test_production_settings_refuse_to_start_without_a_database_url():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="memory_project.production_settings", SECRET_KEY="y" * 60)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "DATABASE_URL" in result.stderr


@pytest.mark.parametrize(("trusted", "expected"), [("", "None"), ("true", "('HTTP_X_FORWARDED_PROTO', 'https')")])
def test_the_proxy_header_is_trusted_only_when_configured_and_preload_is_opt_in(trusted, expected):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_project.production_settings", "SECRET_KEY": "z" * 60,
           "DATABASE_URL": PLAIN_POSTGRES, "TRUST_PROXY_SSL_HEADER": trusted}
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_PRELOAD)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.strip() == f"{expected} False", result.stderr[-500:]


def test_the_admin_uses_djangos_password_validators():
    names = {type(v).__name__ for v in get_default_password_validators()}
    assert {"MinimumLengthValidator", "CommonPasswordValidator", "NumericPasswordValidator"} <= names


def test_no_secret_is_committed():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert "var/secret_key" not in tracked and not any(p.endswith(".env") for p in tracked)
    assert "var/" in (ROOT / ".gitignore").read_text()


def test_the_admin_requires_login_and_csrf(client, db):
    assert client.get("/admin/").status_code == 302
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/admin/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403  # no CSRF token, no login attempt
