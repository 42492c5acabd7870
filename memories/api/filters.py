from datetime import UTC

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField
from rest_framework.exceptions import ValidationError

from memories.errors import InvalidOperation
from memories.identity import normalize_identifier
from memories.models import MemoryItem, MemoryStatus, MemoryType


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

    class Meta:
        model = MemoryItem
        fields = ["user_id", "memory_type", "status", "tag", "created_after", "created_before", "current"]

    def filter_user_id(self, queryset, name, value):
        try:
            return queryset.filter(user_id=normalize_identifier(value, field="user_id"))
        except InvalidOperation as exc:
            raise ValidationError({"user_id": [str(exc)]}) from None

    def filter_tag(self, queryset, name, value):
        return queryset.filter(tags__contains=[value])
