from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/schema/", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]),
         name="schema"),
    path("api/v1/docs/", SpectacularSwaggerView.as_view(url_name="schema", authentication_classes=[],
                                                        permission_classes=[]), name="docs"),
    path("api/v1/", include("memory_project.api_urls")),
]

handler404 = "memory_project.views.not_found"
handler500 = "memory_project.views.server_error"
