"""The /api/v1/ routes of the three apps, composed here so no app imports another's interface."""

from memories.api.urls import urlpatterns as memory_routes
from reflection.urls import urlpatterns as reflection_routes
from traits.urls import urlpatterns as trait_routes

urlpatterns = [*memory_routes, *trait_routes, *reflection_routes]
