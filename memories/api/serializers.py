"""Input serializers validate; output serializers render. No rules live here."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import datetime, timedelta, tzinfo
from typing import cast

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import APIException

from memories.context import FORMATS
from memories.errors import InvalidOperation
from memories.identity import normalize_identifier
from memories.models import MemoryHistory, MemoryItem, MemoryType, Person
from memories.people.selectors import person_label
from memories.permissions import public_actor
from memories.search import MODES, SearchQuery, search_query
from memories.text import query_tokens
from memories.timing import phase
from memories.writing import MemorySpec, episode_unit


class StrictCharField(serializers.CharField):
    """A string, and only a string: 123 or true for a text field is a client bug."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false, and only those: "yes" or 1 for a switch is a client bug."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictDictField(serializers.JSONField):
    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Expected a JSON object.")
        return super().to_internal_value(data)


class FieldTooLarge(APIException):
    """413 naming the field and its bound (the body was well-formed, one part is too big)."""

    status_code = 413
    default_code = "too_large"

    def __init__(self, field: str, message: str):
        super().__init__({field: [message]})


class BoundedDataField(StrictDictField):
    """A memory's `data`: a JSON object of at most MEMORY_MAX_DATA_BYTES."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        size = len(json.dumps(value, ensure_ascii=False).encode())
        if size > settings.MEMORY_MAX_DATA_BYTES:
            raise FieldTooLarge(self.field_name or "data",
                                f"data is {size} bytes as JSON; the limit is {settings.MEMORY_MAX_DATA_BYTES} "
                                "(MEMORY_MAX_DATA_BYTES)")
        return value


class BoundedDateTimeField(serializers.DateTimeField):
    """A timestamp between TIMESTAMP_MIN_YEAR and TIMESTAMP_MAX_YEAR."""

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)
        if not settings.TIMESTAMP_MIN_YEAR <= parsed.year <= settings.TIMESTAMP_MAX_YEAR:
            raise serializers.ValidationError(f"must be between the years {settings.TIMESTAMP_MIN_YEAR} and "
                                              f"{settings.TIMESTAMP_MAX_YEAR}")
        return parsed


def _field_copy(field: serializers.Field) -> serializers.Field:
    """A field of its own for one serializer: a shallow copy, with a shallow copy of its child
    (ListField, DictField; already bound by name, so only its parent changes); serializers (which
    do keep state) deep-copied as DRF does."""
    if isinstance(field, serializers.BaseSerializer):
        return copy.deepcopy(field)
    copied = copy.copy(field)
    child = getattr(field, "child", None)
    if isinstance(child, serializers.Field):
        own_child = _field_copy(child)
        own_child.parent = copied  # type: ignore[assignment]  # a field as parent, as DRF binds it
        copied.child = own_child  # type: ignore[attr-defined]  # ListField and DictField have one
    return copied


class RejectUnknownFieldsMixin(serializers.Serializer):
    """Typos in field names are errors, not silently ignored options. (The input
    serializers' base: their validation is timed as the request's `validate` phase.)"""

    def is_valid(self, *, raise_exception=False):
        with phase("validate"):
            return super().is_valid(raise_exception=raise_exception)

    def get_fields(self):
        """The declared fields copied shallowly (DRF then binds each copy to this serializer).
        DRF deep-copies them, which rebuilds every field from its arguments: a third of a
        millisecond for the search body, in every request. Input fields keep nothing between
        validations; a nested serializer still gets its own deep copy."""
        return {name: _field_copy(field) for name, field in self._declared_fields.items()}

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = set(data) - set(self.fields)
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in sorted(unknown)})
        return super().to_internal_value(data)


class IdentifierField(StrictCharField):
    """A user, agent, session or group id: NFKC-normalised; invisible or control characters are a 400."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 255)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            return normalize_identifier(value, field=self.field_name or "id")
        except InvalidOperation as exc:
            raise serializers.ValidationError(str(exc)) from None


def path_identifier(value: str, field: str = "user_id") -> str:
    """An id from the URL path, normalised like one from a body (400 naming the field otherwise)."""
    if len(value) > 255:
        raise serializers.ValidationError({field: [f"{field} is longer than 255 characters"]})
    try:
        return normalize_identifier(value, field=field)
    except InvalidOperation as exc:
        raise serializers.ValidationError({field: [str(exc)]}) from None


