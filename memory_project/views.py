"""Error pages: JSON under /api/ (clients parse it), Django's pages elsewhere."""

from django.http import JsonResponse
from django.views import defaults


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "path": request.path}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal error; nothing was half-written. Retry or report it."}, status=500)
    return defaults.server_error(request)
