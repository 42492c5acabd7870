"""HTTP views: validate input, call one service or selector, render output."""

from __future__ import annotations

from typing import cast

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import agents, erasure, governance, ingestion, selectors, writing
from memories.api.auth import ApiClient, ApiKeyAuthentication, IsReviewerKey
from memories.api.examples import SEARCH_EXAMPLES
from memories.api.filters import MemoryFilter
from memories.api.pagination import HistoryCursorPagination
from memories.api.serializers import (
    ApproveSerializer,
    BatchResultSerializer,
    CandidateListSerializer,
    CandidateSerializer,
    ContextRequestSerializer,
    ContextResponseSerializer,
    ConversationSerializer,
    ErasureSerializer,
    HistoryListSerializer,
    HistorySerializer,
    JobSerializer,
    MemoryBatchSerializer,
    MemoryCreateSerializer,
    MemoryMergeSerializer,
    MemoryPatchSerializer,
    MemorySearchSerializer,
    MemorySerializer,
    RejectSerializer,
    SearchResponseSerializer,
    WriteResultSerializer,
    path_identifier,
)
from memories.applier import Applied
from memories.context import ContextRequest
from memories.errors import MemoryNotFound
from memories.health import service_health
from memories.models import MemoryItem
from memories.permissions import key_may_read_job
from memories.search import SearchAnswer
from memories.timing import phase, timed


@timed("serialize")
def _write_results(results: list[writing.WriteResult]) -> list[dict]:
    # One serializer for the whole list: a ModelSerializer per instance rebuilds
    # its fields each time (measured: ~3 ms per memory).
    memories = MemorySerializer([r.memory for r in results], many=True).data
    return [{"operation": r.operation, "reason": r.reason, "memory": m} for r, m in zip(results, memories,
                                                                                       strict=True)]


def _applied_results(applied: list[Applied]) -> list[dict]:
    """A batch's answer, in order: each write result, or REVIEW with the candidate the gate held."""
    written = iter(_write_results([writing.WriteResult(a.operation, a.memory, a.reason)  # type: ignore[arg-type]
                                   for a in applied if a.candidate is None]))
    return [{"operation": "REVIEW", "reason": a.reason, "candidate": CandidateSerializer(a.candidate).data}
            if a.candidate is not None else next(written) for a in applied]


def _write_result(result: writing.WriteResult) -> dict:
    return _write_results([result])[0]


def includes_data(request) -> bool:
    """`?include=data`: lists, searches and context carry each memory's `data` only when asked."""
    return "data" in {part.strip() for value in request.query_params.getlist("include") for part in value.split(",")}


@timed("serialize")
def _scored(results, request) -> list[dict]:
    memories = MemorySerializer([r.memory for r in results], many=True,
                                context={"include_data": includes_data(request)}).data
    loaded = [getattr(r.memory, "loaded_sources", None) for r in results]
    sources = ({str(r.memory.id): found for r, found in zip(results, loaded, strict=True)}
               if all(found is not None for found in loaded)  # loaded with the memories (search.memories_by_id)
               else selectors.memory_sources([r.memory.id for r in results]))
    return [{"memory": m, "score": r.score, "scores": r.scores, "sources": sources[str(r.memory.id)]}
            for r, m in zip(results, memories, strict=True)]


def erasure_body(result: erasure.ErasureResult) -> dict:
    receipt = result.receipt
    return {"user_id": result.user_id, "receipt_id": receipt.id if receipt else None,
            "erased_at": receipt.created_at if receipt else None, "counts": result.counts,
            **{name: result.counts[name] for name in ("memories", "vectors", "sources", "history_scrubbed")}}


