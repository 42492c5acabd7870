from django.urls import path

from reflection import api

urlpatterns = [
    path("users/<str:user_id>/reflect", api.ReflectView.as_view(), name="user-reflect"),
    path("sessions/<str:session_id>/end", api.SessionEndView.as_view(), name="session-end"),
    path("reflection-cycles/<int:cycle_id>", api.CycleDetailView.as_view(), name="reflection-cycle"),
]
