"""When a memory stops holding: the writer announces it, and apps built on
memories (traits, through reflection) register what must follow.

The writer cannot import the apps above it (the layer contract), yet a fact
that is invalidated, superseded, forgotten or erased may be the evidence a
trait stands on, and seed 004 wants that trait re-evaluated at once. So the
writer announces a Withdrawal here, inside its transaction (an erased fact's
evidence rows are still there to be read), and each listener registered from
an app config decides what to do, typically queueing work after commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

logger = logging.getLogger(__name__)

WithdrawalCause = Literal["invalidated", "superseded", "forgotten", "erased"]


@dataclass(frozen=True)
class Withdrawal:
    """Memories of one user that stopped holding, why, and what replaced each one (if anything did)."""

    tenant_id: int
    user_id: str
    memory_ids: tuple[str, ...]
    cause: WithdrawalCause
    replaced_by: dict[str, str] = field(default_factory=dict)  # memory id -> the memory that replaced it


Listener = Callable[[Withdrawal], None]
_LISTENERS: list[Listener] = []


def listen(listener: Listener) -> None:
    """Register a listener (from an AppConfig.ready); registering one twice keeps one."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def announce(*, tenant_id: int, user_id: str, memory_ids: Sequence[object], cause: WithdrawalCause,
             replaced_by: dict[str, str] | None = None) -> None:
    """Tell every listener, inside the caller's transaction. A listener's failure is the write's failure:
    a trait left standing on a fact that no longer holds would be a silent inconsistency."""
    if not memory_ids:
        return
    withdrawal = Withdrawal(tenant_id=tenant_id, user_id=user_id, memory_ids=tuple(str(i) for i in memory_ids),
                            cause=cause, replaced_by=dict(replaced_by or {}))
    for listener in _LISTENERS:
        listener(withdrawal)