class MemoryListCreateView(generics.ListAPIView):
    serializer_class = MemorySerializer
    filterset_class = MemoryFilter

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "include_data": includes_data(self.request)}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no tenant
            return MemoryItem.objects.none()
        return selectors.memory_list(tenant=cast(ApiClient, self.request.user).tenant)

    def get(self, request, *args, **kwargs):
        """List memories, newest first, cursor-paginated (filters by user, scope, type, tag, status, dates).
        Current memories only unless asked: `status=archived` (or another status), `current=false`
        (superseded and invalidated versions), or `include=all`; `include=data` adds each memory's data."""
        return super().get(request, *args, **kwargs)

    @extend_schema(request=MemoryCreateSerializer, responses={201: WriteResultSerializer})
    def post(self, request):
        """Save one memory: ADD, NOOP or UPDATE (infer: decided against near-duplicates)."""
        serializer = MemoryCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        applied = agents.memory_save(tenant=request.user.tenant, spec=serializer.to_spec(), actor=request.user.actor,
                                     infer=bool(serializer.validated_data.get("infer")), role=request.user.role,
                                     api_key_id=request.user.key_id)
        if applied.candidate is not None:
            return _held_response(applied.candidate)
        assert applied.memory is not None
        return Response(_write_result(writing.WriteResult(applied.operation, applied.memory, applied.reason)),
                        status=status.HTTP_201_CREATED)


class MemoryBatchView(APIView):
    @extend_schema(request=MemoryBatchSerializer, responses={201: BatchResultSerializer})
    def post(self, request):
        """Save up to MEMORY_BATCH_MAX memories in one transaction."""
        serializer = MemoryBatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        applied = agents.memory_save_batch(tenant=request.user.tenant, specs=serializer.to_specs(),
                                           actor=request.user.actor, role=request.user.role,
                                           api_key_id=request.user.key_id)
        return Response({"results": _applied_results(applied)}, status=status.HTTP_201_CREATED)


class MemoryMergeView(APIView):
    @extend_schema(request=MemoryMergeSerializer, responses={201: MemorySerializer,
                                                             409: OpenApiResponse(description="version conflict")})
    def post(self, request):
        """Merge memories of one user into a new one; the originals are superseded by it (history: MERGE)."""
        serializer = MemoryMergeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        merged = governance.memory_merge_by_key(tenant=request.user.tenant, memory_ids=data["ids"],
                                                role=request.user.role, actor=request.user.actor,
                                                text=data.get("text"), expected_versions=data.get("expected_versions"))
        return Response(MemorySerializer(merged).data, status=status.HTTP_201_CREATED)


class MemoryDetailView(APIView):
    @extend_schema(responses={200: MemorySerializer, 404: OpenApiResponse(description="not found")})
    def get(self, request, memory_id):
        """Read one memory."""
        with phase("work"):
            memory = selectors.memory_get(tenant=request.user.tenant, memory_id=memory_id)
        with phase("serialize"):
            return Response(MemorySerializer(memory).data)

    @extend_schema(request=MemoryPatchSerializer, responses={200: WriteResultSerializer,
                                                             409: OpenApiResponse(description="version conflict")})
    def patch(self, request, memory_id):
        """Change a memory (a new text supersedes it); held for review when an operator approved it."""
        serializer = MemoryPatchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        change = governance.memory_change_by_key(tenant=request.user.tenant, memory_id=memory_id,
                                                 role=request.user.role, api_key_id=request.user.key_id,
                                                 actor=request.user.actor, **serializer.validated_data)
        return _change_response(change)

    @extend_schema(responses={200: WriteResultSerializer, 202: CandidateSerializer})
    def delete(self, request, memory_id):
        """Archive a memory (history kept); held for review when an operator approved it."""
        change = governance.memory_change_by_key(tenant=request.user.tenant, memory_id=memory_id,
                                                 role=request.user.role, api_key_id=request.user.key_id,
                                                 actor=request.user.actor, archive=True)
        return _change_response(change)


def _held_response(candidate) -> Response:
    """Held for review: 202 and the review candidate."""
    return Response({"operation": "REVIEW", "reason": candidate.reason_detail,
                     "candidate": CandidateSerializer(candidate).data}, status=status.HTTP_202_ACCEPTED)


