from django.urls import path

from memories.api import people, sessions, views

urlpatterns = [
    path("memories", views.MemoryListCreateView.as_view(), name="memory-list"),
    path("memories/batch", views.MemoryBatchView.as_view(), name="memory-batch"),
    path("memories/search", views.MemorySearchView.as_view(), name="memory-search"),
    path("memories/merge", views.MemoryMergeView.as_view(), name="memory-merge"),
    path("memories/<uuid:memory_id>", views.MemoryDetailView.as_view(), name="memory-detail"),
    path("memories/<uuid:memory_id>/history", views.MemoryHistoryView.as_view(), name="memory-history"),
    path("users/<str:user_id>/memories", views.UserMemoriesView.as_view(), name="user-memories"),
    path("users/<str:user_id>/people", people.PeopleView.as_view(), name="user-people"),
    path("users/<str:user_id>/people/<uuid:person_id>", people.PersonDetailView.as_view(), name="user-person"),
    path("users/<str:user_id>/sessions", sessions.UserSessionsView.as_view(), name="user-sessions"),
    path("users/<str:user_id>/sessions/<str:session_id>/turns", sessions.SessionTurnsView.as_view(),
         name="user-session-turns"),
    path("conversations", views.ConversationView.as_view(), name="conversations"),
    path("jobs/<uuid:job_id>", views.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<uuid:job_id>/retry", views.JobRetryView.as_view(), name="job-retry"),
    path("review", views.ReviewListView.as_view(), name="review-list"),
    path("review/<uuid:candidate_id>/approve", views.ReviewApproveView.as_view(), name="review-approve"),
    path("review/<uuid:candidate_id>/reject", views.ReviewRejectView.as_view(), name="review-reject"),
    path("context", views.ContextView.as_view(), name="context"),
    path("health", views.HealthView.as_view(), name="health"),
]
