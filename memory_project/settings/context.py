"""The context block an agent puts in its prompt (POST /api/v1/context), and reflection, which turns
memories into the traits the block shows. The block's sizes and shares were chosen on benchmarks and
live beside its code (memories/context_tuning.py)."""

from __future__ import annotations

from memory_project.settings.env import env_choice, env_float

# The context block's headings: en, zh, or auto (the language of the question and the lines shown).
CONTEXT_LANGUAGE = env_choice("CONTEXT_LANGUAGE", "auto", ("auto", "en", "zh"))

REFLECTION_IMPORTANCE_THRESHOLD = 5.0  # sum of new importance that triggers a cycle
# With a broker and Redis, a tenant's saves within this many seconds ask reflection once, for all their users,
# this long after the first (memories.queue.enqueue_coalesced); 0: every save asks at once.
REFLECTION_NUDGE_WINDOW = env_float("REFLECTION_NUDGE_WINDOW", 5.0)
REFLECTION_MAX_MEMORIES = 5000  # memories one cycle scans
REFLECTION_STALE_AFTER = 3600  # seconds before a running cycle is abandoned
# A session with no new memory for this long has ended: its session_end reflection cycle is queued.
SESSION_IDLE_MINUTES = 30
# How far back idle detection looks for sessions (a first run does not end every session ever held).
SESSION_IDLE_LOOKBACK_HOURS = 24
