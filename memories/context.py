"""What an agent should know right now: the prompt block, in sections.

0. profile: who the user is, whatever the question (memories.profile): standing wishes about answers,
   then the key facts (name, health, diet, home, work, partner, family), at most a quarter of the block;
1. traits: the user's traits that have earned a place (stage emerging or
   above, decayed confidence above CONTEXT_TRAIT_MIN_CONFIDENCE), core values
   first, then preferences, then behaviours;
2. group profile: for a group turn, the group's shared facts and roles;
3. memories: the most relevant long-term memories, as many as the budget holds: the search is asked
   for enough lines to fill max_chars with short ones (memory_lines_for: at least CONTEXT_MEMORY_LIMIT,
   one per CONTEXT_CHARS_PER_MEMORY characters, at most CONTEXT_MEMORY_MAX) and the block takes them
   best first until its characters run out, so a Chinese block (short lines) fills its budget as an
   English one does; a request's `limit` fixes the number instead. The search loads only the best
   candidates whose lines fill CANDIDATE_CHARS_SHARE times the block (candidate_fill): an English
   block needs a third of the lines a Chinese one does, and loading them all cost a /context 12 ms;
4. working memory (seed 003: every save of the last day, and what the store holds): the fresh items the search
   did not find, merged into the memories by relevance (the search's scorer), not a section after them.

What the block knows of its user before the search (the profile, the name, whether there are people or traits,
working memory, how long the user's lines are) is read in one statement (memories.context_reads); the search
is asked for as many lines as the user's short lines fill (memory_lines_from).

Near-duplicate lines collapse into the richer one (each line keeps its own identity); the block fits max_chars
without cutting a line; statuses (working memory off, search degraded, the
LLM summary's fallback) go in `status`, never into the text.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from memories import context_tuning as tuned
from memories import profile, vocabulary
from memories.context_lines import HEADINGS, ContextLine, _line_text, block_language, collapse_near_duplicates, render
from memories.context_lines import _tokens as _tokens
from memories.context_lines import near_duplicate as near_duplicate
from memories.context_reads import UserReads, WorkingAsk, memory_lines_from, user_reads, working_since
from memories.embedding import embed_query, get_embedder
from memories.excerpts import episode_excerpt
from memories.extraction import UNKNOWN_SPEAKER, load_prompt
from memories.models import MemoryItem, MemoryType, PersonKind, Tenant
from memories.people.selectors import PersonView, named_in, people_lines, people_of
from memories.process_state import ThreadPool
from memories.search import (
    CharacterFill,
    ScoredMemory,
    SearchPlan,
    SearchQuery,
    candidate_row,
    memory_search,
    newest_in_scope,
    score_candidate,
)
from memories.search import tuning as search_tuning
from memories.text import has_han
from memories.timing import alongside
from memories.trait_lines import trait_lines_read
from memories.working import (
    WORKING_MEMORY_MIN_CHARS,
    WORKING_MEMORY_MIN_CONFIDENCE,
    WorkingMemoryUnavailable,
    working_memory_recent,
    working_store,
)

logger = logging.getLogger(__name__)
_EMBEDDING_POOL = ThreadPool(max_workers=2, thread_name_prefix="context-embedding")

FORMATS = ("markdown", "plain", "json")
TRAIT_STAGES_SHOWN = vocabulary.TRAIT_STAGES_SHOWN
TRAIT_ORDER = ("core", "preference", "behavior")  # seed 004: core values, then preferences, then behaviours
GROUP_PROFILE_LIMIT = 5


@dataclass
class ContextRequest:
    query: str
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    group_id: str | None = None
    limit: int | None = None  # long-term memories; None: CONTEXT_MEMORY_LIMIT
    trait_limit: int | None = None  # None: CONTEXT_TRAIT_LIMIT
    max_chars: int = 2000
    format: str = "markdown"
    include_working_memory: bool = True
    condense: bool = False
    language: str | None = None  # headings: en, zh or auto; None: CONTEXT_LANGUAGE


@dataclass
class PromptContext:
    text: str
    format: str
    lines: list[ContextLine]  # what the text shows, in order
    memories: list[ScoredMemory]  # the scored memories behind the memory and working-memory lines
    status: dict[str, str | list[str]]

    def sections(self) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {"profile": [], "traits": [], "people": [], "group_profile": [],
                                      "memories": [], "working_memory": []}
        for line in self.lines:
            out[line.section].append(line.as_dict())
        return out


# --------------------------------------------------------------------------- gathering


def _date(memory: MemoryItem) -> str:
    return (memory.valid_at or memory.created_at).date().isoformat()


def memory_lines_for(max_chars: int, *, floor: int, per_line: int, ceiling: int) -> int:
    """How many memory lines a block of max_chars may hold when the request names no limit: the
    budget decides (a 2,000-character block holds more evidence than six lines), never fewer than
    `floor` (seed 000's K), never more than `ceiling` (the search's own bound on what it ranks well)."""
    return max(floor, min(ceiling, max_chars // max(per_line, 1)))


# A memory line's characters beside its text ("- [2026-10-09] " and the newline).
LINE_CHARS = 16
# The search loads candidates for this many times the block's characters: near-duplicates collapse, the
# profile's lines are not repeated, an episode may have no matching turn, and a line that does not fit
# leaves room a later, shorter one takes.
CANDIDATE_CHARS_SHARE = 1.5


def candidate_fill(max_chars: int) -> CharacterFill:
    """What the block's search loads: the best candidates until they fill CANDIDATE_CHARS_SHARE times
    the block (an episode counted as its excerpt's length at most)."""
    return CharacterFill(budget=int(max_chars * CANDIDATE_CHARS_SHARE), per_line=LINE_CHARS,
                         line_max=tuned.CONTEXT_EPISODE_LINE_CHARS)


def session_first(found: list[ScoredMemory], session_id: str | None) -> list[ScoredMemory]:
    """The search's answer with the current session's memories ranked up by CONTEXT_SESSION_BOOST (their
    score times 1 + boost), the rest in the search's order."""
    if not session_id:
        return found
    boost = 1.0 + tuned.CONTEXT_SESSION_BOOST
    return sorted(found, key=lambda r: -(r.score * (boost if r.memory.session_id == session_id else 1.0)))


def _memory_line(found: ScoredMemory, query: str) -> ContextLine | None:
    """A memory as a context line; an episode shows the turns that match the question, dated by the best
    (None when none does: a session's chit-chat is not evidence)."""
    memory = found.memory
    text, date = memory.text, _date(memory)
    excerpt = vocabulary.Tag.EPISODE in (memory.tags or []) and bool(memory.data.get("turns"))
    if excerpt:
        text, turn_date = episode_excerpt(memory.data["turns"], query, tuned.CONTEXT_EPISODE_LINE_CHARS)
        if not text:
            return None
        date = turn_date or date
    return ContextLine(section="memories", id=str(memory.id), text=text, date=date, kind=memory.memory_type,
                       score=found.score, excerpt=excerpt)


def others_of(people: list[PersonView]) -> set[str]:
    """The ids of everyone in the user's life but the user: a memory about one of them is not the user's
    profile (a mother-in-law's back was the user's "family" line)."""
    return {str(v.person.id) for v in people if v.person.kind != PersonKind.USER}


def profile_lines(request: ContextRequest, candidates: list[MemoryItem], named: str | None,
                  others: Collection[str] = ()) -> list[ContextLine]:
    """The profile the block opens with (memories.profile), in the request's scope, as many lines as a
    quarter of max_chars holds with its heading (the longer heading of the two languages: the block's
    language is decided later, and the profile must never be over its share). `named`: the name the
    block's title gives the user, whose name line it leaves out. `candidates`: the newest wishes and key facts
    in the request's scope (context_reads.user_reads)."""
    if request.user_id is None:
        return []
    ordered = profile.profile_order(sorted(sorted(candidates, key=lambda m: str(m.id)),
                                           key=lambda m: m.created_at, reverse=True))
    if named:  # the block's title names them already
        ordered = [m for m in ordered if profile.profile_slot(m) != vocabulary.Slot.NAME]
    ordered = [m for m in ordered if str(m.subject_entity_id) not in others]
    lines = [ContextLine(section="profile", id=str(m.id), text=m.text, date=_date(m), kind=profile.profile_slot(m))
             for m in ordered]
    heading = max(len(h["profile"]) for h in HEADINGS.values()) + 1
    costs = [len(_line_text(line, "en")) + 1 for line in lines]
    return [lines[i] for i in profile.fit_within(costs, profile.profile_budget(request.max_chars) - heading)]


def people_section(people: list[PersonView], asked: list[PersonView], request: ContextRequest) -> list[ContextLine]:
    """The People section: one compact line per person ("Priya — wife; teaches maths"), the people the
    question names (`asked`) first, then by last mention, CONTEXT_PEOPLE_LIMIT at most, within
    CONTEXT_PEOPLE_SHARE of max_chars with its heading."""
    if request.max_chars < tuned.CONTEXT_PEOPLE_MIN_CHARS:  # a short block keeps its room for memories
        return []
    named = {v.person.id for v in asked}
    ordered = sorted(people, key=lambda v: v.person.id not in named)
    said = [(str(view.person.id), text) for view in ordered for text in people_lines([view], chinese=has_han(
        " ".join([view.person.name, view.person.relation_word, *(m.text for m in view.facts[:1])])))]
    budget = int(request.max_chars * tuned.CONTEXT_PEOPLE_SHARE) - max(len(h["people"]) for h in HEADINGS.values())
    lines = []
    for person_id, text in said[:tuned.CONTEXT_PEOPLE_LIMIT]:
        if len(text) + 3 > budget:
            break
        budget -= len(text) + 3
        lines.append(ContextLine(section="people", id=person_id, text=text, kind="person"))
    return lines


def asked_about_lines(asked: list[PersonView], found: list[ScoredMemory]) -> list[ContextLine]:
    """A question naming a person ("how is my mum doing?") brings that person's current facts when the search
    found none about them: a question about the family no longer depends on keyword luck, and a search
    that found them keeps its ranking."""
    found_about = {i for r in found for i in (r.memory.subject_entity_id, r.memory.object_entity_id) if i}
    return [ContextLine(section="memories", id=str(m.id), text=m.text, date=_date(m), kind=m.memory_type)
            for view in asked if view.person.id not in found_about
            for m in view.facts[:tuned.CONTEXT_PERSON_FACTS]]


def trait_lines(tenant: Tenant, user_id: str, limit: int) -> list[ContextLine]:
    """Seed 004's trait recall, read by the traits app (memories.trait_lines; traits.selectors)."""
    if limit <= 0:
        return []
    rows = trait_lines_read(tenant, user_id, TRAIT_STAGES_SHOWN, TRAIT_ORDER, tuned.CONTEXT_TRAIT_MIN_CONFIDENCE,
                         limit)
    return [ContextLine(section="traits", id=r.id, text=r.text, kind=r.subtype, stage=r.stage,
                        confidence=r.decayed_confidence) for r in rows]


def group_profile_lines(tenant: Tenant, group_id: str) -> list[ContextLine]:
    """The group's shared facts and roles: what the group extractor kept about the group (Tag.GROUP),
    newest first — not every profile memory said in the group (a member's own job is theirs)."""
    rows = newest_in_scope(tenant, SearchQuery(query="", group_id=group_id, memory_types=[MemoryType.PROFILE],
                                               tags=[vocabulary.Tag.GROUP]), GROUP_PROFILE_LIMIT)
    return [ContextLine(section="group_profile", id=str(m.id), text=m.text, date=_date(m), kind="profile")
            for m in rows]


def _user_reads(tenant: Tenant, request: ContextRequest, limit: int) -> tuple[UserReads, str]:
    """context_reads.user_reads for the request: the profile in its scope, and the freshest working-memory
    items still searchable in its scope, session included (a few more than shown: some may be among the
    search's results); the working-memory status."""
    now = timezone.now()
    if request.user_id is None:
        return UserReads(), "not asked"
    profile_scope = SearchQuery(query="", user_id=request.user_id, agent_id=request.agent_id,
                                group_id=request.group_id)
    ask, status = None, "not asked"
    if request.include_working_memory and limit > 0:
        ask, status = _working_ask(tenant, request, limit, now)
    reads = user_reads(tenant, request.user_id, profile_scope=profile_scope, slots=vocabulary.KEY_FACT_SLOTS,
                       profile_limit=profile.PROFILE_CANDIDATES, working=ask,
                       line_max=tuned.CONTEXT_EPISODE_LINE_CHARS, now=now)
    return reads, status


def _working_ask(tenant: Tenant, request: ContextRequest, limit: int,
                 now: datetime) -> tuple[WorkingAsk | None, str]:
    """What working memory the block reads: the store's entries (Redis' ids read here) and the user's saves
    of the last WORKING_MEMORY_TTL. None, and a status saying why, with the store off or Redis down."""
    assert request.user_id is not None  # _user_reads asks for a user's block only
    store = working_store(settings.WORKING_MEMORY_STORE, settings.REDIS_URL)
    held: tuple[tuple[str, datetime], ...] = ()
    if store == "off":
        return None, "off: working memory is off (WORKING_MEMORY_STORE, or redis without REDIS_URL)"
    if store == "redis":
        try:
            held = tuple((e["id"], datetime.fromisoformat(e["created_at"]))
                         for e in working_memory_recent(tenant.id, request.user_id) if e.get("id"))
        except WorkingMemoryUnavailable as exc:
            return None, f"off: {exc}"
    scope = SearchQuery(query="", user_id=request.user_id, agent_id=request.agent_id,
                        session_id=request.session_id, group_id=request.group_id)
    return WorkingAsk(scope=scope, limit=limit + tuned.CONTEXT_MEMORY_LIMIT * 2,
                      since=working_since(now, settings.WORKING_MEMORY_TTL), entries=store == "database",
                      held=held, min_confidence=WORKING_MEMORY_MIN_CONFIDENCE, min_chars=WORKING_MEMORY_MIN_CHARS,
                      recent_saves=settings.WORKING_MEMORY_SIZE), "used"


def _working_memories(tenant: Tenant, request: ContextRequest, limit: int) -> tuple[list[MemoryItem], str]:
    """The freshest working-memory items still searchable in the request's scope (_user_reads)."""
    reads, status = _user_reads(tenant, request, limit)
    return reads.working, status


def _working_items(fresh: list[MemoryItem], known: set[str], found: list[ScoredMemory],
                   limit: int) -> list[ScoredMemory]:
    """Working-memory items the search did not find, scored by the search's scorer with the fusion of its
    weakest result (no retriever ranked them higher): fresher than that result, they may rank above it and
    the results near it, never above a result the question matched better."""
    now = timezone.now().timestamp()
    fusion = min((r.scores["fusion"] for r in found if r.scores.get("fusion")),
                 default=1.0 / (search_tuning.SEARCH_RRF_K + 1))
    out = []
    for memory in fresh:
        memory_id = str(memory.id)
        if memory_id in known:
            continue
        score, parts = score_candidate(candidate_row(memory), fusion, 0.0, now, None)
        out.append(ScoredMemory(memory=memory, score=score,
                                scores={"semantic": None, "keyword": None, **parts, "working_memory": True}))
        if len(out) >= limit:
            break
    return out


@dataclass
class GatheredLines:
    """What the block may show, before collapsing and rendering: every source read once."""

    lines: list[ContextLine]  # profile, traits and the group: shown first, they win a collapse
    memory_lines: list[ContextLine]  # the search's and working memory's, merged by relevance
    found: list[ScoredMemory]  # the search's memories, session first
    extra: list[ScoredMemory]  # working memory's items the search did not find
    named: str | None = None  # the name the user's profile holds (the title; the profile leaves it out)
    limit: int = 0  # memory lines at most (the request's, else memory_lines_from)


def build_context(*, tenant: Tenant, request: ContextRequest) -> PromptContext:
    """The block for one agent turn; see the module docstring: gathering, then composing."""
    if request.format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    status: dict[str, str | list[str]] = {}
    gathered = gather_lines(tenant, request, status)
    return compose_block(tenant, request, gathered, gathered.limit, status)


def gather_lines(tenant: Tenant, request: ContextRequest, status: dict[str, str | list[str]]) -> GatheredLines:
    """Every line the block may show: the profile, traits, people, group, the search and working memory.

    Statuses of working memory and the search go into `status`.
    """
    # The query's vector is computed on a worker thread (the model releases the GIL) while
    # the user's profile, people, traits and working memory are read: about 5 ms of a 30 ms answer.
    embedder = get_embedder()  # resolved here: the worker thread must not touch the database
    vector = _EMBEDDING_POOL.submit(alongside("embed", embed_query, request.query, embedder))
    reads, status["working_memory"] = _user_reads(tenant, request, tuned.CONTEXT_WORKING_LIMIT)
    limit = request.limit or memory_lines_from(request.max_chars, reads.short_line, floor=tuned.CONTEXT_MEMORY_LIMIT,
                                               per_line=tuned.CONTEXT_CHARS_PER_MEMORY,
                                               ceiling=tuned.CONTEXT_MEMORY_MAX, line_chars=LINE_CHARS)
    # A line a person, and a question naming them brings CONTEXT_PERSON_FACTS of their facts: no more are read.
    people = people_of(tenant, request.user_id, facts=max(1, tuned.CONTEXT_PERSON_FACTS), with_user=False) \
        if request.user_id is not None and reads.has_people else []
    lines: list[ContextLine] = profile_lines(request, reads.profile, reads.name, others=others_of(people))
    if request.user_id is not None and reads.has_traits:
        lines += trait_lines(tenant, request.user_id, tuned.CONTEXT_TRAIT_LIMIT if request.trait_limit is None
                             else request.trait_limit)
    asked = named_in(request.query, people)
    lines += people_section(people, asked, request)
    if request.group_id is not None:
        lines += group_profile_lines(tenant, request.group_id)

    plan = SearchPlan()
    # Ten beyond the limit (near-duplicates collapse); the fill stops loading once the block could be full.
    # A session is where the agent is, not a wall: the search reads every session of the user and the
    # current one's memories rank up (search itself keeps session_id as a filter).
    found = session_first(memory_search(tenant=tenant, plan=plan, query=SearchQuery(
        query=request.query, user_id=request.user_id, agent_id=request.agent_id,
        group_id=request.group_id, limit=limit + 10, fill=candidate_fill(request.max_chars),
        memory_types=[t for t in MemoryType.values if t != MemoryType.TRAIT]), embedder=embedder,
        query_vector=vector.result), request.session_id)
    status["search"] = "degraded: " + ", ".join(plan.degraded) if plan.degraded else "ok"
    if plan.degraded_reason:
        status["search_reason"] = plan.degraded_reason
    memory_lines, extra = _memory_and_working_lines(request, lines, found, reads.working, asked)
    return GatheredLines(lines=lines, memory_lines=memory_lines, found=found, extra=extra, named=reads.name,
                         limit=limit)


def _memory_and_working_lines(request: ContextRequest, lines: list[ContextLine], found: list[ScoredMemory],
                              fresh: list[MemoryItem],
                              asked: list[PersonView]) -> tuple[list[ContextLine], list[ScoredMemory]]:
    """The memory lines: the search's, with working memory's items it did not find merged in by relevance
    (seed 003: hot and cold results merged and ordered by relevance, one section), and the facts of the
    people the question names after the best few; and those working-memory items, scored."""
    asked_about = asked_about_lines(asked, found)
    shown_ids = {line.id for line in lines} | {line.id for line in asked_about}
    extra = _working_items(fresh, {str(r.memory.id) for r in found} | shown_ids, found, tuned.CONTEXT_WORKING_LIMIT)
    boost = 1.0 + tuned.CONTEXT_SESSION_BOOST

    def relevance(r: ScoredMemory) -> float:  # session_first's order, for the working items too
        return -(r.score * (boost if request.session_id and r.memory.session_id == request.session_id else 1.0))

    merged = heapq.merge(((relevance(r), 0, n, r) for n, r in enumerate(found) if str(r.memory.id) not in shown_ids),
                         sorted((relevance(r), 1, n, r) for n, r in enumerate(extra)))
    searched = [line for _, _, _, r in merged if (line := _memory_line(r, request.query)) is not None]
    # The person's facts after the search's best few: they make sure the person is there, not that the
    # search's ranking is overruled (first, they cost bench-personas dev 0.740 -> 0.699 at 400 characters).
    after = tuned.CONTEXT_PERSON_FACTS_AFTER
    return searched[:after] + asked_about + searched[after:], extra


def kept_lines(gathered: GatheredLines, limit: int) -> list[ContextLine]:
    """Collapse across sections: traits and the group come first and win; memories keep at most `limit` lines."""
    # A People line sums a person up ("Sheila — mum; teaches maths"): it never stands in for a memory line.
    people = [line for line in gathered.lines if line.section == "people"]
    collapsed = collapse_near_duplicates([line for line in gathered.lines if line.section != "people"]
                                         + gathered.memory_lines,
                                         tuned.CONTEXT_DUPLICATE_SIMILARITY)
    at = next((i for i, line in enumerate(collapsed) if line.section not in ("profile", "traits")), len(collapsed))
    collapsed[at:at] = people
    memory_count = 0
    lines = []
    for line in collapsed:
        if line.section == "memories":
            memory_count += 1
            if memory_count > limit:
                continue
        lines.append(line)
    return lines


def compose_block(tenant: Tenant, request: ContextRequest, gathered: GatheredLines, limit: int,
                  status: dict[str, str | list[str]]) -> PromptContext:
    """The block from the gathered lines: collapsed, in the block's language, rendered within max_chars."""
    lines = kept_lines(gathered, limit)
    if gathered.named and request.user_id:
        lines = [replace(line, text=with_the_users_name(line.text, gathered.named)) for line in lines]
        lines = [line for line in lines if not only_names(line.text, gathered.named)]
    language = block_language(request.language or settings.CONTEXT_LANGUAGE, request.query, lines)
    status["language"] = language
    # The block is headed with the name the user gave ("What you know about Maria"), else their id.
    subject = ((gathered.named or request.user_id) if request.user_id else
               f"群组 {request.group_id}" if language == "zh" else f"the group {request.group_id}")
    text, shown = render(lines, subject=subject, form=request.format, max_chars=request.max_chars,
                         language=language)
    if request.condense:
        text, status["condensed"] = condensed_or_offline(text, request)
    by_id = {str(r.memory.id): r for r in [*gathered.found, *gathered.extra]}
    scored = [by_id[line.id] for line in shown if line.id in by_id]
    return PromptContext(text=text, format=request.format, lines=shown, memories=scored, status=status)


_PLACEHOLDER_EN = re.compile(rf"\b{UNKNOWN_SPEAKER['en']}\b")
_PLACEHOLDER_ZH = re.compile(rf"^{UNKNOWN_SPEAKER['zh']}|{UNKNOWN_SPEAKER['zh']}(?=的)")


def with_the_users_name(text: str, name: str) -> str:
    """A line kept before the user gave their name says "User" / "用户" (the placeholder extraction writes
    until then); the agent reads the name the user gave, as the block's title says it (issue 52)."""
    return _PLACEHOLDER_ZH.sub(name, _PLACEHOLDER_EN.sub(name, text))


def only_names(text: str, name: str) -> bool:
    """A line that says only the name the block's title gives ("Nadia's name is Nadia", "周琳叫周琳"): what a
    line kept before the name was known ("User's name is Nadia") reads as once the name is put in."""
    return bool(re.fullmatch(rf"{re.escape(name)}(?:'s name is| is called|叫|的名字是)\s*{re.escape(name)}[.。]?",
                             text.strip()))


# --------------------------------------------------------------------------- the optional LLM summary


def condensed_or_offline(text: str, request: ContextRequest) -> tuple[str, str]:
    """Seed 000's condensed form (3-6 points) through the configured LLM; the
    offline block, and a status saying why, on any failure or without an LLM."""
    if not text:
        return text, "nothing to condense"
    if request.format == "json":
        return text, "skipped: the json format is not condensed"
    if not settings.LLM_BASE_URL:
        return text, "skipped: no LLM configured (LLM_BASE_URL)"
    try:
        summary = llm_condense(text, max_chars=request.max_chars)
    except Exception as exc:  # any LLM failure: the agent still gets the offline block
        logger.warning("context condensation failed, answering with the offline block: %s", exc)
        return text, f"fallback: {type(exc).__name__}: {exc}"[:300]
    return summary, "used"


def llm_condense(text: str, *, max_chars: int) -> str:
    from memories.llm import chat_client  # lazily: memories.llm imports openai (~0.5 s), needed only when an LLM is set

    client = chat_client(timeout=tuned.CONTEXT_CONDENSE_TIMEOUT)
    response = client.chat.completions.create(
        model=settings.LLM_MODEL, temperature=0,
        messages=[{"role": "system", "content": load_prompt("condense_system.md")},
                  {"role": "user", "content": text}])
    summary = (response.choices[0].message.content or "").strip() if response.choices else ""
    points = [line for line in summary.splitlines() if line.strip()]
    if not 1 <= len(points) <= 8 or len(summary) > max_chars:
        raise ValueError(f"the summary has {len(points)} lines and {len(summary)} characters; "
                         f"expected 3-6 points within {max_chars}")
    return summary
