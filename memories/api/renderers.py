"""The API's JSON renderer: DRF's, with its time counted as the request's `render` phase."""

from __future__ import annotations

from rest_framework.renderers import JSONRenderer

from memories.timing import phase


class _EscapedJSONRenderer(JSONRenderer):
    ensure_ascii = True


class TimedJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        with phase("render"):
            try:
                return super().render(data, accepted_media_type, renderer_context)
            except UnicodeEncodeError:  # a lone surrogate the caller sent, quoted back: escaped, not a 500
                return _EscapedJSONRenderer().render(data, accepted_media_type, renderer_context)