def _change_response(change: governance.ClientChange) -> Response:
    """Applied: the write result. Held (an operator-approved memory): 202 and the review candidate."""
    if change.candidate is not None:
        return _held_response(change.candidate)
    assert change.result is not None
    return Response(_write_result(change.result))


class MemoryHistoryView(APIView):
    @extend_schema(responses={200: HistoryListSerializer})
    def get(self, request, memory_id):
        """Paginated (`next` / `previous` links): a memory edited a thousand times answers in pages."""
        paginator = HistoryCursorPagination()
        rows = paginator.paginate_queryset(selectors.memory_history(tenant=request.user.tenant, memory_id=memory_id),
                                           request, view=self)
        return paginator.get_paginated_response(HistorySerializer(rows, many=True).data)


def search_body(answer: SearchAnswer, request) -> dict:
    """A search's answer: each result with its matched keywords and preview (and its turns when asked),
    the total, the groups, and whether a side failed (an answer from keywords alone, not an empty one)."""
    results = _scored(answer.results, request)
    for found, body in zip(answer.results, results, strict=True):
        memory_id = str(found.memory.id)
        body["matched_keywords"] = answer.matched_keywords.get(memory_id, [])
        body["preview"] = answer.previews.get(memory_id, "")
        if answer.turns is not None:
            body.update(answer.turns.get(memory_id) or {"turns": [], "turns_total": 0})
    plan = answer.plan
    return {"results": results, "total_count": plan.total_count, "total_count_exact": plan.total_count_exact,
            "groups": answer.groups, "degraded": plan.degraded, "degraded_reason": plan.degraded_reason}


class MemorySearchView(APIView):
    @extend_schema(request=MemorySearchSerializer, responses={200: SearchResponseSerializer},
                   examples=SEARCH_EXAMPLES)
    def post(self, request):
        """Search a user's (or a group's) memories: hybrid, semantic or keyword, with every score part.
        Left out, `limit`, `min_score` and `min_similarity` take the mode's defaults (docs/search.md)."""
        serializer = MemorySearchSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        answer = agents.search_answered(tenant=request.user.tenant, query=serializer.to_query(now=timezone.now()),
                                        include_turns=serializer.validated_data["include_turns"])
        return Response(search_body(answer, request))


class UserMemoriesView(APIView):
    @extend_schema(parameters=[OpenApiParameter("agent_id", str, description="erase only what this agent saved")],
                   responses={200: ErasureSerializer})
    def delete(self, request, user_id):
        """Erase the user (or, with ?agent_id=, one agent's part of the user): nothing of their words remains.
        A key without the erase permission erases what it saved and proposes the rest (202, `candidate`)."""
        agent = request.query_params.get("agent_id")
        answer = governance.user_erase_requested(
            tenant=request.user.tenant, user_id=path_identifier(user_id), api_key=request.user.key,
            actor=request.user.actor, agent_id=path_identifier(agent, "agent_id") if agent is not None else None)
        body = erasure_body(answer.result)
        if answer.candidate is None:
            return Response(body)
        return Response({**body, "candidate": CandidateSerializer(answer.candidate).data},
                        status=status.HTTP_202_ACCEPTED)


class HealthView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses={200: OpenApiResponse(description="all essential parts work"),
                              503: OpenApiResponse(description="an essential part is down")})
    def get(self, request):
        """Status for anyone; the checks (versions, model, broker) only for a valid API key."""
        report = service_health()
        code = status.HTTP_503_SERVICE_UNAVAILABLE if report["status"] == "unavailable" else status.HTTP_200_OK
        try:  # a key is checked in the database: with it down, the status only, at once (not a pool wait)
            authenticated = report["checks"]["database"]["ok"] and \
                ApiKeyAuthentication().authenticate(request) is not None
        except AuthenticationFailed:
            authenticated = False
        return Response(report if authenticated else {"status": report["status"]}, status=code)


