"""Settings, one module per concern (HackSoft's layout), composed here in order; `memory_project.settings`
stays the module DJANGO_SETTINGS_MODULE names.

Only deployment choices are environment variables (env.py's typed helpers, healthchecks style), each
documented in docs/settings.md; tests/test_settings_documented.py holds the two together. The other values
here are fixed: a test may override them. Weights and sizes a benchmark chose are not settings at all:
they live beside the code that uses them, each with the measurement that chose it.

Defaults run everything locally with no accounts or keys: the embedded PostgreSQL under var/, Celery
eager, the bundled embedder and the meaning extractor.
"""

from memory_project.settings.base import *  # noqa: F403
from memory_project.settings.bounds import *  # noqa: F403
from memory_project.settings.celery import *  # noqa: F403
from memory_project.settings.context import *  # noqa: F403
from memory_project.settings.database import *  # noqa: F403
from memory_project.settings.embedding import *  # noqa: F403
from memory_project.settings.extraction import *  # noqa: F403
from memory_project.settings.observability import *  # noqa: F403
from memory_project.settings.security import *  # noqa: F403

# A deployment's own overrides, git-ignored, imported last.
if (BASE_DIR / "memory_project" / "local_settings.py").exists():  # noqa: F405
    from memory_project.local_settings import *  # noqa: F403
