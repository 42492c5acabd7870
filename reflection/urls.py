from django.urls import path

from reflection import api

urlpatterns = [
    path("users/<str:user_id>/reflect", api.ReflectView.as_view(), name="user-reflect"),
]
