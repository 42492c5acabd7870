"""Mem0 platform routes (memories/api/mem0.py), mounted at the service's root so that
`MemoryClient(api_key=KEY, host=BASE_URL)` works unchanged."""

from django.urls import path, re_path

from memories.api import mem0


def unsupported(feature: str):
    return mem0.UnsupportedView.as_view(feature=feature)


urlpatterns = [
    path("v1/ping/", mem0.PingView.as_view(), name="mem0-ping"),
    path("v3/memories/add/", mem0.AddView.as_view(), name="mem0-add"),
    path("v3/memories/search/", mem0.SearchView.as_view(), name="mem0-search"),
    path("v3/memories/", mem0.ListView.as_view(), name="mem0-list"),
    path("v1/memories/", mem0.CollectionView.as_view(), name="mem0-delete-all"),
    path("v1/memories/<str:memory_id>/", mem0.DetailView.as_view(), name="mem0-detail"),
    path("v1/memories/<str:memory_id>/history/", mem0.HistoryView.as_view(), name="mem0-history"),
    path("v1/batch/", mem0.BatchView.as_view(), name="mem0-batch"),
    path("v1/entities/", mem0.EntitiesView.as_view(), name="mem0-entities"),
    path("v2/entities/user/<str:name>/profile/", unsupported("user profiles"), name="mem0-profile"),
    path("v2/entities/<str:entity_type>/<str:name>/", mem0.EntityView.as_view(), name="mem0-entity"),
    path("v1/entities/<str:entity_type>/<str:name>/", mem0.LegacyEntityView.as_view(), name="mem0-entity-v1"),
    path("v1/exports/", unsupported("memory exports (use manage.py export_memories)")),
    path("v1/exports/get/", unsupported("memory exports (use manage.py export_memories)")),
    path("v1/summary/", unsupported("summaries (use POST /api/v1/context)")),
    path("v1/feedback/", unsupported("feedback")),
    re_path(r"^v2/profiles/", unsupported("user profiles")),
    re_path(r"^api/v1/webhooks/", unsupported("webhooks")),
    re_path(r"^api/v1/orgs/", unsupported("organisations and projects (one API key is one tenant)")),
    re_path(r"^v[0-9]+/", unsupported("this Mem0 endpoint")),
]
