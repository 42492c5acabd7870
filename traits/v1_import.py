"""Importing a V1 store (seed 004 §3, §7.1, §8.2): its single `embeddings` table and its key-value profile.

The V1 export this reads (tests/samples/v1/ has a small one), two JSON-lines files side by side:

- `embeddings.jsonl`: {id, user_id, content, memory_type (general, fact, episodic, document, task,
  profile, insight, trait), metadata (importance, tags, emotion, and for traits trait_subtype,
  trait_stage, trait_confidence, trait_context), embedding (a list of numbers or null), valid_from,
  valid_until, created_at, superseded_by};
- `key_values.jsonl`: {user_id, key ("profile/occupation"), value (text, list or object), updated_at}.

Where each goes (the pure `plan_embedding_row` and `plan_profile_entry`, table-tested):
- general -> fact (seed 004 §8.2); fact, episodic, document, task, profile keep their type; a row
  another replaced (superseded_by) or that stopped holding (valid_until) is kept archived;
- insight -> a trait at the trend stage (§8.2); a V1 trait -> a trait with its subtype, stage,
  confidence and context;
- profile keys (§7.1.2): identity, occupation, relationships and any other profile key -> facts;
  interests and preferences -> preference traits; personality and values -> core traits;
  language, and keys outside `profile/`, are configuration, not memories: counted, not imported.

Memories go through memories.porting.import_records (batches, the save gate, the writer, vectors kept
only under their named model, a checkpoint per batch); traits through traits.services.trait_create
(the writer, history, the trait's stage event), a checkpoint every batch. A second run changes
nothing; an interrupted one resumes after its last committed batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memories import porting
from memories.governance import sensitive_kinds
from memories.models import MemoryItem, MemoryStatus, MemoryType, Tenant
from memories.porting import ImportFailed, ImportRecord, ImportReport
from memories.text import content_hash
from memories.writing import MemorySpec
from traits import lifecycle, services
from traits.models import TraitContext, TraitStage, TraitSubtype

V1_TYPES = {"general": MemoryType.FACT, "fact": MemoryType.FACT, "episodic": MemoryType.EPISODIC,
            "document": MemoryType.DOCUMENT, "task": MemoryType.TASK, "profile": MemoryType.PROFILE}
PROFILE_FACTS = ("identity", "occupation", "relationships")
PROFILE_TRAITS = {"interests": TraitSubtype.PREFERENCE, "preferences": TraitSubtype.PREFERENCE,
                  "personality": TraitSubtype.CORE, "values": TraitSubtype.CORE}
PROFILE_CONFIGURATION = ("language",)
# A V1 profile trait enters at the lowest stage an agent is shown, at that stage's entry confidence: it was
# the user's standing profile, yet no evidence came with it, so one contradiction or the decay can move it.
PROFILE_TRAIT_STAGE = TraitStage.EMERGING
PROFILE_TRAIT_CONFIDENCE = lifecycle.STAGE_ENTRY[TraitStage.EMERGING][0]
V1_VECTOR_MODEL = "v1-unnamed-model"  # V1 rows do not name their model: their vectors are re-embedded


@dataclass(frozen=True)
class PlannedTrait:
    line: int
    user_id: str
    text: str
    subtype: str
    stage: str
    confidence: float
    context: str = TraitContext.GENERAL
    data: dict = field(default_factory=dict)


@dataclass
class V1Report:
    memories: ImportReport = field(default_factory=ImportReport)
    traits_read: int = 0
    traits_added: int = 0
    traits_unchanged: int = 0
    traits_resumed: int = 0
    traits_sensitive: int = 0  # not imported: a trait has no reviewer (as reflection writes none)
    configuration: int = 0  # profile keys that are settings, not memories


def _label(key: str) -> str:
    return key.replace("_", " ").capitalize()


def _items(value) -> list[str]:
    """A profile value as its statements: a list's items, an object's `key: value` pairs, or the text."""
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    if isinstance(value, dict):
        return [f"{_label(str(k))}: {v}" for k, v in value.items() if str(v).strip()]
    return [str(value).strip()] if value is not None and str(value).strip() else []


def plan_profile_entry(row: dict, line: int) -> list[MemorySpec | PlannedTrait] | None:
    """What one key-value row becomes; None for configuration (language, keys outside profile/)."""
    user_id = porting._user(row.get("user_id"), line)
    namespace, _, key = str(row.get("key") or "").partition("/")
    if not key:
        raise ImportFailed("a key-value row needs a key like profile/occupation", line=line)
    if namespace != "profile" or key in PROFILE_CONFIGURATION:
        return None
    data = {"key": key, "v1_key": f"{namespace}/{key}"}
    statements = _items(row.get("value"))
    if key in PROFILE_TRAITS:
        return [PlannedTrait(line, user_id, text, PROFILE_TRAITS[key], PROFILE_TRAIT_STAGE, PROFILE_TRAIT_CONFIDENCE,
                             data=data) for text in statements]
    if key in PROFILE_FACTS and key != "occupation":
        texts = statements
    else:
        texts = [f"{_label(key)}: {text}" for text in statements]
    return [MemorySpec(user_id=user_id, text=porting._text(text, line), memory_type=MemoryType.FACT, data=data,
                       valid_at=porting._when(row.get("updated_at"), line, "updated_at")) for text in texts]


def _trait_from_row(row: dict, metadata: dict, line: int) -> PlannedTrait:
    user_id, text = porting._user(row.get("user_id"), line), porting._text(row.get("content"), line)
    data = {"v1_id": str(row.get("id") or "")}
    if str(row.get("memory_type")).lower() == "insight":  # seed 004 §8.2: an insight is a trend
        kind = str(metadata.get("trait_subtype")) if metadata.get("trait_subtype") in TraitSubtype.values \
            else TraitSubtype.BEHAVIOR.value
        return PlannedTrait(line, user_id, text, kind, TraitStage.TREND, lifecycle.TREND_CONFIDENCE, data=data)
    subtype, stage = metadata.get("trait_subtype"), metadata.get("trait_stage") or TraitStage.TREND
    if subtype not in TraitSubtype.values:
        raise ImportFailed(f"trait_subtype {subtype!r} is not behavior, preference or core", line=line)
    if stage not in TraitStage.values or stage == TraitStage.DISSOLVED:
        raise ImportFailed(f"trait_stage {stage!r} is not a stage a trait is imported at", line=line)
    confidence = metadata.get("trait_confidence", lifecycle.TREND_CONFIDENCE)
    if not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise ImportFailed(f"trait_confidence {confidence!r} is not a number in 0..1", line=line)
    context = str(metadata.get("trait_context")) if metadata.get("trait_context") in TraitContext.values \
        else TraitContext.GENERAL.value
    return PlannedTrait(line, user_id, text, str(subtype), str(stage), float(confidence), context, data)


def plan_embedding_row(row: dict, line: int) -> ImportRecord | PlannedTrait | None:
    """What one `embeddings` row becomes; None for a trait another replaced (its replacement is imported)."""
    old_type = str(row.get("memory_type") or "general").lower()
    metadata = porting._json(row.get("metadata"), line, "metadata", {}) or {}
    if not isinstance(metadata, dict):
        raise ImportFailed("metadata must be an object", line=line)
    replaced = bool(row.get("superseded_by")) or bool(row.get("valid_until"))
    if old_type in ("insight", "trait"):
        return None if replaced else _trait_from_row(row, metadata, line)
    if old_type not in V1_TYPES:
        raise ImportFailed(f"memory_type {old_type!r} is not a V1 type ({', '.join([*V1_TYPES, 'insight', 'trait'])})",
                           line=line)
    data = {key: value for key, value in metadata.items() if key not in ("importance", "tags", "emotion")}
    data["v1_id"] = str(row.get("id") or "")
    if row.get("superseded_by"):
        data["v1_superseded_by"] = str(row["superseded_by"])
    emotion = metadata.get("emotion") if isinstance(metadata.get("emotion"), dict) else None
    return ImportRecord(line=line, spec=MemorySpec(
        user_id=porting._user(row.get("user_id"), line), text=porting._text(row.get("content"), line),
        memory_type=V1_TYPES[old_type], importance=porting._importance(metadata.get("importance"), line),
        tags=porting._tags(metadata.get("tags"), line), data=data, emotion=emotion,
        valid_at=porting._when(row.get("valid_from") or row.get("created_at"), line, "valid_from"),
        status=MemoryStatus.ARCHIVED if replaced else MemoryStatus.ACTIVE,
    ), vector=porting._vector(row.get("embedding"), line), vector_model=V1_VECTOR_MODEL)


def read_v1(directory: Path, report: V1Report) -> tuple[Iterator[ImportRecord], list[PlannedTrait]]:
    """The memories to write (read lazily) and the traits, from a V1 export directory."""
    embeddings, key_values = directory / "embeddings.jsonl", directory / "key_values.jsonl"
    if not embeddings.exists():
        raise ImportFailed(f"{embeddings} does not exist (a V1 export holds embeddings.jsonl, key_values.jsonl)")
    traits: list[PlannedTrait] = []
    profile_facts: list[ImportRecord] = []
    for number, row in porting.jsonl_rows(embeddings):
        planned = plan_embedding_row(row, number)
        if isinstance(planned, PlannedTrait):
            traits.append(planned)
    if key_values.exists():
        for number, row in porting.jsonl_rows(key_values):
            entries = plan_profile_entry(row, number)
            if entries is None:
                report.configuration += 1
                continue
            for entry in entries:
                if isinstance(entry, PlannedTrait):
                    traits.append(entry)
                else:
                    profile_facts.append(ImportRecord(line=number, spec=entry))

    def memories() -> Iterator[ImportRecord]:
        for number, row in porting.jsonl_rows(embeddings):
            planned = plan_embedding_row(row, number)
            if isinstance(planned, ImportRecord):
                yield planned
        yield from profile_facts

    return memories(), traits


def import_v1(*, tenant: Tenant, directory: Path, actor: str = "import:v1", batch_size: int = 500,
              restart: bool = False, progress: Callable[[str, int, int], None] | None = None) -> V1Report:
    """Import a V1 export: memories first, then traits; resumable, each part after its last batch."""
    report = V1Report()
    records, traits = read_v1(directory, report)
    where = str(directory.resolve())
    memory_checkpoint = porting.checkpoint_path(tenant.name, "v1-memories", where)
    trait_checkpoint = porting.checkpoint_path(tenant.name, "v1-traits", where)
    if restart:
        memory_checkpoint.unlink(missing_ok=True)
        trait_checkpoint.unlink(missing_ok=True)
    report.memories = porting.import_records(
        tenant=tenant, records=records, actor=actor, batch_size=batch_size, checkpoint=memory_checkpoint,
        progress=(lambda r: progress("memories", r.read, 0)) if progress else None)
    _import_traits(tenant, traits, actor, batch_size, trait_checkpoint, report, progress)
    return report


def _import_traits(tenant: Tenant, traits: list[PlannedTrait], actor: str, batch_size: int, checkpoint: Path,
                   report: V1Report, progress: Callable[[str, int, int], None] | None) -> None:
    already = porting.read_checkpoint(checkpoint)
    for done, planned in enumerate(traits, start=1):
        report.traits_read += 1
        if done <= already:
            report.traits_resumed += 1
            continue
        if sensitive_kinds(planned.text):
            report.traits_sensitive += 1
        elif _held_already(tenant, planned):
            report.traits_unchanged += 1
        else:
            services.trait_create(tenant=tenant, user_id=planned.user_id, text=planned.text, subtype=planned.subtype,
                                  context=planned.context, actor=actor, stage=planned.stage,
                                  confidence=planned.confidence, data=planned.data)
            report.traits_added += 1
        if done % batch_size == 0:
            porting.write_checkpoint(checkpoint, done)
            if progress:
                progress("traits", done, len(traits))
    checkpoint.unlink(missing_ok=True)
    if progress:
        progress("traits", len(traits), len(traits))


def _held_already(tenant: Tenant, planned: PlannedTrait) -> bool:
    """The user already has this trait (a second run, or the same words twice): the writer would NOOP."""
    return MemoryItem.objects.filter(tenant=tenant, user_id=planned.user_id, memory_type=MemoryType.TRAIT,
                                     content_hash=content_hash(planned.text), expired_at__isnull=True).exists()