def bounded_query(value: str) -> str:
    """A search query of at most SEARCH_MAX_QUERY_TERMS distinct words (each is a column of the SQL)."""
    terms = len(query_tokens(value))
    if terms > settings.SEARCH_MAX_QUERY_TERMS:
        raise serializers.ValidationError(f"the query has {terms} distinct terms; the limit is "
                                          f"{settings.SEARCH_MAX_QUERY_TERMS} (SEARCH_MAX_QUERY_TERMS)")
    return value


def _text_field(**kwargs) -> StrictCharField:
    return StrictCharField(max_length=settings.MEMORY_MAX_TEXT_CHARS, trim_whitespace=True, **kwargs)


def _scope_field() -> StrictCharField:
    return IdentifierField(required=False, allow_blank=True, default="")


def _tags_field() -> serializers.ListField:
    return serializers.ListField(child=StrictCharField(max_length=100), required=False, default=list,
                                 max_length=settings.MEMORY_MAX_TAGS)


class MemoryCreateSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    user_id = IdentifierField()
    text = _text_field()
    memory_type = serializers.ChoiceField(choices=MemoryType.choices, required=False, default="fact")
    importance = StrictFloatField(min_value=0, max_value=1, required=False, default=0.5)
    tags = _tags_field()
    data = BoundedDataField(required=False, default=dict)  # type: ignore[assignment]
    agent_id = _scope_field()
    session_id = _scope_field()
    group_id = _scope_field()
    valid_at = BoundedDateTimeField(required=False, allow_null=True, default=None)
    expires_at = BoundedDateTimeField(required=False, allow_null=True, default=None,
                                      help_text="when it stops being recalled (default: MEMORY_TTL_DAYS_BY_TYPE)")
    ttl_seconds = StrictIntegerField(required=False, min_value=1, max_value=100 * 365 * 86400,
                                     help_text="the same as expires_at, counted from now")
    infer = serializers.BooleanField(required=False, default=False,
                                     help_text="decide against the user's near-duplicates as conversations do "
                                               "(NOOP, UPDATE, INVALIDATE + ADD, ADD); default: stored verbatim")

    def validate(self, attrs):
        ttl = attrs.pop("ttl_seconds", None)
        if ttl is not None:
            if attrs.get("expires_at") is not None:
                raise serializers.ValidationError({"ttl_seconds": ["Give expires_at or ttl_seconds, not both."]})
            attrs["expires_at"] = timezone.now() + timedelta(seconds=ttl)
        elif attrs.get("expires_at") is not None and attrs["expires_at"] <= timezone.now():
            raise serializers.ValidationError({"expires_at": ["expires_at must be in the future."]})
        return attrs

    def validate_memory_type(self, value: str) -> str:
        if value == MemoryType.TRAIT:
            raise serializers.ValidationError(
                "traits are not saved directly: they grow from memories through reflection "
                "(POST /api/v1/users/{user_id}/reflect); save the observation as a fact or episodic memory")
        return value

    def to_spec(self) -> MemorySpec:
        return MemorySpec(**{k: v for k, v in self.validated_data.items() if k != "infer"})


class MemoryBatchSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    memories = MemoryCreateSerializer(many=True, allow_empty=False, max_length=settings.MEMORY_BATCH_MAX)  # type: ignore[call-arg]

    def validate_memories(self, value: list) -> list:
        if any(m.get("infer") for m in value):
            raise serializers.ValidationError("infer is for single saves (POST /memories); a batch is stored verbatim.")
        return value

    def to_specs(self) -> list[MemorySpec]:
        return [MemorySpec(**{k: v for k, v in m.items() if k != "infer"}) for m in self.validated_data["memories"]]


class MemoryMergeSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    ids = serializers.ListField(child=serializers.UUIDField(), min_length=2, max_length=100)
    text = _text_field(required=False, help_text="the merged text; default: the texts joined, oldest first")
    expected_versions = serializers.DictField(child=StrictIntegerField(min_value=1), required=False,
                                              help_text="memory id -> the version you saw; a stale one is a 409")

    def validate_ids(self, value: list) -> list:
        if len(set(value)) != len(value):
            raise serializers.ValidationError("Each id once.")
        return [str(v) for v in value]

    def validate_expected_versions(self, value: dict) -> dict:
        try:
            return {str(uuid.UUID(key)): version for key, version in value.items()}
        except ValueError:
            raise serializers.ValidationError("Keys must be memory ids.") from None


class MemoryPatchSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    text = _text_field(required=False)
    importance = StrictFloatField(min_value=0, max_value=1, required=False)
    tags = serializers.ListField(child=StrictCharField(max_length=100), required=False,
                                 max_length=settings.MEMORY_MAX_TAGS)
    data = BoundedDataField(required=False)  # type: ignore[assignment]
    expires_at = BoundedDateTimeField(required=False, allow_null=True, help_text="null: never expires")
    expected_version = StrictIntegerField(min_value=1, required=False)

    def validate(self, attrs):
        if not set(attrs) - {"expected_version"}:
            raise serializers.ValidationError({"non_field_errors": ["Nothing to change: give text, importance, "
                                                                    "tags, data or expires_at."]})
        return attrs


def _filter_scope_field() -> IdentifierField:
    """A scope to search in; absent means any (see memories/search/filters.py for the rules)."""
    return IdentifierField(required=False)


def require_user_or_group(attrs: dict) -> dict:
    if not attrs.get("user_id") and not attrs.get("group_id"):
        raise serializers.ValidationError({"user_id": ["Give user_id, or group_id to read a group's memories."]})
    return attrs


class MemorySearchSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    user_id = IdentifierField(required=False)
    agent_id = _filter_scope_field()
    session_id = _filter_scope_field()
    group_id = _filter_scope_field()
    query = StrictCharField(max_length=settings.SEARCH_MAX_QUERY_CHARS)
    mode = serializers.ChoiceField(choices=MODES, required=False, default="hybrid")
    memory_types = serializers.ListField(child=serializers.ChoiceField(choices=MemoryType.choices), required=False,
                                         allow_empty=False, max_length=len(MemoryType.values))  # each type once
    tags = serializers.ListField(child=StrictCharField(max_length=100), required=False, allow_empty=False,
                                 max_length=settings.MEMORY_MAX_TAGS)
    start_time = BoundedDateTimeField(required=False)
    end_time = BoundedDateTimeField(required=False)
    as_of = BoundedDateTimeField(required=False)
    person_id = serializers.UUIDField(required=False, help_text="only memories about this person (subject or "
                                      "object; an id from GET /users/{user_id}/people)")

    keywords = serializers.ListField(
        child=StrictCharField(max_length=100), required=False, allow_empty=False,
        max_length=settings.SEARCH_MAX_QUERY_TERMS,
        help_text="the keyword side looks for these words instead of the query's (keyword and hybrid modes); "
                  "each result says which it holds (matched_keywords)")
    time_range_days = StrictIntegerField(required=False, min_value=1, max_value=36500,
                                         help_text="only memories of the last N days (start_time = now - N days)")
    include_turns = StrictBooleanField(required=False, default=False,
                                       help_text="each result carries the conversation turns it was drawn from")

    def validate_query(self, value: str) -> str:
        return bounded_query(value)

    def validate_keywords(self, value: list[str]) -> list[str]:
        for keyword in value:
            if not query_tokens(keyword):
                raise serializers.ValidationError(f"{keyword!r} has no word a search looks for (only stopwords "
                                                  "or punctuation)")
        bounded_query(" ".join(value))
        return value
    # On the 0-1 relevance scale (scores.relevance), the same in every mode. Absent: the mode's default
    # (memories/search/defaults.py).
    min_score = StrictFloatField(required=False, min_value=0, max_value=1)
    min_similarity = StrictFloatField(required=False, min_value=-1, max_value=1)  # cosine floor, semantic side
    limit = StrictIntegerField(required=False, min_value=1, max_value=settings.SEARCH_MAX_LIMIT)

    def validate(self, attrs):
        require_user_or_group(attrs)
        start, end = attrs.get("start_time"), attrs.get("end_time")
        if start and end and start > end:
            raise serializers.ValidationError({"end_time": ["end_time must not be before start_time."]})
        if attrs.get("time_range_days") is not None and start:
            raise serializers.ValidationError({"time_range_days": ["give time_range_days or start_time, not both."]})
        if attrs.get("keywords") and attrs.get("mode") == "semantic":
            raise serializers.ValidationError({"keywords": ["keywords are for keyword and hybrid search; semantic "
                                                            "search reads the query only."]})
        return attrs

    def to_query(self, *, now: datetime) -> SearchQuery:
        """The SearchQuery asked for, the mode's defaults filled in (memories.search.search_query)."""
        fields = {k: v for k, v in self.validated_data.items() if k != "include_turns"}
        if fields.get("keywords"):
            fields["keywords"] = tuple(fields["keywords"])
        return search_query(now=now, **fields)


