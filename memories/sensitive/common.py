"""What the detector's finders share: a span of the normalised view, a word character of a number, the
sentence around a finding."""

from __future__ import annotations

import re

Match = tuple[int, int]  # a span of the view
W = r"[A-Za-z0-9_]"  # a word character of a number or an address (\\w would include every Chinese character)


def digits_of(text: str) -> str:
    return "".join(c for c in text if c.isdigit())


_SENTENCE_END = re.compile(r"[.!?。！？\n;；]")
_SENTENCE_REACH = 300  # characters either side: a long text costs linear time, not a scan per finding


def sentence_of(view: str, start: int, end: int) -> str:
    """The sentence around [start, end) of the view (at most _SENTENCE_REACH characters either side)."""
    low = max(0, start - _SENTENCE_REACH)
    before = [m.end() for m in _SENTENCE_END.finditer(view, low, start)]
    after = _SENTENCE_END.search(view, end, end + _SENTENCE_REACH)
    return view[before[-1] if before else low:after.start() if after else min(len(view), end + _SENTENCE_REACH)]
