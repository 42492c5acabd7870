"""A tag the service writes and a fact's slot are spelled once, as vocabulary.Tag and vocabulary.Slot
(issue 58: "wish" and "habit" were literals in eight places beside vocabulary.WISH_TAG, and two sets
were both called PROFILE_SLOTS).

Read off the apps' source: a string literal that is a Tag's value where a tag is meant, or a Slot's
value where a slot is meant, fails here. Where a tag is meant: a list, set or tuple of literals that are
all tags' values ("wish", "habit"), a `tags=` argument, an assignment to a name saying TAG, a comparison
with something saying tag. Where a slot is meant: an assignment to a name saying SLOT (its values, and a
dict's values), a `slot=` argument, a comparison with something saying slot. The same word meaning
something else (the intent model's "habit" intent, a durable cue, the LLM's raw type) is not flagged.
Each rule is also tried on a sample that breaks it, so the test cannot pass by finding nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memories.vocabulary import KEY_FACT_SLOTS, Slot, Tag

ROOT = Path(__file__).resolve().parent.parent
APPS = ("memories", "traits", "reflection")
HOME = "memories/vocabulary.py"
TAGS = {tag.value for tag in Tag}
SLOTS = {slot.value for slot in Slot}


def _says(node: ast.AST | None, word: str) -> bool:
    return node is not None and word in ast.unparse(node).lower()


def _strings(node: ast.AST) -> list[ast.Constant]:
    return [n for n in getattr(node, "elts", []) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _tag_literals(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Set | ast.Tuple):
            strings = _strings(node)
            named = any(isinstance(n, ast.Name) for n in node.elts)  # ("role", TenantFilter): an admin's fields
            if strings and not named and all(s.value in TAGS for s in strings):
                found += strings
        elif isinstance(node, ast.keyword) and node.arg == "tags":
            found += [s for s in _strings(node.value) if s.value in TAGS]
        elif isinstance(node, ast.Assign) and any(_says(t, "tag") for t in node.targets):
            found += [n for n in ast.walk(node.value) if isinstance(n, ast.Constant) and n.value in TAGS]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says(side, "tag") for side in sides):
                found += [s for s in sides if isinstance(s, ast.Constant) and s.value in TAGS]
    return sorted({(n.lineno, n.value) for n in found})


def _slot_literals(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(_says(t, "slot") for t in node.targets):
            values = [node.value, *getattr(node.value, "values", []), *getattr(node.value, "args", [])]
            for value in values:
                found += [n for n in [value, *_strings(value)] if isinstance(n, ast.Constant) and n.value in SLOTS]
        elif isinstance(node, ast.keyword) and node.arg == "slot":
            found += [n for n in [node.value] if isinstance(n, ast.Constant) and n.value in SLOTS]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says(side, "slot") for side in sides):
                for side in sides:
                    found += [n for n in [side, *_strings(side)] if isinstance(n, ast.Constant) and n.value in SLOTS]
    return sorted({(n.lineno, n.value) for n in found})


def _app_sources() -> list[tuple[str, str]]:
    return [(path.relative_to(ROOT).as_posix(), path.read_text()) for app in APPS for path in (ROOT / app).rglob("*.py")
            if "/migrations/" not in path.as_posix() and path.relative_to(ROOT).as_posix() != HOME]


def test_no_tag_is_spelled_outside_the_vocabulary():
    found = {relative: hits for relative, source in _app_sources() if (hits := _tag_literals(ast.parse(source)))}
    assert not found, f"tags written out (use vocabulary.Tag): {found}"


def test_no_slot_is_spelled_outside_the_vocabulary():
    found = {relative: hits for relative, source in _app_sources() if (hits := _slot_literals(ast.parse(source)))}
    assert not found, f"slots written out (use vocabulary.Slot): {found}"


def test_the_key_facts_are_slots_and_the_enums_are_their_words():
    assert set(KEY_FACT_SLOTS) <= set(Slot)
    assert Tag.WISH == "wish" and Slot.HOME == "home"  # stored words: renaming a member must not change them


@pytest.mark.parametrize(("source", "tags", "slots"), [
    ('x = f(text, ["wish"], 0.8)', [(1, "wish")], []),
    ('s = Statement(tags=["contact", *tags])', [(1, "contact")], []),
    ('KEPT = frozenset({"wish", "habit", Tag.ABOUT_OTHER})', [(1, "habit"), (1, "wish")], []),
    ('ok = "wish" in (memory.tags or [])', [(1, "wish")], []),
    ('HABIT_TAG = "habit"', [(1, "habit")], []),
    ('HABIT = "habit"  # an intent, not a tag', [], []),
    ('CUES = ("question", "habit", "date")', [], []),
    ('list_filter = ("role", TenantFilter)', [], []),
    ('ONE_VALUE_SLOTS = frozenset({"name", "home"})', [], [(1, "home"), (1, "name")]),
    ('RULE_KEY_SLOT = {"residence": "home"}', [], [(1, "home")]),
    ('x = candidate.slot not in ("none", "other")', [], [(1, "none"), (1, "other")]),
    ('r = Reading(slot="work")', [], [(1, "work")]),
    ('same = neighbour.key == "name"  # a rule key, not a slot', [], []),
])
def test_the_rules_find_what_breaks_them(source, tags, slots):
    tree = ast.parse(source)
    assert _tag_literals(tree) == tags and _slot_literals(tree) == slots