def _iso_utc(value: datetime, zone: tzinfo) -> str:
    """DRF's ISO 8601 form: in the current time zone (`zone`, looked up once by the caller: the
    lookup is two thirds of `localtime`'s cost), "+00:00" written "Z"."""
    text = value.astimezone(zone).isoformat() if value.utcoffset() is not None else value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


_ABOUT_FIELDS = ("subject", "object", "emotion", "episode")


def _entity(context: dict, person_id) -> dict | None:
    """{id, name} of an entity, its name looked up once per answer (preload_entities)."""
    if person_id is None:
        return None
    names = context.setdefault("_entity_names", {})
    if person_id not in names:
        preload_entities(context, [person_id])
    return {"id": str(person_id), "name": names.get(person_id, "")}


def preload_entities(context: dict, person_ids) -> None:
    """The names of these entities, in one query, for the memories an answer renders."""
    names = context.setdefault("_entity_names", {})
    wanted = {i for i in person_ids if i is not None and i not in names}
    if wanted:
        for person in Person.objects.filter(id__in=wanted).only("id", "name", "kind", "relation", "relation_word",
                                                                  "user_id"):
            names[person.id] = person_label(person)


class EpisodeUnitSerializer(serializers.Serializer):
    title = serializers.CharField()
    summary = serializers.CharField(help_text="the owner's most telling sentences, in the third person")
    narrative = serializers.CharField(help_text="the LLM's narrative of the owner's view; empty offline")
    subject = serializers.CharField()
    keywords = serializers.ListField(child=serializers.CharField())
    language = serializers.CharField()
    facts = serializers.ListField(child=serializers.CharField(), help_text="ids of the memories drawn from it")
    part = serializers.IntegerField()


class MemoryListSerializer(serializers.ListSerializer):
    """Many memories: the entities they name are read in one query, not one per memory."""

    def to_representation(self, data):
        child = self.child
        assert child is not None
        items = list(data.all() if hasattr(data, "all") else data)
        preload_entities(cast(dict, child.context), [i for m in items for i in (m.subject_entity_id,
                                                                                  m.object_entity_id)])
        return [child.to_representation(item) for item in items]


class MemorySerializer(serializers.ModelSerializer):
    """A memory. Lists, searches and context leave `data` out unless the
    request asks for it (`?include=data`): answers stay small."""

    superseded_by = serializers.UUIDField(source="superseded_by_id", read_only=True, allow_null=True)
    subject = serializers.SerializerMethodField(help_text="whom it is about: {id, name}; the user's own entity "
                                                "when about the user, null for a memory written before people")
    object = serializers.SerializerMethodField(help_text="the other entity the fact names, when one: {id, name}")
    emotion = serializers.SerializerMethodField(help_text="{valence -1..1, arousal 0..1, label}, when read")
    episode = serializers.SerializerMethodField(help_text=(
        "an episode's unit (seed 002), null for other memories: {title, summary (from the owner's own words), "
        "narrative (the LLM's, when one was written), subject, keywords, language, facts (ids of the memories "
        "drawn from it), part}"))

    def get_subject(self, instance) -> dict | None:
        return _entity(cast(dict, self.context), instance.subject_entity_id)

    def get_object(self, instance) -> dict | None:
        return _entity(cast(dict, self.context), instance.object_entity_id)

    def get_emotion(self, instance) -> dict | None:
        return instance.emotion

    @extend_schema_field(EpisodeUnitSerializer(allow_null=True))
    def get_episode(self, instance) -> dict | None:
        return episode_unit(instance)

    def to_representation(self, instance):
        """The same body DRF's fields would render (tests/test_read_path.py compares them), built
        directly: rendering field by field cost 0.6 ms a memory, a third of a context answer's time."""
        body = {}
        zone = timezone.get_current_timezone()
        for name in self.Meta.fields:
            if name == "data" and not self.context.get("include_data", True):
                continue
            if name in _ABOUT_FIELDS:
                body[name] = getattr(self, f"get_{name}")(instance)
                continue
            value = getattr(instance, "superseded_by_id" if name == "superseded_by" else name)
            if value is None or isinstance(value, (str, int, float, bool, dict)):
                body[name] = value
            elif isinstance(value, datetime):
                body[name] = _iso_utc(value, zone)
            elif isinstance(value, uuid.UUID):
                body[name] = str(value)
            elif isinstance(value, list):
                body[name] = list(value)
            else:
                body[name] = super().to_representation(instance)[name]
        return body

    class Meta:
        model = MemoryItem
        fields = [
            "id", "user_id", "agent_id", "session_id", "group_id", "memory_type", "text", "data", "tags",
            "importance", "confidence", "status", "version", "content_hash", "valid_at", "invalid_at",
            "created_at", "expired_at", "updated_at", "archived_at", "expires_at", "superseded_by", "embedding_state",
            "access_count", "last_accessed_at", "subject", "object", "emotion", "episode",
        ]
        list_serializer_class = MemoryListSerializer
        # Output only. `data` is not required in the schema: answers leave it out unless asked.
        read_only_fields = [name for name in fields if name != "data"]
        extra_kwargs = {"data": {"required": False}}


