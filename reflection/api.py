"""HTTP views for reflection cycles: validate, call the engine, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import RejectUnknownFieldsMixin, path_identifier
from reflection.engine import reflection_cycle_get, reflection_request


class CycleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    user_id = serializers.CharField()
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
