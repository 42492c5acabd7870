"""The JSON body parser with a bound on nesting, checked on the text before any parser reads it: a body
(or Mem0's `filters` query parameter, or an MCP request) nested 50,000 deep is a 400, not a
RecursionError."""

from __future__ import annotations

import codecs
import json
import re

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

_SPECIAL = re.compile(r"[\[\]{}()\"'\\]")
_OPEN, _CLOSE = frozenset("[{("), frozenset("]})")


def nesting_exceeds(text: str, limit: int) -> bool:
    """Pure: whether the brackets of a JSON (or Python literal) text nest deeper than `limit`, read
    without parsing it: strings (and their escapes) skipped, an unclosed run (`[[[[…`) as deep as it
    goes; it stops at the first bracket past the limit."""
    if sum(text.count(bracket) for bracket in _OPEN) <= limit:
        return False  # most texts: too few brackets to nest that deep, counted at C speed
    depth, quote, skip = 0, "", -1
    for found in _SPECIAL.finditer(text):
        position, char = found.start(), found.group()
        if position <= skip:
            continue
        if quote:
            if char == "\\":
                skip = position + 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif char in _CLOSE:
            depth = max(0, depth - 1)
    return False


def too_deep(text: str) -> str | None:
    """The problem with a text nested deeper than JSON_MAX_DEPTH, or None."""
    limit = settings.JSON_MAX_DEPTH
    return f"nested deeper than {limit} levels (JSON_MAX_DEPTH)" if nesting_exceeds(text, limit) else None


def lone_surrogate_at(value, path: str = "body") -> str | None:
    """Pure: where a parsed body holds a lone surrogate (`"\\ud800"` is valid JSON but no text: it
    cannot be stored, searched or sent back as UTF-8), as a field path (`data.note`, `tags.0`), or None."""
    stack = [(value, path)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str) and _SURROGATE.search(item):
            return at
        if isinstance(item, dict):
            for key, child in item.items():
                stack.append((child, f"{at}.{key}" if at != "body" else str(key)))
                if isinstance(key, str) and _SURROGATE.search(key):
                    return at
        elif isinstance(item, list):
            stack.extend((child, f"{at}.{index}") for index, child in enumerate(item))
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


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
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if problem := too_deep(text):
            raise ParseError(f"JSON {problem}")
        try:
            data = json.loads(text)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {settings.JSON_MAX_DEPTH} levels") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        if json_depth_exceeds(data, settings.JSON_MAX_DEPTH):
            raise ParseError(f"JSON nested deeper than {settings.JSON_MAX_DEPTH} levels")
        if (at := lone_surrogate_at(data)) is not None:
            field = at.encode("utf-8", "backslashreplace").decode()
            raise ValidationError({field: ["a lone surrogate (\\ud800-\\udfff) is not text"]})
        return data
