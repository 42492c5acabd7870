from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memory_project import observability

READ_ONLY = ["get", "head"]

urlpatterns = [
    path("admin/", admin.site.urls),
    # Read-only pages: GET and HEAD only (DRF's OPTIONS metadata has no template to render on the docs page: a 500).
    path("api/v1/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[],
                                                      http_method_names=READ_ONLY), name="schema"),
    # The split view serves Swagger UI's start-up script as a file: no inline script, so the CSP holds.
    path("api/v1/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", authentication_classes=[],
                                                             permission_classes=[], http_method_names=READ_ONLY),
         name="docs"),
    path("api/v1/ready", observability.ready_view, name="ready"),
    path("metrics", observability.metrics_view, name="metrics"),
    path("api/v1/", include("memory_project.api_urls")),
    # Mem0's platform routes (/v1/ping/, /v3/memories/, ...): memories/api/mem0.py.
    path("", include("memories.api.mem0_urls")),
]

handler404 = "memory_project.views.not_found"
handler500 = "memory_project.views.server_error"
