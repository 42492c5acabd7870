"""The golden cases: one file of named conversations with the memories and operations each must
leave (memories/extraction_data/golden.json), in the spirit of Zulip's markdown test cases.

The same file drives the tests of both extractors (tests/test_meaning_extraction.py reads the offline
extractor's output against `expect`; the LLM path's parser is fed `memories` as a model's reply) and
is rendered into the LLM prompt as its examples (examples_for_the_prompt), so what the prompt shows and
what the tests hold cannot drift apart.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

GOLDEN_PATH = Path(__file__).resolve().parent.parent / "extraction_data" / "golden.json"
SPEAKER = "Sam"  # the speaker every golden case is said by


@lru_cache(maxsize=1)
def golden_cases() -> tuple[dict, ...]:
    return tuple(json.loads(GOLDEN_PATH.read_text(encoding="utf-8")))


def llm_reply(case: dict) -> dict:
    """A golden case's memories as the LLM is asked to answer them."""
    return {"memories": [{"subject": SPEAKER, "text": m["text"], "type": m["type"], "importance": 0.7,
                          "confidence": 0.9, "tags": m.get("tags", []), "source_messages": [0],
                          **({"forget": True} if m.get("forget") else {})}
                         for m in case["memories"]]}


@lru_cache(maxsize=1)
def examples_for_the_prompt() -> str:
    """Every golden case as an example the LLM sees: what was said, and the JSON it should answer."""
    blocks = []
    for case in golden_cases():
        turns = "\n".join(f"[{i}] {SPEAKER} (user): {turn}" for i, turn in enumerate(case["turns"]))
        answer = {"memories": [{k: v for k, v in m.items()} for m in case["memories"]]}
        blocks.append(f"Example ({case['name']}):\n{turns}\n-> {json.dumps(answer, ensure_ascii=False)}")
    return "\n\n".join(blocks)
