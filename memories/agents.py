"""What an agent asks of the service, once for every interface: the REST API,
Mem0's routes and the MCP tools call these and only translate around them.

Reads (search_for_agent, context_for_agent) run on the replica when one is
configured and count the reads of what they return (access counting feeds
recency of use); writes (memory_save, conversation_submit) go through the
writer or the applier.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from memories import writing
from memories.access import record_memory_access
from memories.applier import Applied, Submitter, apply_saves
from memories.context import ContextRequest, PromptContext, build_context
from memories.ingestion import conversation_job_create, memory_save_inferred
from memories.models import ApiKey, ConversationJob, KeyRole, Tenant
from memories.queue import background_queue_full
from memories.quota import refuse_when_busy
from memories.replicas import on_replica
from memories.search import (
    ScoredMemory,
    SearchAnswer,
    SearchPlan,
    SearchQuery,
    memory_search,
    search_answer_build,
    turns_behind,
)
from memories.timing import timed


@timed("work")
def search_for_agent(*, tenant: Tenant, query: SearchQuery, plan: SearchPlan | None = None) -> list[ScoredMemory]:
    """A search as an agent reads it: on the replica, the reads counted."""
    results = on_replica(lambda: memory_search(tenant=tenant, query=query, plan=plan))
    record_memory_access([str(r.memory.id) for r in results])
    return results


@timed("work")
def search_answered(*, tenant: Tenant, query: SearchQuery, include_turns: bool = False) -> SearchAnswer:
    """A search with what every interface shows beside its ranking (matched keywords, previews, groups, the
    total, whether a side failed) and, when asked, the original turns behind each memory."""
    plan = SearchPlan()
    results = on_replica(lambda: memory_search(tenant=tenant, query=query, plan=plan))
    record_memory_access([str(r.memory.id) for r in results])
    turns = on_replica(lambda: turns_behind(tenant.id, [r.memory for r in results])) if include_turns else None
    return search_answer_build(query, results, plan, turns)


@timed("work")
def context_for_agent(*, tenant: Tenant, request: ContextRequest) -> PromptContext:
    """The prompt block for an agent turn: on the replica, the reads of its memories counted."""
    built = on_replica(lambda: build_context(tenant=tenant, request=request))
    record_memory_access([str(r.memory.id) for r in built.memories])
    return built


@timed("work")
def memory_save(*, tenant: Tenant, spec: writing.MemorySpec, actor: str, infer: bool,
                role: str = KeyRole.AGENT, api_key_id: int | None = None) -> Applied:
    """Save one memory as given (ADD, or NOOP/UPDATE of the same text), or with infer: decided against the
    user's near-duplicates. Either way the applier's gate may hold it for review (REVIEW)."""
    if infer:
        return memory_save_inferred(tenant=tenant, spec=spec, actor=actor, role=role, api_key_id=api_key_id)
    return apply_saves(tenant=tenant, specs=[spec], submitter=Submitter(actor=actor, role=role,
                                                                         api_key_id=api_key_id))[0]


@timed("work")
def memory_save_batch(*, tenant: Tenant, specs: Sequence[writing.MemorySpec], actor: str,
                      role: str = KeyRole.AGENT, api_key_id: int | None = None, turns: bool = False) -> list[Applied]:
    """Save many memories as given, in one transaction; what the gate holds is REVIEW, in place. `turns`:
    they are a conversation's turns, read two at a time as well (applier.apply_saves). A batch embedded in
    the background counts against the tenant's pending jobs (quota.refuse_when_busy: 429 when over)."""
    if len(specs) > settings.EMBEDDING_INLINE_MAX_ITEMS:
        refuse_when_busy(tenant.id, queue_full=background_queue_full())
    return apply_saves(tenant=tenant, specs=specs, submitter=Submitter(actor=actor, role=role,
                                                                       api_key_id=api_key_id), turns=turns)


@timed("work")
def conversation_submit(*, tenant: Tenant, api_key: ApiKey | None, user_id: str, session_id: str,
                        messages: list[dict], agent_id: str = "", group_id: str = "",
                        participants: dict | None = None) -> ConversationJob:
    """Send a conversation for extraction; the job as it stands when the call returns (in-process mode it
    has already run, so its outcome is there)."""
    job = conversation_job_create(tenant=tenant, api_key=api_key, user_id=user_id, session_id=session_id,
                                  messages=messages, agent_id=agent_id, group_id=group_id,
                                  participants=participants)
    job.refresh_from_db()
    return job