class ScoreSerializer(serializers.Serializer):
    relevance = serializers.FloatField(help_text="0-1: fusion over the best fusion this query could reach")
    semantic = serializers.FloatField(allow_null=True, help_text="cosine similarity, when the semantic side found it")
    keyword = serializers.FloatField(allow_null=True, help_text="BM25 score, when the keyword side found it")
    fusion = serializers.FloatField()
    recency = serializers.FloatField()
    importance = serializers.FloatField()
    stage = serializers.FloatField()
    trait_stage = serializers.CharField(required=False)
    trait_confidence = serializers.FloatField(required=False, allow_null=True)
    working_memory = serializers.BooleanField(required=False)


class SourceSerializer(serializers.Serializer):
    session_id = serializers.CharField(allow_blank=True)
    message_indices = serializers.ListField(child=serializers.IntegerField())
    job_id = serializers.CharField(allow_blank=True)


class SearchResultSerializer(serializers.Serializer):
    memory = MemorySerializer()
    score = serializers.FloatField()
    scores = ScoreSerializer()
    sources = SourceSerializer(many=True)


class SearchTurnSerializer(serializers.Serializer):
    job_id = serializers.CharField()
    index = serializers.IntegerField(help_text="the turn's place in the conversation sent")
    role = serializers.CharField()
    speaker = serializers.CharField(allow_blank=True)
    content = serializers.CharField(allow_blank=True, help_text="as an episode keeps it: sensitive data redacted")
    created_at = serializers.CharField(allow_null=True)


class SearchHitSerializer(SearchResultSerializer):
    """A search result with what the search answer adds (seed 001 §5.2, seed 002 §5.7)."""

    matched_keywords = serializers.ListField(child=serializers.CharField(),
                                             help_text="the query's words (or the keywords given) the memory holds")
    preview = serializers.CharField(allow_blank=True, help_text="the text on one line, at most 200 characters; an "
                                    "episode's turns that match the question")
    turns = SearchTurnSerializer(
        many=True, required=False,
        help_text="with include_turns: the conversation turns the memory was drawn from (at most 10; none for a "
                  "memory saved without a conversation or whose turns were dropped after their retention)")
    turns_total = serializers.IntegerField(required=False, help_text="with include_turns: how many turns it cites")


class SearchGroupSerializer(serializers.Serializer):
    group_id = serializers.CharField(allow_blank=True, help_text='the group conversation; "" outside any group')
    count = serializers.IntegerField()
    best_score = serializers.FloatField()
    memory_ids = serializers.ListField(child=serializers.UUIDField(), help_text="best first")


