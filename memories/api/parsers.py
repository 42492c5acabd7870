"""The JSON body parser with a bound on nesting: a body nested 50,000 deep
is a 400, not a RecursionError."""

from __future__ import annotations

import codecs
import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def json_depth_exceeds(value, limit: int) -> bool:
    """Whether `value` nests deeper than `limit` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.load(codecs.getreader(encoding)(stream))
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {settings.JSON_MAX_DEPTH} levels") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if json_depth_exceeds(data, settings.JSON_MAX_DEPTH):
            raise ParseError(f"JSON nested deeper than {settings.JSON_MAX_DEPTH} levels")
        return data
