"""`GET /api/v1/users/{user_id}/sessions` and `/sessions/{session_id}/turns`: a user's sessions and one
session's raw turns as the conversation jobs keep them (memories.selectors.session_turns). Reading only."""

from __future__ import annotations

import base64
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param
from rest_framework.views import APIView

from memories import selectors
from memories.api.serializers import path_identifier
from memories.permissions import KeyAction, key_may

TURNS_PAGE_SIZE = 100
TURNS_MAX_PAGE_SIZE = 500
BAD_CURSOR = "invalid cursor: use the `next` or `previous` link as given"

TURN_SCHEMA = inline_serializer("SessionTurn", {
    "job_id": serializers.UUIDField(), "index": serializers.IntegerField(help_text="position in the job's turns"),
    "role": serializers.CharField(), "name": serializers.CharField(allow_null=True, help_text="the speaker's name"),
    "content": serializers.CharField(help_text="as stored: a forgotten turn reads as its marker"),
    "created_at": serializers.DateTimeField(help_text="the turn's own time if sent with one, else its job's")})
SESSION_SCHEMA = inline_serializer("Session", {
    "session_id": serializers.CharField(), "first_turn_at": serializers.DateTimeField(),
    "last_turn_at": serializers.DateTimeField(), "turns": serializers.IntegerField(),
    "jobs": serializers.IntegerField()})


def _key_scope(request) -> int | None:
    """Reviewer keys read every job of the tenant; agent keys the jobs they submitted (as job reads)."""
    return None if key_may(request.user.role, KeyAction.ALL_JOBS) else request.user.key_id


def _page_size(request) -> int:
    given = request.query_params.get("page_size")
    if given is None:
        return TURNS_PAGE_SIZE
    if not given.isdigit() or not 1 <= int(given) <= TURNS_MAX_PAGE_SIZE:
        raise serializers.ValidationError({"page_size": [f"a whole number from 1 to {TURNS_MAX_PAGE_SIZE}"]})
    return int(given)


def _offset(request) -> int:
    given = request.query_params.get("cursor")
    if given is None:
        return 0
    try:
        decoded = base64.urlsafe_b64decode(given.encode("ascii")).decode("ascii")
    except (ValueError, UnicodeError):
        raise serializers.ValidationError({"cursor": [BAD_CURSOR]}) from None
    if not decoded.startswith("o=") or not decoded[2:].isdigit():
        raise serializers.ValidationError({"cursor": [BAD_CURSOR]})
    return int(decoded[2:])


def _link(request, offset: int) -> str:
    url = request.build_absolute_uri()
    if offset <= 0:
        return remove_query_param(url, "cursor")
    return replace_query_param(url, "cursor", base64.urlsafe_b64encode(f"o={offset}".encode()).decode("ascii"))


def turn_body(turn: selectors.SessionTurn) -> dict[str, Any]:
    return {"job_id": str(turn.job_id), "index": turn.position, "role": turn.role, "name": turn.name or None,
            "content": turn.content, "created_at": turn.created_at.isoformat()}


class SessionTurnsView(APIView):
    @extend_schema(operation_id="users_session_turns_list",
                   parameters=[OpenApiParameter("page_size", int, description=f"at most {TURNS_MAX_PAGE_SIZE}"),
                               OpenApiParameter("cursor", str, description="a page's `next` or `previous` link")],
                   responses={200: inline_serializer("SessionTurnPage", {
                       "user_id": serializers.CharField(), "session_id": serializers.CharField(),
                       "next": serializers.URLField(allow_null=True),
                       "previous": serializers.URLField(allow_null=True),
                       "results": serializers.ListField(child=TURN_SCHEMA)})})
    def get(self, request, user_id, session_id):
        """The user's raw turns of one session, in order (job by job, each job's turns by position), as the
        conversation jobs keep them: a turn the user asked to forget reads as its marker; an erased user has
        none. Another tenant's user, or a session with no jobs, is an empty list."""
        user_id, session_id = path_identifier(user_id), path_identifier(session_id, "session_id")
        size, offset = _page_size(request), _offset(request)
        turns = selectors.session_turns(tenant=request.user.tenant, user_id=user_id, session_id=session_id,
                                        key_id=_key_scope(request))
        page = turns[offset:offset + size]
        return Response({"user_id": user_id, "session_id": session_id,
                         "next": _link(request, offset + size) if offset + size < len(turns) else None,
                         "previous": _link(request, max(offset - size, 0)) if offset > 0 else None,
                         "results": [turn_body(t) for t in page]})


class UserSessionsView(APIView):
    @extend_schema(operation_id="users_sessions_list", responses={200: inline_serializer("Sessions", {
        "user_id": serializers.CharField(), "sessions": serializers.ListField(child=SESSION_SCHEMA)})})
    def get(self, request, user_id):
        """The user's sessions, latest first: when their first and last conversation job came, how many
        turns the jobs keep and how many jobs."""
        user_id = path_identifier(user_id)
        rows = selectors.user_sessions(tenant=request.user.tenant, user_id=user_id, key_id=_key_scope(request))
        return Response({"user_id": user_id, "sessions": [
            {"session_id": r.session_id, "first_turn_at": r.first_turn_at.isoformat(),
             "last_turn_at": r.last_turn_at.isoformat(), "turns": r.turns, "jobs": r.jobs} for r in rows]})
