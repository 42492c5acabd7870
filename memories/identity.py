"""Identifiers (user, agent, session, group ids): one spelling per identity.

"josé" typed on a Mac (NFD), pasted with a zero-width space, or in fullwidth
letters must be one user, or erasing "josé" leaves copies behind. Ids are
NFKC-normalised on the way in (a superset of NFC that also folds fullwidth
and compatibility forms), and ids with characters a person cannot see or
type on purpose (control, format: zero-width, bidi marks, BOM; line
separators; surrogates) are refused.
"""

from __future__ import annotations

import unicodedata

from memories.errors import InvalidOperation

ID_FIELDS = ("user_id", "agent_id", "session_id", "group_id")
# Unicode categories refused in an id: control, format (ZWSP, ZWJ, bidi marks, BOM), surrogate,
# private use, unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def invisible_characters(value: str) -> list[str]:
    """The refused characters in `value`, as U+XXXX names."""
    return [f"U+{ord(c):04X}" for c in value if unicodedata.category(c) in _REFUSED_CATEGORIES]


def normalize_identifier(value: str, *, field: str = "user_id") -> str:
    """The one spelling of an id, or InvalidOperation naming the field."""
    refused = invisible_characters(value)
    if refused:
        raise InvalidOperation(f"{field} contains invisible or control characters ({', '.join(refused[:5])})",
                               field=field)
    return unicodedata.normalize("NFKC", value)


def strip_invisible(text: str) -> str:
    """Text without format characters (zero-width, bidi marks, BOM): what dedupe compares."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")
