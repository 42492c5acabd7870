"""The writer: every rule about changing a memory, in one package.

core      what a write is given and answers; the rules every memory obeys; apply_change,
          the one versioned change (snapshot -> change -> version + 1 -> save -> history)
create    one memory or a batch (lookup -> pure plan -> write), deduplicated by content hash
change    update, supersede, invalidate, merge, archive/restore, expiry; trait and review plumbing
episodes  a session's original turns as episodic memories
derived   columns computed from the content (hash, embedding state, full text, reads, provenance)
erase     one user's memories, vectors, sources, traits and history content
corrections  a reviewer's: reinstate a wrongly retired memory, change whom one is about, split one in two
people    the edges a forgotten memory said; memories moved between entities a reviewer merged or split

Each public function is one transaction and writes its MemoryHistory rows in
it; embedding is enqueued only after commit. Views, admin actions, tasks and
commands call these and nothing else to change a memory. A memory that stops
holding is announced (memories.withdrawals) for the apps built on memories.
"""

from __future__ import annotations

from memories.writing.change import (
    UNCHANGED,
    memories_archive_expired,
    memory_compare_and_set_confidence,
    memory_forget,
    memory_invalidate,
    memory_is_forgotten,
    memory_merge,
    memory_note,
    memory_record_approval,
    memory_set_status,
    memory_supersede,
    memory_update,
    merged_text_default,
    merged_text_of,
)
from memories.writing.core import (
    INDEXED_TEXT,
    LockOrderViolation,
    MemorySpec,
    WriteResult,
    apply_change,
    apply_change_unless_same,
    current_memories,
    default_expiry,
    memories_embedded_in_transaction,
    memories_write_lock,
    owners_write_lock,
    refuse_sensitive,
    refuse_sensitive_identifiers,
    search_document,
    user_write_lock,
    users_write_lock,
    validate_spec,
    writers_lock,
)
from memories.writing.corrections import (
    ALONE,
    REINSTATE_CHOICES,
    RETIRE_REPLACEMENT,
    RETIRED_STATES,
    Reinstated,
    memory_reinstate,
    memory_set_subject,
    memory_split,
    not_reinstated_phrase,
    reinstate_refusal,
    split_refusal,
    subject_refusal,
)
from memories.writing.create import (
    memory_create,
    memory_create_batch,
    reflection_nudge,
    reflection_nudge_taken,
)
from memories.writing.derived import (
    memories_emotion_fill,
    memory_add_reads,
    memory_add_session_sources,
    memory_refresh_content_hash,
    memory_refresh_search_vectors,
    memory_set_embedding_state,
)
from memories.writing.episodes import (
    FORGOTTEN_TURN,
    episode_append,
    episode_forget_turns,
    episode_lines,
    episode_unit,
    episodes_hearing,
    episodes_unhear,
)
from memories.writing.erase import (
    HISTORY_HAS_CONTENT,
    WHOLE_USER,
    ErasureScope,
    user_forget,
)
from memories.writing.people import memories_about_move, people_forget_said

__all__ = [
    "ALONE",
    "REINSTATE_CHOICES",
    "RETIRE_REPLACEMENT",
    "RETIRED_STATES",
    "Reinstated",
    "memory_reinstate",
    "memory_set_subject",
    "memory_split",
    "not_reinstated_phrase",
    "reinstate_refusal",
    "split_refusal",
    "subject_refusal",
    "memories_about_move",
    "people_forget_said",
    "FORGOTTEN_TURN",
    "episode_forget_turns",
    "episodes_hearing",
    "episodes_unhear",
    "apply_change_unless_same",
    "HISTORY_HAS_CONTENT",
    "INDEXED_TEXT",
    "MemorySpec",
    "UNCHANGED",
    "WriteResult",
    "apply_change",
    "current_memories",
    "default_expiry",
    "episode_append",
    "episode_lines",
    "episode_unit",
    "memories_archive_expired",
    "memories_embedded_in_transaction",
    "memory_add_reads",
    "memory_add_session_sources",
    "memory_compare_and_set_confidence",
    "memory_create",
    "memory_create_batch",
    "memory_forget",
    "memory_is_forgotten",
    "memory_invalidate",
    "memory_merge",
    "memory_note",
    "memory_record_approval",
    "memory_refresh_content_hash",
    "memory_refresh_search_vectors",
    "memories_emotion_fill",
    "memory_set_embedding_state",
    "memory_set_status",
    "memory_supersede",
    "memory_update",
    "merged_text_default",
    "merged_text_of",
    "reflection_nudge",
    "reflection_nudge_taken",
    "refuse_sensitive",
    "refuse_sensitive_identifiers",
    "search_document",
    "user_forget",
    "ErasureScope",
    "WHOLE_USER",
    "user_write_lock",
    "users_write_lock",
    "writers_lock",
    "memories_write_lock",
    "owners_write_lock",
    "LockOrderViolation",
    "validate_spec",
]
