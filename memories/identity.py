"""Identifiers (user, agent, session, group ids): one spelling per identity.

"josé" typed on a Mac (NFD), pasted with a zero-width space, or in fullwidth
letters must be one user, or erasing "josé" leaves copies behind. Ids are
NFKC-normalised on the way in (a superset of NFC that also folds fullwidth
and compatibility forms), and ids with characters a person cannot see or
type on purpose (control, format: zero-width, bidi marks, BOM; line
separators; surrogates; Unicode's default-ignorable code points and the
characters drawn as nothing: Hangul fillers, the blank Braille pattern) are
refused.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

from django.conf import settings

from memories.errors import InvalidOperation

ID_FIELDS = ("user_id", "agent_id", "session_id", "group_id")
# Unicode categories refused in an id: control, format (ZWSP, ZWJ, bidi marks, BOM), surrogate,
# private use, unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt) that the categories above
# miss, and characters drawn as nothing (fillers, the blank Braille pattern): "alice" with U+034F or
# U+3164 inside looks like "alice" and would be a second user that erasing "alice" leaves behind.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def _invisible(character: str) -> bool:
    code = ord(character)
    return (unicodedata.category(character) in _REFUSED_CATEGORIES
            or any(low <= code <= high for low, high in _INVISIBLE_RANGES))


def invisible_characters(value: str) -> list[str]:
    """The refused characters in `value`, as U+XXXX names."""
    return [f"U+{ord(c):04X}" for c in value if _invisible(c)]


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


def identifier_digest(value: str) -> str:
    """A stand-in for an id where it must not appear (request logs): the same id gives the same
    12 characters, so lines can still be followed, but without SECRET_KEY it can't be read back or
    guessed by hashing candidate names."""
    return hmac.new(settings.SECRET_KEY.encode(), value.encode("utf-8"), hashlib.sha256).hexdigest()[:12]
