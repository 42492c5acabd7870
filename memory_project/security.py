"""Response headers every page carries (the admin, the API, the docs)."""

from __future__ import annotations

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    """A Content-Security-Policy on every response. Scripts only from this
    origin (the docs use drf-spectacular's split view, so no inline script);
    inline style attributes stay allowed because the admin uses them."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        return response


class RefuseNulCharactersMiddleware:
    """PostgreSQL cannot store or compare a NUL character: a query string or
    path holding one is a client error (400 naming the parameter), answered
    before any view or admin filter passes it to the database."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.http import HttpResponseBadRequest, JsonResponse

        bad = "path" if "\x00" in request.path else next(
            (name for name, values in request.GET.lists() if "\x00" in name or any("\x00" in v for v in values)),
            None)
        if bad is None:
            return self.get_response(request)
        message = f"{bad} contains a NUL character"
        if request.path.startswith("/api/"):
            return JsonResponse({bad: [message]}, status=400)
        return HttpResponseBadRequest(message, content_type="text/plain")


# The REST API and Mem0's routes (mounted at /v1/, /v2/, /v3/): every door answers within the same bound.
BOUNDED_ANSWER_PREFIXES = ("/api/", "/v1/", "/v2/", "/v3/")


class BoundedApiAnswerMiddleware:
    """No API answer is larger than API_MAX_RESPONSE_BYTES: a bigger one is
    replaced by a 413 that says how to ask for less (fewer items, no `data`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings
        from django.http import JsonResponse

        response = self.get_response(request)
        limit = settings.API_MAX_RESPONSE_BYTES
        if (limit and request.path.startswith(BOUNDED_ANSWER_PREFIXES) and not getattr(response, "streaming", False)
                and len(response.content) > limit):
            return JsonResponse({"detail": f"the answer would be {len(response.content)} bytes, over the "
                                           f"{limit}-byte limit (API_MAX_RESPONSE_BYTES): ask for fewer items "
                                           "(page_size, limit) or leave out data (no include=data)"}, status=413)
        return response
