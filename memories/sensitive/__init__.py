"""The one sensitive-data detector: what the review gate holds for a person (saves, changes, facts,
approvals) and what an episode withholds from its kept turns.

Detection runs on a normalised view of the text (`normalise`, memories/sensitive/digits.py): format characters
(zero-width spaces and joiners, bidi marks, soft hyphens) dropped, every Unicode digit (Arabic-Indic,
Devanagari, fullwidth ...) and Chinese numeral (小写 and 大写; 十 by position) read as an ASCII digit, runs of
four or more spelled-out digits read as digits, the rest NFKC (`＠` as `@`). Every character of the view
remembers the original character it came from, so a finding maps back to its span of the original text and
redaction replaces exactly that span (the rest of a Chinese sentence keeps its full-width punctuation).

Kinds (settings.SENSITIVE_DETECTORS picks which run; ORDER says which claims a span first):
- secret: API keys and tokens by their published shapes (sk-, AKIA, ghp_, xox?-, JWTs, AIza, sk_live_,
  glpat-, npm_, hf_, private-key blocks), a value after "api key is" / "token:", "my password is ...", PINs;
- email: `name@domain.tld` in any width, `[at]` / `(at)`, and spelled out ("alice at example dot com");
- phone: international numbers, Chinese mobiles, UK national numbers, numbers grouped the way phones are
  written (not dates, times, amounts, IP addresses, versions), and any grouping after a word that says it
  is a phone number ("my mobile is", "call me on", "手机");
- card (issuer range and Luhn), national_id (US SSN, Chinese resident id), iban (any case, mod 97);
- birth_date: a full date with its year next to born / birthday / DOB / 出生 / 生日;
- address: a house number and a street (or 路…号, 栋/单元/室) with a word that says someone lives or
  receives post there, "my address is ...", a UK postcode in such a sentence;
- health, sex_life, religion, politics: GDPR's special categories, in English and Chinese, said of a person
  (allergies, intolerances and diets are deliberately not held: docs/governance.md).

`findings_across_turns` reads one speaker's consecutive turns two at a time (a number split over two turns).
tests/samples/sensitive.json and tests/samples/sensitive_*.jsonl are the labelled sets; tests/test_sensitive.py
reports recall and false positives by kind (the second set on its dev and held-out parts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from memories.sensitive.common import Match
from memories.sensitive.digits import (
    card_issuer_plausible,
    chinese_id_valid,
    iban_valid,
    luhn_valid,
    normalise,
    ssn_valid,
)
from memories.sensitive.identifiers import find_cards, find_emails, find_ibans, find_national_ids, find_phones
from memories.sensitive.places import find_addresses, find_birth_dates
from memories.sensitive.secrets import find_secrets
from memories.sensitive.special import (
    ETHNICITY,
    NOT_A_UNION,
    POLITICS_EN,
    POLITICS_MORE,
    POLITICS_ZH,
    RELIGION_EN,
    RELIGION_MORE,
    RELIGION_ZH,
    SEX_EN,
    SEX_MORE,
    SEX_ZH,
    UNION,
    find_health,
    topic_finder,
)

FINDERS: dict[str, Callable[[str], Iterator[Match]]] = {
    "secret": find_secrets, "email": find_emails, "card": find_cards, "national_id": find_national_ids,
    "iban": find_ibans, "phone": find_phones, "birth_date": find_birth_dates, "address": find_addresses,
    "health": find_health,
    "sex_life": topic_finder(SEX_EN, SEX_ZH, SEX_MORE),
    "religion": topic_finder(RELIGION_EN, RELIGION_ZH, RELIGION_MORE),
    "politics": topic_finder(POLITICS_EN, POLITICS_ZH, POLITICS_MORE), "ethnicity": topic_finder(ETHNICITY),
    "union": topic_finder(UNION, unless=NOT_A_UNION)}
# Withheld as (a card's digits are no phone number: the more specific kinds claim their spans first).
MARKERS = {"secret": "[secret withheld]", "national_id": "[id withheld]", "card": "[card withheld]",
           "iban": "[iban withheld]", "email": "[email withheld]", "phone": "[phone withheld]",
           "birth_date": "[date of birth withheld]", "address": "[address withheld]", "health": "[health withheld]",
           "sex_life": "[intimate life withheld]", "religion": "[religion withheld]", "politics": "[politics withheld]",
           "ethnicity": "[ethnicity withheld]", "union": "[union membership withheld]"}
ORDER = ("secret", "national_id", "iban", "card", "email", "birth_date", "phone", "address", "health", "sex_life",
         "religion", "politics", "ethnicity", "union")
# What identifies a person or opens an account: refused in ids (a special category is not in an id's words).
IDENTIFYING = ("secret", "national_id", "iban", "card", "email", "phone")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int  # in the original text
    end: int


def find_sensitive(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> list[Finding]:
    """Every non-overlapping finding of the given kinds, in the original text's coordinates."""
    view = normalise(text)
    taken: list[tuple[int, int]] = []
    found: list[Finding] = []
    for kind in ORDER:
        if kind not in kinds:
            continue
        for start, end in FINDERS[kind](view.text):
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            original = view.span(start, end)
            found.append(Finding(kind, *original))
    return sorted(found, key=lambda f: f.start)


