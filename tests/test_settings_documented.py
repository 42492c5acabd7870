"""docs/settings.md lists every environment variable the service reads, and only those."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READERS = [*[str(p.relative_to(ROOT)) for p in sorted((ROOT / "memory_project/settings").glob("*.py"))],
           "memory_project/production_settings.py", "memory_project/up.py", "gunicorn.conf.py", "manage.py",
           "Procfile", *[str(p.relative_to(ROOT)) for p in (ROOT / "memories/management/commands").glob("*.py")]]
PATTERNS = [r'env_\w+\(\s*["\']([A-Z][A-Z0-9_]+)["\']',
            r'os\.environ(?:\.get|\.setdefault)?\(\s*["\']([A-Z][A-Z0-9_]+)["\']',
            r'os\.environ\[\s*["\']([A-Z][A-Z0-9_]+)["\']', r"\$\{([A-Z][A-Z0-9_]+)"]
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}


def read_variables() -> set[str]:
    names: set[str] = set()
    for reader in READERS:
        text = (ROOT / reader).read_text()
        for pattern in PATTERNS:
            names.update(re.findall(pattern, text, re.S))
    return names - NOT_SETTINGS


def documented_variables() -> set[str]:
    rows = [line for line in (ROOT / "docs/settings.md").read_text().splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])}


def test_every_variable_read_is_documented_and_every_documented_one_is_read():
    read, documented = read_variables(), documented_variables()
    assert not read - documented, f"read but not in docs/settings.md: {sorted(read - documented)}"
    assert not documented - read, f"in docs/settings.md but read nowhere: {sorted(documented - read)}"
