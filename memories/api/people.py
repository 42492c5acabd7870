"""`GET /api/v1/users/{user_id}/people` and `/people/{id}`: the people in a user's life, as the service knows
them (memories.people). Reading only; reviewers change people in the admin."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.api.serializers import path_identifier
from memories.models import PersonEdge, PersonHistory, PersonKind
from memories.people.selectors import PersonPage, PersonView, people_of, person_label, person_page

PERSON_KINDS = [k.value for k in PersonKind]


def edge_body(edge: PersonEdge) -> dict[str, Any]:
    return {"id": str(edge.id), "predicate": edge.predicate, "value": edge.value,
            "target_id": str(edge.target_id) if edge.target_id else None,
            "source_id": str(edge.source_id),
            "valid_at": edge.valid_at.isoformat() if edge.valid_at else None,
            "invalid_at": edge.invalid_at.isoformat() if edge.invalid_at else None,
            "created_at": edge.created_at.isoformat(),
            "expired_at": edge.expired_at.isoformat() if edge.expired_at else None,
            "memory_id": str(edge.memory_id) if edge.memory_id else None}


def person_body(view: PersonView) -> dict[str, Any]:
    person = view.person
    return {"id": str(person.id), "name": person_label(person), "given_name": person.name or None,
            "kind": person.kind, "relation": person.relation or None, "relation_word": person.relation_word or None,
            "aliases": view.aliases, "version": person.version,
            "current_facts": [{"id": str(m.id), "text": m.text, "memory_type": m.memory_type} for m in view.facts],
            "edges": [edge_body(e) for e in view.edges]}


def event_body(event: PersonHistory) -> dict[str, Any]:
    return {"event": event.event, "old_data": event.old_data, "new_data": event.new_data, "actor": event.actor,
            "reason": event.reason, "created_at": event.created_at.isoformat()}


PERSON_SCHEMA = inline_serializer("Person", {
    "id": serializers.UUIDField(), "name": serializers.CharField(), "given_name": serializers.CharField(
        allow_null=True), "kind": serializers.ChoiceField(PERSON_KINDS),
    "relation": serializers.CharField(allow_null=True, help_text="normalised: mother, partner, friend, ..."),
    "relation_word": serializers.CharField(allow_null=True, help_text="the user's own word: mum, 婆婆"),
    "aliases": serializers.ListField(child=serializers.CharField()), "version": serializers.IntegerField(),
    "current_facts": serializers.ListField(child=serializers.DictField()),
    "edges": serializers.ListField(child=serializers.DictField())})


PERSON_DETAIL_SCHEMA = inline_serializer("PersonDetail", {
    **PERSON_SCHEMA.fields, "status": serializers.CharField(),
    "facts_history": serializers.ListField(child=serializers.DictField()),
    "edges_history": serializers.ListField(child=serializers.DictField()),
    "history": serializers.ListField(child=serializers.DictField()),
    "connected": serializers.ListField(child=serializers.DictField())})


def person_page_body(page: PersonPage) -> dict[str, Any]:
    """One person's page as REST and MCP answer it."""
    return {**person_body(page.view), "status": page.view.person.status,
            "facts_history": [{"id": str(m.id), "text": m.text,
                               "valid_at": m.valid_at.isoformat() if m.valid_at else None,
                               "invalid_at": m.invalid_at.isoformat() if m.invalid_at else None,
                               "expired_at": m.expired_at.isoformat() if m.expired_at else None}
                              for m in page.facts_history],
            "edges_history": [edge_body(e) for e in page.edges_history],
            "history": [event_body(e) for e in page.events],
            "connected": page.connected}


class PeopleView(APIView):
    @extend_schema(operation_id="users_people_list",
                   parameters=[OpenApiParameter("kind", str, enum=PERSON_KINDS, description="only this kind")],
                   responses={200: inline_serializer("People", {
                       "user_id": serializers.CharField(),
                       "people": serializers.ListField(child=PERSON_SCHEMA)})})
    def get(self, request, user_id):
        """The people (and pets, places, organisations) in the user's life: the user first, then by last
        mention; each with aliases, where they live or work now, and their current facts."""
        user_id = path_identifier(user_id)
        kind = request.query_params.get("kind")
        if kind is not None and kind not in PERSON_KINDS:
            raise serializers.ValidationError({"kind": [f"one of {', '.join(PERSON_KINDS)}"]})
        views = people_of(request.user.tenant, user_id, kinds=[kind] if kind else ())
        return Response({"user_id": user_id, "people": [person_body(v) for v in views]})


class PersonDetailView(APIView):
    @extend_schema(operation_id="users_person_retrieve", responses={200: PERSON_DETAIL_SCHEMA})
    def get(self, request, user_id, person_id):
        """One person: current facts and edges, the facts about them that stopped holding, every edge with
        its valid and invalid time (where they lived before), the history of changes, and who is within
        two hops."""
        return Response(person_page_body(person_page(request.user.tenant, path_identifier(user_id), person_id)))
