from datetime import UTC

import django_filters
from django import forms
from django.utils import timezone
from django_filters.fields import IsoDateTimeField
from rest_framework.exceptions import ValidationError

from memories import vocabulary
from memories.errors import InvalidOperation
from memories.identity import normalize_identifier
from memories.models import MemoryItem, MemoryStatus, MemoryType
from memories.search import scope_filter


def _identifier(value: str, field: str) -> str:
    try:
        return normalize_identifier(value, field=field)
    except InvalidOperation as exc:
        raise ValidationError({field: [str(exc)]}) from None


class UtcIsoDateTimeField(IsoDateTimeField):
    """ISO 8601, converted to UTC: PostgreSQL refuses offsets beyond +-15:59
    that Python happily parses (found by fuzzing: '-20:54')."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return None
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError("Timestamp out of range.") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class MemoryFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter(method="filter_user_id")
    memory_type = django_filters.ChoiceFilter(choices=MemoryType.choices)
    status = django_filters.ChoiceFilter(choices=MemoryStatus.choices)
    tag = django_filters.CharFilter(field_name="tags", method="filter_tag")
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")
    current = django_filters.BooleanFilter(field_name="expired_at", lookup_expr="isnull")
    # Scopes, with search's rules (memories.search.scope_filter); applied together in filter_queryset.
    agent_id = django_filters.CharFilter(method="filter_scope")
    session_id = django_filters.CharFilter(method="filter_scope")
    group_id = django_filters.CharFilter(method="filter_scope")

    class Meta:
        model = MemoryItem
        fields = ["user_id", "memory_type", "status", "tag", "created_after", "created_before", "current",
                  "agent_id", "session_id", "group_id"]

    def filter_user_id(self, queryset, name, value):
        return queryset.filter(user_id=_identifier(value, "user_id"))

    def filter_scope(self, queryset, name, value):
        return queryset  # see filter_queryset: the group rule depends on whether a user is given

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        data = self.form.cleaned_data
        if self._lists_current_only(data):  # archived, rejected, superseded, invalidated: asked for by name
            queryset = queryset.filter(vocabulary.is_current())
        if data.get("status") in ("", None, MemoryStatus.ACTIVE):  # an expired memory is never listed as active:
            queryset = queryset.exclude(vocabulary.is_expired(timezone.now()))  # it is archived within EXPIRY_INTERVAL
        scopes = {name: _identifier(data[name], name) for name in ("agent_id", "session_id", "group_id")
                  if data.get(name)}
        if not scopes:
            return queryset
        user = _identifier(data["user_id"], "user_id") if data.get("user_id") else None
        return queryset.filter(scope_filter(user_id=user, **scopes))

    def _lists_current_only(self, data) -> bool:
        """The list answers with current memories unless the client asks for others: `status=`,
        `current=false`, or `include=all`."""
        include = {part.strip() for value in (self.request.query_params.getlist("include") if self.request else [])
                   for part in value.split(",")}
        return not data.get("status") and data.get("current") is None and "all" not in include

    def filter_tag(self, queryset, name, value):
        return queryset.filter(tags__contains=[value])
