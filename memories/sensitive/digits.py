"""Digits however they are written, and the check digits of the numbers that carry them: the sensitive-data
detector (memories/sensitive/) reads a normalised view of the text (`normalise`: every Unicode digit, Chinese
numeral and run of spelled-out digits as an ASCII digit, format characters dropped, the rest NFKC), in which each
character remembers where it came from, and checks a candidate number by its published rule (Luhn and the
issuer ranges for cards, the SSA's for SSNs, GB 11643 for Chinese ids, mod 97 for IBANs)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Chinese numerals as numbers are read aloud (幺 is 1 on the phone; 〇/零 are 0), in 小写 and in 大写
# (the forms cheques and contracts use, traditional ones too).
_CHINESE_DIGITS = {"〇": "0", "零": "0", "幺": "1", "一": "1", "二": "2", "三": "3", "四": "4", "五": "5",
                   "六": "6", "七": "7", "八": "8", "九": "9", "壹": "1", "贰": "2", "貳": "2", "叁": "3",
                   "參": "3", "肆": "4", "伍": "5", "陆": "6", "陸": "6", "柒": "7", "捌": "8", "玖": "9"}
_CHINESE_TEN = ("十", "拾")
# Digits spelled out in English, read as digits when at least four come in a row ("five five five, one two
# three four"; "double five" is 55): one or two such words are ordinary prose.
_DIGIT_WORDS = {"zero": "0", "oh": "0", "o": "0", "nought": "0", "one": "1", "two": "2", "three": "3",
                "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9"}
_DIGIT_WORD = r"(?:zero|oh|o|nought|one|two|three|four|five|six|seven|eight|nine)"
_SPELLED_RUN = re.compile(rf"\b(?:(?:double|triple)[\s\-]+)?{_DIGIT_WORD}(?:[\s,\-]+(?:(?:double|triple)[\s\-]+)?"
                          rf"{_DIGIT_WORD}){{3,}}\b", re.IGNORECASE)
_REPEATS = {"double": 2, "triple": 3}
_SPELLED_WORD = re.compile(rf"(?:(double|triple)[\s\-]+)?({_DIGIT_WORD})\b", re.IGNORECASE)
# Dashes of every width read as a hyphen ("5387—9041", "508–33–1247"); NFKC keeps them apart.
_DASHES = dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58", "-")
# A value typed one character at a time ("h u n t e r 2 0 2 4", "W L 5 0 1 3 8 2 A", "m a r c o . b @ g m a i l"):
# at least four single characters each followed by one space read as one word.
_SPACED_OUT = re.compile(r"(?<!\S)(?:[^\s] ){3,}[^\s](?![^\s,.;:!?，。、)）])")
# Cyrillic and Greek letters drawn like Latin ones ("раul.mendes@sарo.рt"): read as Latin inside a word that
# has Latin letters or an @ (a Russian or Greek word is left as it is).
_LOOKALIKES = dict(zip("асеорхуіјѕԁԛԝАВСЕНІЈКМОРЅТХУοαρτνκιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
                       "aceopxyijsdqwABCEHIJKMOPSTXYoaptvkiABEZHIKMNOPTYX", strict=True))
_WORD = re.compile(r"\S+")
_LATIN = re.compile(r"[A-Za-z@]")


@dataclass(frozen=True)
class Normalised:
    """The detection view of a text and, for each of its characters, the original index it came from."""

    text: str
    origin: list[int]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original text's span of the view's [start, end)."""
        return self.origin[start], (self.origin[end - 1] + 1) if end > start else self.origin[start]


def _digit_of(char: str) -> str | None:
    """Any Unicode decimal digit (Arabic-Indic ٣, Devanagari ३, fullwidth ３ ...) or Chinese numeral."""
    if char in _CHINESE_DIGITS:
        return _CHINESE_DIGITS[char]
    if char.isascii():
        return None
    value = unicodedata.digit(char, None)
    return str(value) if value is not None else None


def _spelled_digits(text: str) -> dict[int, tuple[int, str]]:
    """Where runs of spelled-out digits start: index -> (end, the digits), separators dropped."""
    runs: dict[int, tuple[int, str]] = {}
    for run in _SPELLED_RUN.finditer(text):
        digits = "".join(_DIGIT_WORDS[m.group(2).lower()] * _REPEATS.get((m.group(1) or "").lower(), 1)
                         for m in _SPELLED_WORD.finditer(run.group(0)))
        runs[run.start()] = (run.end(), digits)
    return runs