@timed("serialize")
def _job_body(job) -> dict:
    return JobSerializer(job).data


def _readable_job(request, job_id):
    """A job this key may see: its own, or any of the tenant's for a reviewer key (others look missing)."""
    job = selectors.job_get(tenant=request.user.tenant, job_id=job_id)
    if not key_may_read_job(role=request.user.role, key_id=request.user.key_id, job_key_id=job.api_key_id):
        raise MemoryNotFound(f"job {job_id} not found")
    return job


class ConversationView(APIView):
    @extend_schema(request=ConversationSerializer, responses={202: JobSerializer})
    def post(self, request):
        """Send a conversation's turns; the service extracts what is worth keeping (a job)."""
        serializer = ConversationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = agents.conversation_submit(tenant=request.user.tenant, api_key=request.user.key,
                                         **serializer.validated_data)
        return Response(_job_body(job), status=status.HTTP_202_ACCEPTED)


class JobDetailView(APIView):
    @extend_schema(responses={200: JobSerializer})
    def get(self, request, job_id):
        """Read a conversation job: its status and the operations it made."""
        return Response(_job_body(_readable_job(request, job_id)))


class JobRetryView(APIView):
    @extend_schema(request=None, responses={202: JobSerializer})
    def post(self, request, job_id):
        """Re-run a failed conversation job from its kept turns."""
        job = ingestion.conversation_job_retry(tenant=request.user.tenant, job_id=_readable_job(request, job_id).id)
        return Response(_job_body(job), status=status.HTTP_202_ACCEPTED)


class ReviewListView(APIView):
    permission_classes = [IsReviewerKey]
    @extend_schema(responses={200: CandidateListSerializer})
    def get(self, request):
        """The review queue: candidates waiting for a reviewer (reviewer keys)."""
        rows = governance.candidate_pending(tenant=request.user.tenant)
        return Response({"results": CandidateSerializer(rows, many=True).data})


class ReviewApproveView(APIView):
    permission_classes = [IsReviewerKey]
    @extend_schema(request=ApproveSerializer, responses={200: CandidateSerializer})
    def post(self, request, candidate_id):
        """Approve a candidate, optionally with an edited text (reviewer keys; never one's own). Text the
        sensitive-data screen flags is approved only redacted (`sensitive: redacted`) or as written with a
        reason (`sensitive: as_written`, `reason`), both audited."""
        serializer = ApproveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        candidate = governance.candidate_approve(tenant=request.user.tenant, candidate_id=candidate_id,
                                                 actor=request.user.actor, api_key=request.user.key,
                                                 edited_text=data.get("text"), sensitive=data.get("sensitive", ""),
                                                 sensitive_reason=data.get("reason", ""))
        return Response(CandidateSerializer(candidate).data)


class ReviewRejectView(APIView):
    permission_classes = [IsReviewerKey]
    @extend_schema(request=RejectSerializer, responses={200: CandidateSerializer})
    def post(self, request, candidate_id):
        """Reject a candidate with a reason (reviewer keys; never one's own)."""
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        candidate = governance.candidate_reject(tenant=request.user.tenant, candidate_id=candidate_id,
                                                actor=request.user.actor, reason=serializer.validated_data["reason"],
                                                api_key=request.user.key)
        return Response(CandidateSerializer(candidate).data)


class ContextView(APIView):
    @extend_schema(request=ContextRequestSerializer, responses={200: ContextResponseSerializer})
    def post(self, request):
        """What the agent should know right now: traits, the group, memories, working memory."""
        serializer = ContextRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        built = agents.context_for_agent(tenant=request.user.tenant,
                                         request=ContextRequest(**serializer.validated_data))
        return Response({"context": built.text, "format": built.format, "sections": built.sections(),
                         "status": built.status, "working_memory": built.status.get("working_memory", ""),
                         "memories": _scored(built.memories, request)})
