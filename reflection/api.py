"""HTTP view for running a reflection cycle: validate, call the engine, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import RejectUnknownFieldsMixin, path_identifier
from reflection.engine import ReflectionBusy, reflection_run
from reflection.models import CycleTrigger


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
        ReflectRequestSerializer(data=request.data or {}).is_valid(raise_exception=True)
        try:
            cycle = reflection_run(tenant=request.user.tenant, user_id=path_identifier(user_id),
                                   trigger=CycleTrigger.SESSION_END)
        except ReflectionBusy as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(CycleSerializer(cycle).data, status=status.HTTP_202_ACCEPTED)