def sensitive_kinds_in(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> list[str]:
    """Which kinds the text carries, in `kinds` order."""
    present = {f.kind for f in find_sensitive(text, kinds)}
    return [kind for kind in kinds if kind in present]


def redact(text: str, kinds: tuple[str, ...] | list[str] = ORDER) -> str:
    """The text with every finding replaced by its marker."""
    out, position = [], 0
    for finding in find_sensitive(text, kinds):
        out.append(text[position:finding.start])
        out.append(MARKERS[finding.kind])
        position = finding.end
    out.append(text[position:])
    return "".join(out)


def findings_across_turns(texts: Sequence[str],
                          kinds: tuple[str, ...] | list[str] = ORDER) -> dict[int, list[Finding]]:
    """What only shows when a turn is read with the next one ("my card is 4111 1111" / "1111 1111"): for
    each turn, the parts of such findings that lie in it, in its own coordinates. `texts`: one speaker's
    consecutive turns, in order."""
    parts: dict[int, list[Finding]] = {}
    for index in range(len(texts) - 1):
        first, second = texts[index], texts[index + 1]
        boundary = len(first) + 1
        for finding in find_sensitive(f"{first} {second}", kinds):
            if finding.start < len(first) and finding.end > boundary:
                parts.setdefault(index, []).append(Finding(finding.kind, finding.start, len(first)))
                parts.setdefault(index + 1, []).append(Finding(finding.kind, 0, finding.end - boundary))
    return parts


def redact_turns(texts: Sequence[str], kinds: tuple[str, ...] | list[str] = ORDER) -> list[str]:
    """Each turn redacted of what it carries alone and of its part of what it carries with a neighbour."""
    across = findings_across_turns(texts, kinds)
    redacted = []
    for index, text in enumerate(texts):
        shared = across.get(index, [])  # the finding read with the neighbour names the kind (a card, not a phone)
        spans = sorted([*shared, *find_sensitive(text, kinds)], key=lambda f: (f.start, -f.end, f not in shared))
        out, position = [], 0
        for finding in spans:
            if finding.end <= position:
                continue
            out.append(text[position:max(position, finding.start)])
            out.append(MARKERS[finding.kind])
            position = finding.end
        out.append(text[position:])
        redacted.append("".join(out))
    return redacted


__all__ = ["FINDERS", "IDENTIFYING", "MARKERS", "ORDER", "Finding", "card_issuer_plausible", "chinese_id_valid",
           "find_sensitive", "findings_across_turns", "iban_valid", "luhn_valid", "normalise", "redact",
           "redact_turns", "sensitive_kinds_in", "ssn_valid"]
