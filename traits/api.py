"""HTTP views for traits: validate, call one service or selector, render."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import path_identifier
from traits import selectors
from traits.models import TraitStage


class TraitSerializer(serializers.Serializer):
    id = serializers.UUIDField(source="pk")
    text = serializers.CharField(source="memory.text")
    subtype = serializers.CharField()
    stage = serializers.CharField()
    context = serializers.CharField()  # type: ignore[assignment]
    confidence = serializers.FloatField()
    decayed_confidence = serializers.SerializerMethodField(
        help_text="confidence now, after decay (traits.lifecycle.trait_decayed_confidence)")
    supporting = serializers.IntegerField()
    contradicting = serializers.IntegerField()
    reinforcement_count = serializers.IntegerField()
    pinned = serializers.BooleanField()
    parent = serializers.UUIDField(source="parent_id", allow_null=True)  # type: ignore[assignment]
    children = serializers.SerializerMethodField(help_text="ids of traits whose parent this is (GET /traits/{id})")
    last_reinforced_at = serializers.DateTimeField(allow_null=True)
    data = serializers.JSONField(source="memory.data")  # type: ignore[assignment]

    def get_decayed_confidence(self, trait) -> float:
        return round(selectors.trait_confidence_now(trait), 4)

    def get_children(self, trait) -> list[str]:
        return [str(child.pk) for child in trait.children.all()]


class EvidenceSerializer(serializers.Serializer):
    memory_id = serializers.UUIDField()
    text = serializers.CharField(source="memory.text")
    kind = serializers.CharField()
    quality = serializers.CharField()
    context = serializers.CharField()  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    withdrawn_at = serializers.DateTimeField(allow_null=True, help_text="support that stopped holding")
    cycle_id = serializers.IntegerField(allow_null=True, help_text="the reflection cycle that recorded or "
                                                                   "withdrew it")
    session_id = serializers.CharField(source="memory.session_id", help_text="where it was said")
    reason = serializers.CharField(help_text="why it joined the trait")
    closeness = serializers.FloatField(allow_null=True, help_text="how close in meaning it was to the trait")


class SessionEvidenceSerializer(serializers.Serializer):
    session_id = serializers.CharField()
    evidence = EvidenceSerializer(many=True)


class ReviewerActionSerializer(serializers.Serializer):
    action = serializers.CharField()
    what = serializers.CharField()


class UserTraitsSerializer(serializers.Serializer):
    behavior = TraitSerializer(many=True)
    preference = TraitSerializer(many=True)
    core = TraitSerializer(many=True)


class ParentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    subtype = serializers.CharField()
    stage = serializers.CharField()


class ConfidencePointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    stage = serializers.CharField(allow_null=True)
    confidence = serializers.FloatField(allow_null=True)


class ChildSerializer(ParentSerializer):
    decayed_confidence = serializers.FloatField()


class TraitDetailSerializer(TraitSerializer):
    evidence = EvidenceSerializer(many=True)
    evidence_by_session = SessionEvidenceSerializer(many=True)
    reviewer_actions = ReviewerActionSerializer(many=True)
    child_traits = ChildSerializer(many=True)
    parent_chain = ParentSerializer(many=True)
    confidence_history = ConfidencePointSerializer(many=True)


def _stages(request) -> list[str] | None:
    """`?stage=trend,candidate` (repeatable); absent: the active stages."""
    asked = [part.strip() for value in request.query_params.getlist("stage") for part in value.split(",")
             if part.strip()]
    unknown = sorted(set(asked) - set(TraitStage.values))
    if unknown:
        raise serializers.ValidationError({"stage": [f"unknown stage(s) {', '.join(unknown)}; one of "
                                                     f"{', '.join(TraitStage.values)}"]})
    return asked or None


class UserTraitsView(APIView):
    @extend_schema(parameters=[OpenApiParameter("stage", str, description="comma-separated stages; default: "
                                                "emerging, established, core")],
                   responses={200: UserTraitsSerializer})
    def get(self, request, user_id):
        """A user's traits by subtype; trends, candidates and dissolved ones only when asked with ?stage=."""
        grouped = selectors.traits_of_user(tenant=request.user.tenant, user_id=path_identifier(user_id),
                                           stages=_stages(request))
        return Response({subtype: TraitSerializer(rows, many=True).data for subtype, rows in grouped.items()})


# What a reviewer can do with a trait in the admin (Traits, Trait evidence), each a versioned change of the
# trait's memory with the reviewer's name and reason.
REVIEWER_ACTIONS = [
    {"action": "pin", "what": "keep it as it is: it no longer decays or dissolves on its own"},
    {"action": "split", "what": "move statements that say something else into a trait of their own"},
    {"action": "dissolve", "what": "end it: it is no longer shown to agents"},
]


class TraitDetailView(APIView):
    @extend_schema(responses={200: TraitDetailSerializer})
    def get(self, request, trait_id):
        """One trait with its evidence, parents, children and confidence history."""
        trait = selectors.trait_get(tenant=request.user.tenant, trait_id=trait_id)
        evidence = trait.evidence.select_related("memory").order_by("created_at")
        body: dict[str, Any] = dict(TraitSerializer(trait).data)  # type: ignore[call-overload]
        return Response({**body,
                         "evidence": EvidenceSerializer(evidence, many=True).data,
                         "evidence_by_session": SessionEvidenceSerializer(
                             selectors.trait_evidence_by_session(trait), many=True).data,
                         "reviewer_actions": REVIEWER_ACTIONS,
                         "parent_chain": [{"id": str(p.pk), "text": p.memory.text, "subtype": p.subtype,
                                           "stage": p.stage} for p in selectors.trait_parent_chain(trait)],
                         "child_traits": [{"id": str(c.pk), "text": c.memory.text, "subtype": c.subtype,
                                           "stage": c.stage,
                                           "decayed_confidence": round(selectors.trait_confidence_now(c), 4)}
                                          for c in selectors.trait_children(trait)],
                         "confidence_history": selectors.trait_confidence_history(trait)})
