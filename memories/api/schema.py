"""The OpenAPI schema's shared parts: every operation gets a summary (its view
method's docstring, first line) and the error answers it can give."""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema

ERROR_BODY = {
    "type": "object",
    "description": "`detail` for the whole request, or each bad field named with its problems",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}

ERROR_DESCRIPTIONS = {
    "400": "bad input: the body names each field and what is wrong with it",
    "401": "no key, or an invalid, revoked or expired one",
    "403": "the key's role may not do this, or a quota is full (nothing was written)",
    "404": "no such object in this tenant",
    "409": "version conflict: the body carries current_version",
    "413": "the body or a field is too large",
    "429": "too many requests or too much waiting work: retry after Retry-After seconds",
    "503": "the database, Redis or the embedder is unavailable: nothing was written; retry later",
}

PUBLIC_PATHS = ("/api/v1/health", "/api/v1/ready", "/api/v1/schema/", "/api/v1/docs/")


def error_answers(*, path: str, method: str, has_body: bool) -> list[str]:
    """The error codes an operation can answer (a pure rule: tests/test_list_health_schema.py tables it)."""
    if path in PUBLIC_PATHS:
        return ["503"]
    codes = ["400", "401", "403", "429", "503"]  # 400: a bad body, query string, path id or header
    if has_body:
        codes.append("413")
    if "{" in path:
        codes.append("404")
    if method in ("PATCH", "PUT", "DELETE") or path.endswith(("/merge", "/approve", "/reject")):
        codes.append("409")
    return sorted(codes)


class ServiceAutoSchema(AutoSchema):
    def get_summary(self):
        explicit = super().get_summary()
        if explicit:
            return explicit
        method = getattr(self.view, self.method.lower(), None)
        doc = (getattr(method, "__doc__", None) or "").strip()
        return doc.splitlines()[0].rstrip(".") if doc else None

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        codes = error_answers(path=path, method=method, has_body="requestBody" in operation)
        responses = operation.setdefault("responses", {})
        for code in codes:
            responses.setdefault(code, {"description": ERROR_DESCRIPTIONS[code],
                                        "content": {"application/json": {"schema": ERROR_BODY}}})
        return operation