def _spaced_out(text: str) -> set[int]:
    """The spaces inside values typed one character at a time (dropped from the view)."""
    return {run.start() + offset for run in _SPACED_OUT.finditer(text)
            for offset, char in enumerate(run.group(0)) if char == " "}


def _lookalikes(text: str) -> set[int]:
    """Where a Cyrillic or Greek look-alike stands inside a word with Latin letters or an @."""
    if not _LOOKALIKES.keys() & set(text):
        return set()
    return {word.start() + offset for word in _WORD.finditer(text) if _LATIN.search(word.group(0))
            for offset, char in enumerate(word.group(0)) if char in _LOOKALIKES}


def normalise(text: str) -> Normalised:
    """What the detector reads: format characters (zero-width spaces and joiners, bidi marks, soft hyphens)
    dropped, every Unicode digit and Chinese numeral as an ASCII digit (十 positional: 十二 12, 二十 20,
    二十三 23), runs of spelled-out digits as digits, dashes of every width as hyphens, a value typed one
    character at a time as one word, Cyrillic and Greek look-alikes inside a Latin word as Latin, the rest
    NFKC (fullwidth ＠ as @)."""
    view: list[str] = []
    origin: list[int] = []
    spelled, dropped, lookalike = _spelled_digits(text), _spaced_out(text), _lookalikes(text)
    index = 0
    while index < len(text):
        if index in spelled:
            end, digits = spelled[index]
            view.extend(digits)
            origin.extend([index] * len(digits))
            index = end
            continue
        char = text[index]
        if unicodedata.category(char) == "Cf" or index in dropped:
            index += 1
            continue
        char = _LOOKALIKES[char] if index in lookalike else _DASHES.get(char, char)
        digit = _digit_of(char)
        if digit is None and char in _CHINESE_TEN:
            before = index > 0 and _digit_of(text[index - 1]) is not None
            after = index + 1 < len(text) and _digit_of(text[index + 1]) is not None
            digit = "" if before and after else "0" if before else "1" if after else "10"
        mapped = digit if digit is not None else unicodedata.normalize("NFKC", char)
        for piece in mapped:
            view.append(piece)
            origin.append(index)
        index += 1
    return Normalised("".join(view), origin)


# --------------------------------------------------------------------------- checks


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        digit = int(char)
        if position % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def card_issuer_plausible(digits: str) -> bool:
    """The issuer ranges and lengths of the card networks (Visa, Mastercard, Amex, Discover, UnionPay,
    JCB, Diners): a tracking number that happens to pass the Luhn check usually starts elsewhere."""
    length, two, four = len(digits), int(digits[:2]), int(digits[:4])
    return ((digits[0] == "4" and length in (13, 16, 19)) or (two in (34, 37) and length == 15)
            or ((51 <= two <= 55 or 2221 <= four <= 2720) and length == 16)
            or ((digits.startswith(("6011", "65", "62", "35")) or 644 <= int(digits[:3]) <= 649) and 16 <= length <= 19)
            or (two in (30, 36, 38) and 14 <= length <= 19))


def ssn_valid(digits: str) -> bool:
    """Area 001-899 except 666, group 01-99, serial 0001-9999 (the SSA's rules)."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def chinese_id_valid(text: str) -> bool:
    """GB 11643's shape: a region code, a plausible birth date, a sequence and a check character."""
    body, check = text[:17], text[17].upper()
    if not body.isdigit():
        return False
    year, month, day = int(body[6:10]), int(body[10:12]), int(body[12:14])
    if not (1900 <= year <= 2100 and 1 <= month <= 12 and 1 <= day <= 31) or body[0] not in "12345678":
        return False
    # A wrong check character is still somebody's id, mistyped: only the shape (region, birth date) decides.
    return check.isdigit() or check == "X"


def chinese_id_checks(text: str) -> bool:
    """Whether a Chinese id's check character is the one GB 11643 (ISO 7064 MOD 11-2) computes."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return "10X98765432"[sum(int(d) * w for d, w in zip(text[:17], weights, strict=True)) % 11] == text[17].upper()


def iban_valid(text: str) -> bool:
    compact = re.sub(r"[\s.\-]", "", text).upper()
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1
