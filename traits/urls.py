from django.urls import path

from traits import api

urlpatterns = [
    path("users/<str:user_id>/traits", api.UserTraitsView.as_view(), name="user-traits"),
    path("traits/<uuid:trait_id>", api.TraitDetailView.as_view(), name="trait-detail"),
]