class SearchResponseSerializer(serializers.Serializer):
    results = SearchHitSerializer(many=True)
    total_count = serializers.IntegerField(help_text="memories that passed the scope, filters and floors among "
                                           "the candidates each side fetched (at most max(3 x limit, 50) each)")
    total_count_exact = serializers.BooleanField(help_text="false when a side stopped at its pool: total_count is "
                                                 "then a lower bound")
    groups = SearchGroupSerializer(many=True, help_text="the results per group conversation (group_id), in the "
                                   "order of each group's best result")
    degraded = serializers.ListField(child=serializers.CharField(),
                                     help_text='sides that could not run, e.g. ["semantic"] when the embedder or '
                                               "the vector search failed: an answer from the keyword side alone, "
                                               "not an empty one")
    degraded_reason = serializers.CharField(allow_blank=True, help_text='"embedding failed: ..." or '
                                            '"vector search failed: ..."')


class PublicActorField(serializers.CharField):
    """Operators appear to API clients as an opaque id, not a username."""

    def to_representation(self, value):
        return public_actor(str(value), settings.SECRET_KEY) if value else value


class HistorySerializer(serializers.ModelSerializer):
    actor = PublicActorField(read_only=True)

    class Meta:
        model = MemoryHistory
        fields = ["id", "memory_id", "event", "old_text", "new_text", "old_data", "new_data", "actor", "reason",
                  "job_id", "created_at"]
        read_only_fields = fields


class HistoryListSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = HistorySerializer(many=True)


class ErasureSerializer(serializers.Serializer):
    """The erasure's receipt: how many rows of each store held the user's data (zeros the second time)."""

    user_id = serializers.CharField()
    receipt_id = serializers.IntegerField(allow_null=True)
    erased_at = serializers.DateTimeField(allow_null=True)
    counts = serializers.DictField(child=serializers.IntegerField())
    memories = serializers.IntegerField()
    vectors = serializers.IntegerField()
    sources = serializers.IntegerField()
    history_scrubbed = serializers.IntegerField()



class MessageSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    role = serializers.ChoiceField(choices=["user", "assistant", "system", "tool"])
    content = StrictCharField(max_length=settings.MEMORY_MAX_TEXT_CHARS)
    name = StrictCharField(max_length=255, required=False, allow_blank=True)
    created_at = BoundedDateTimeField(required=False)


class ConversationSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    user_id = IdentifierField()
    session_id = IdentifierField()
    messages = MessageSerializer(many=True, allow_empty=False,  # type: ignore[call-arg]
                                 max_length=settings.CONVERSATION_MAX_MESSAGES)
    agent_id = _scope_field()
    group_id = _scope_field()
    participants = serializers.DictField(child=IdentifierField(), required=False, default=dict)

    def validate_participants(self, value: dict) -> dict:
        if len(value) > settings.CONVERSATION_MAX_PARTICIPANTS:
            raise serializers.ValidationError(f"at most {settings.CONVERSATION_MAX_PARTICIPANTS} participants "
                                              "(CONVERSATION_MAX_PARTICIPANTS)")
        return value

    def validate_messages(self, value: list) -> list:
        total = sum(len(m["content"]) for m in value)
        if total > settings.CONVERSATION_MAX_CHARS:
            raise FieldTooLarge("messages", f"the turns hold {total} characters; the limit is "
                                            f"{settings.CONVERSATION_MAX_CHARS} (CONVERSATION_MAX_CHARS): "
                                            "send long conversations in parts")
        return value

    def validate(self, attrs):
        for message in attrs["messages"]:
            if "created_at" in message:
                message["created_at"] = message["created_at"].isoformat()
        return attrs


