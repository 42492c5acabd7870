"""The trait lines a context block shows, and the stages the search's scorer boosts by, read by the traits app.

Traits build on memories, so memories may not import them; before, the search read the traits table in raw
SQL found through the reverse relation's metadata, a dependency no import showed. Now the traits app owns
the statement (traits.selectors.active_trait_lines) and registers it here from its AppConfig.ready, as it
registers its erasure steps; context asks through trait_lines_read. Without the traits app (a deployment
of memories alone) a block has no trait lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from memories.models import Tenant


class TraitLineRow(NamedTuple):
    id: str
    text: str
    subtype: str
    stage: str
    decayed_confidence: float


# (tenant, user id, stages, subtype order, minimum decayed confidence, limit) -> rows, best first.
TraitLineReader = Callable[[Tenant, str, tuple[str, ...], tuple[str, ...], float, int], list[TraitLineRow]]
_readers: list[TraitLineReader] = []


def register_trait_line_reader(reader: TraitLineReader) -> None:
    """The traits app's reader (one: a second registration replaces the first, as a reloaded app does)."""
    _readers[:] = [reader]


def trait_lines_read(tenant: Tenant, user_id: str, stages: tuple[str, ...], order: tuple[str, ...],
                     min_confidence: float, limit: int) -> list[TraitLineRow]:
    if not _readers:
        return []
    return _readers[0](tenant, user_id, stages, order, min_confidence, limit)


# memory ids -> {memory id: (stage, decayed confidence)} for those that are traits.
TraitStageReader = Callable[[list[str]], dict[str, tuple[str, float]]]
_stage_readers: list[TraitStageReader] = []


def register_trait_stage_reader(reader: TraitStageReader) -> None:
    """The traits app's reader of trait stages (one, as for the lines)."""
    _stage_readers[:] = [reader]


def trait_stages_read(ids: list[str]) -> dict[str, tuple[str, float]]:
    """The stage and decayed confidence of each of `ids` that is a trait; none without the traits app."""
    if not ids or not _stage_readers:
        return {}
    return _stage_readers[0](ids)
