from django.urls import path

from memories.api import views

urlpatterns = [
    path("memories", views.MemoryListCreateView.as_view(), name="memory-list"),
    path("memories/batch", views.MemoryBatchView.as_view(), name="memory-batch"),
    path("memories/search", views.MemorySearchView.as_view(), name="memory-search"),
    path("memories/<uuid:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path("memories/<uuid:memory_id>/history", views.MemoryHistoryView.as_view(), name="memory-history"),
    path("users/<str:user_id>/memories", views.UserMemoriesView.as_view(), name="user-memories"),
    path("health", views.HealthView.as_view(), name="health"),
]