class JobSerializer(serializers.Serializer):
    job_id = serializers.UUIDField(source="id")
    status = serializers.CharField()
    user_id = serializers.CharField()
    session_id = serializers.CharField()
    attempts = serializers.IntegerField()
    error = serializers.CharField(allow_blank=True)
    extractor = serializers.CharField(allow_blank=True)
    operations = serializers.JSONField()
    counts = serializers.JSONField()
    warnings = serializers.JSONField()
    submitted_by_key = serializers.IntegerField(source="api_key_id", allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class CandidateSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    user_id = serializers.CharField()
    operation = serializers.CharField()
    text = serializers.CharField()
    memory_type = serializers.CharField()
    importance = serializers.FloatField()
    confidence = serializers.FloatField()
    tags = serializers.ListField(child=serializers.CharField())
    reasons = serializers.ListField(child=serializers.CharField())
    reason_detail = serializers.CharField(allow_blank=True)
    target = MemorySerializer(allow_null=True)
    session_id = serializers.CharField(allow_blank=True)
    source_messages = serializers.JSONField()
    changes = serializers.JSONField()
    submitted_by_key = serializers.IntegerField(source="api_key_id", allow_null=True)
    status = serializers.CharField()
    resolved_by = PublicActorField(allow_blank=True)
    resolved_at = serializers.DateTimeField(allow_null=True)
    result_memory = serializers.UUIDField(source="result_memory_id", allow_null=True)
    created_at = serializers.DateTimeField()


class WriteResultSerializer(serializers.Serializer):
    operation = serializers.ChoiceField(choices=["ADD", "NOOP", "UPDATE", "DELETE", "REVIEW"])
    reason = serializers.CharField(allow_blank=True)
    memory = MemorySerializer(required=False, help_text="what was written (absent for REVIEW)")
    candidate = CandidateSerializer(required=False, help_text="REVIEW: the candidate waiting for a person")


class BatchResultSerializer(serializers.Serializer):
    results = WriteResultSerializer(many=True)


class ApproveSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    text = _text_field(required=False)
    sensitive = serializers.ChoiceField(choices=["as_written", "redacted"], required=False,
                                        help_text="approve text the sensitive-data screen flags: as written "
                                                  "(give `reason`), or redacted")
    reason = StrictCharField(max_length=1000, required=False, allow_blank=True, default="",
                             help_text="why sensitive data is kept as written (recorded in the audit trail)")


class RejectSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    reason = StrictCharField(max_length=1000, required=False, allow_blank=True, default="")


class ContextRequestSerializer(RejectUnknownFieldsMixin, serializers.Serializer):
    user_id = IdentifierField(required=False)
    agent_id = _filter_scope_field()
    session_id = _filter_scope_field()
    group_id = _filter_scope_field()
    query = StrictCharField(max_length=settings.SEARCH_MAX_QUERY_CHARS)
    limit = StrictIntegerField(required=False, min_value=1, max_value=20,
                               help_text="long-term memories (default CONTEXT_MEMORY_LIMIT)")
    trait_limit = StrictIntegerField(required=False, min_value=0, max_value=20,
                                     help_text="traits (default CONTEXT_TRAIT_LIMIT; 0: none)")
    max_chars = StrictIntegerField(required=False, default=2000, min_value=100, max_value=100_000)
    format = serializers.ChoiceField(choices=FORMATS, required=False, default="markdown")
    include_working_memory = serializers.BooleanField(required=False, default=True)
    condense = serializers.BooleanField(required=False, default=False,
                                        help_text="3-6 points through the configured LLM; the offline block "
                                                  "on any failure")
    language = serializers.ChoiceField(choices=("auto", "en", "zh"), required=False,
                                       help_text="the block's headings (default CONTEXT_LANGUAGE; auto: the "
                                                 "language of the question and the lines)")

    def validate_query(self, value: str) -> str:
        return bounded_query(value)

    def validate(self, attrs):
        return require_user_or_group(attrs)


class ContextLineSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    text = serializers.CharField()
    date = serializers.CharField(allow_blank=True)
    kind = serializers.CharField(allow_blank=True)
    stage = serializers.CharField(required=False)
    confidence = serializers.FloatField(required=False)
    score = serializers.FloatField(required=False)
    collapsed = serializers.ListField(child=serializers.UUIDField(), required=False)


class ContextSectionsSerializer(serializers.Serializer):
    traits = ContextLineSerializer(many=True)
    people = ContextLineSerializer(many=True)
    group_profile = ContextLineSerializer(many=True)
    memories = ContextLineSerializer(many=True)
    working_memory = ContextLineSerializer(many=True)


class ContextResponseSerializer(serializers.Serializer):
    context = serializers.CharField(allow_blank=True, help_text="the block to put in the prompt")  # type: ignore[assignment]
    format = serializers.CharField()
    sections = ContextSectionsSerializer(help_text="the same lines as data, for tool-calling agents")
    status = serializers.DictField(help_text="search, working_memory, condensed: how each part went; never "
                                             "part of the text")
    memories = SearchResultSerializer(many=True)
    working_memory = serializers.CharField(help_text="the working-memory status (also in status)")


class CandidateListSerializer(serializers.Serializer):
    results = CandidateSerializer(many=True)
