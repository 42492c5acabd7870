"""Home addresses and dates of birth."""

from __future__ import annotations

import re
from collections.abc import Iterator

from memories.sensitive.common import Match, sentence_of

_STREET_TYPES = (r"(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Way|Place|Pl|Terrace|"
                 r"Close|Crescent|Cres|Gardens|Gdns|Square|Sq|Parkway|Pkwy|Highway|Hwy|Row|Mews|Grove|Circle|Cir|"
                 r"Parade|Pde|Esplanade|Walk|Wharf|Quay|Hill|Rise|View|Vale|Green|Gate|Trail|Loop|Alley|Path|Pike|"
                 r"Ridge|Heights|Crossing|Square|Chase|Wynd|Brae|Glen|Park)")
# A PO box, a flat or apartment number with a house: a postal address however it is said.
_PO_BOX = re.compile(r"\b(?:P\.?\s?O\.?\s?Box|Post Office Box|Postfach|Apartado|Casilla|信箱)\s*\d{1,6}\b",
                     re.IGNORECASE)
_UNITS = r"(?:one|two|three|four|five|six|seven|eight|nine)"
_HOUSE_NUMBER = (rf"(?:\d{{1,5}}[A-Za-z]?|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[\-\s]{_UNITS})?"
                 rf"|{_UNITS}|ten|eleven|twelve|(?:thir|four|fif|six|seven|eigh|nine)teen)")  # "forty-two"
_STREET = re.compile(rf"(?<![A-Za-z0-9\-]){_HOUSE_NUMBER},?\s+(?:[A-Za-z][A-Za-z'’.\-]*\s+){{1,4}}"
                     rf"{_STREET_TYPES}\b\.?",
                     re.IGNORECASE)
# A street named with its kind in the word, the number after it ("Kastanienallee 23", "Prinsengracht 263").
_STREET_SUFFIXED = re.compile(r"\b[A-ZÄÖÜ][a-zäöüß]+(?:allee|straße|strasse|str\.|weg|gasse|platz|ring|damm|ufer|"
                              r"laan|straat|gracht|vej|gatan|gata|katu)\s+\d{1,5}[a-z]?\b")
_STREET_FIRST = re.compile(r"\b(?:Rua|Avenida|Calle|Rue|Via|Viale|Straße|Strasse|Carrer|Praça|Plaza)\s+"
                           r"(?:[A-Za-zÀ-ÿ'’.\-]+\s+){0,4}?[A-Za-zÀ-ÿ'’.\-]+,?\s*(?:n\.?º\s*)?\d{1,5}[A-Za-z]?\b")
_NOT_A_STREET_NAME = frozenset("the a an down up along across miles mile km minutes minute blocks block of to from on "
                               "in at my our this that is was".split())
_POSTCODE_UK = re.compile(r"\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b")
_ADDRESS_SAID = re.compile(r"\b(?:my|our|home|his|her|their|new|the new)\s+(?:home\s+|postal\s+|mailing\s+)?"
                           r"address\s*"
                           r"(?:is|:)\s*([^.;!?\n]{6,80}?\d[^.;!?\n]{0,60})(?=[.;!?\n]|$)", re.IGNORECASE)
_HOME_CUE = re.compile(r"\b(?:live|lives|living|lived|moved|moving|move|home|house|flat|apartment|apt|address|reside|"
                       r"(?:my|our|new|his|her) place|"
                       r"deliver|delivery|send|ship|mail|post|stay(?:ing)? at)\b|住|地址|家|寄到|送到|搬到|收货",
                       re.IGNORECASE)
_ZH_ADDRESS = re.compile(r"(?:[\u4e00-\u9fff][\u4e00-\u9fff0-9]{0,10}(?:路|街|大道|大街|道|巷|胡同|弄|里)"
                         r"(?:\s*\d{1,3}\s*段)?\s*\d{1,5}\s*(?:号|號|弄)(?:\s*\d{1,3}\s*[楼樓])?"
                         r"(?:\s*\d{1,4}\s*(?:号楼|栋|幢|座))?(?:\s*\d{1,3}\s*(?:单元|單元))?(?:\s*\d{1,5}\s*(?:室|号|房))?"
                         r"|[\u4e00-\u9fff]{2,10}(?:小区|花园|公寓|苑|新村|家园)\s*\d{1,4}\s*(?:号楼|栋|幢|座)"
                         r"(?:\s*\d{1,3}\s*(?:单元|單元))?(?:\s*\d{1,5}\s*(?:室|号|房))?"
                         r"|\d{1,4}\s*(?:号楼|栋|幢)\s*\d{1,3}\s*(?:单元|單元)\s*\d{1,5}\s*(?:室|号)?)")


def find_addresses(view: str) -> Iterator[Match]:
    for m in _ADDRESS_SAID.finditer(view):
        yield m.span(1)
    for m in _PO_BOX.finditer(view):
        yield m.span()
    for pattern in (_STREET, _STREET_SUFFIXED, _STREET_FIRST, _ZH_ADDRESS, _POSTCODE_UK):
        for m in pattern.finditer(view):
            words = m.group(0).split()[1:-1]
            if pattern is _STREET and any(w.lower().strip(",") in _NOT_A_STREET_NAME for w in words):
                continue
            sentence = sentence_of(view, *m.span())
            if pattern is _ZH_ADDRESS and not _ZH_SOMEONES.search(sentence) and _ASKS.search(sentence):
                continue  # "故宫的地址是景山前街4号吗？": asking a landmark's address, nobody's home
            if _HOME_CUE.search(sentence):
                yield m.span()


_ZH_SOMEONES = re.compile(r"我|他|她|用户|咱|俺|住|寄|收货|收件|家")
_ASKS = re.compile(r"[吗呢？?]")


# --------------------------------------------------------------------------- dates of birth

_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
           r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_FULL_DATE = (rf"(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTHS},?\s+(?:\d{{4}}|['’]\d{{2}}(?!\d))"
              rf"|{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
              r"|\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.](?:\d{4}|\d{2})"
              r"|\d{4}\s*年\s*\d{1,2}\s*月\s*\d{1,2}\s*[日号號]?)")
_BIRTH = re.compile(rf"(?:born|birthday(?:['’]s)?|birth\s*date|date\s+of\s+birth|d\.?o\.?b\.?|出生|生日|生于|出生日期)"
                    rf"[^.!?。！？\d]{{0,24}}?({_FULL_DATE})(?![\d])", re.IGNORECASE)


_BIRTH_AFTER = re.compile(rf"(?<!\d)({_FULL_DATE})\s*(?:出生|生的|生人|"
                          r"(?:is|was) (?:my|his|her) (?:birthday|date of birth)|"
                          r"is when I was born)", re.IGNORECASE)


_YEAR = re.compile(r"(?<!\d)(1\d{3}|2\d{3})(?!\d)")


def find_birth_dates(view: str) -> Iterator[Match]:
    """A full date of birth. One before 1900 is a historical figure's ("Mozart was born on 27 January 1756")."""
    for pattern in (_BIRTH, _BIRTH_AFTER):
        for m in pattern.finditer(view):
            year = _YEAR.search(m.group(1))
            if year is None or int(year.group(1)) >= 1900:
                yield m.span(1)
