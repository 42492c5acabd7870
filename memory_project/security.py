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
