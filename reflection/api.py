"""HTTP views for reflection cycles: validate, call the engine, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import IdentifierField, RejectUnknownFieldsMixin, path_identifier
from reflection.engine import reflection_cycle_get, reflection_request
from reflection.moments import session_end_request


class CycleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    user_id = serializers.CharField()
    session_id = serializers.CharField(allow_blank=True, help_text="the ended session (trigger session_end)")
    trigger = serializers.CharField()
    status = serializers.CharField()
    memories_scanned = serializers.IntegerField()
    traits_created = serializers.IntegerField()
    traits_updated = serializers.IntegerField()
    traits_dissolved = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
    started_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


class ReflectRequestSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    pass


class ReflectView(APIView):
    @extend_schema(request=ReflectRequestSerializer, responses={202: CycleSerializer})
    def post(self, request, user_id):
        """Queue a reflection cycle for a worker: 202 with its id at once; poll
        GET /reflection-cycles/{id}. A cycle already waiting or running is returned instead."""
        ReflectRequestSerializer(data=request.data or {}).is_valid(raise_exception=True)
        cycle = reflection_request(tenant=request.user.tenant, user_id=path_identifier(user_id))
        return Response(CycleSerializer(cycle).data, status=status.HTTP_202_ACCEPTED)


class CycleDetailView(APIView):
    @extend_schema(responses={200: CycleSerializer})
    def get(self, request, cycle_id):
        """A reflection cycle's status (queued, running, completed, failed) and outcome."""
        return Response(CycleSerializer(reflection_cycle_get(tenant=request.user.tenant, cycle_id=cycle_id)).data)


class SessionEndSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    user_id = IdentifierField()


class SessionIdSerializer(serializers.Serializer):
    session_id = IdentifierField()


class SessionEndView(APIView):
    @extend_schema(request=SessionEndSerializer, responses={202: CycleSerializer, 200: CycleSerializer})
    def post(self, request, session_id):
        """The client says a session ended: its reflection cycle (trigger session_end) is queued over the
        session's memories, 202 with its id. At most one per session: ending it again, or after it went
        idle (SESSION_IDLE_MINUTES), answers 200 with the first cycle."""
        body = SessionEndSerializer(data=request.data or {})
        body.is_valid(raise_exception=True)
        cycle, queued = session_end_request(tenant=request.user.tenant, user_id=body.validated_data["user_id"],
                                            session_id=path_identifier(session_id, "session_id"))
        return Response(CycleSerializer(cycle).data,
                        status=status.HTTP_202_ACCEPTED if queued else status.HTTP_200_OK)
