import django_filters

from memories.models import MemoryItem, MemoryStatus, MemoryType


class MemoryFilter(django_filters.FilterSet):
    user_id = django_filters.CharFilter()
    memory_type = django_filters.ChoiceFilter(choices=MemoryType.choices)
    status = django_filters.ChoiceFilter(choices=MemoryStatus.choices)
    tag = django_filters.CharFilter(field_name="tags", lookup_expr="contains", method="filter_tag")
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")
    current = django_filters.BooleanFilter(field_name="expired_at", lookup_expr="isnull")

    class Meta:
        model = MemoryItem
        fields = ["user_id", "memory_type", "status", "tag", "created_after", "created_before", "current"]

    def filter_tag(self, queryset, name, value):
        return queryset.filter(tags__contains=[value])
