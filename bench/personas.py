"""Persona benchmark: does what people say over weeks become what the agent reads?

    make bench-personas                  # every persona, dev and held-out reported apart
    make bench-personas BENCH_ARGS=--quick   # two personas (one English, one Chinese)

Each persona in bench/personas/*.json is a user talking to an assistant over four to six
sessions spread over weeks (English, Chinese, code-mixed): key facts, compound sentences,
corrections, forget requests in everyday words, a habit in paraphrases, a standing wish, facts
about named others, small talk. Every session goes through the API as a client sends it (one
POST /conversations per session, then POST /sessions/{id}/end); the offline default extractor
and the local model. After the last session, the agent's questions are asked of /context at
400, 1,000 and 2,000 characters, and the block is checked:

- answered: every `needs` group has one of its words in the block;
- forget leaks: a `must_not` word of a forget question anywhere in the block;
- superseded shown as current: a `must_not` word of an update question in the block;
- noise share: block lines that are transcript with an assistant turn only, a pronoun with no
  one named, an instruction to the assistant kept as a fact, or 用户 and 我 in one line.

Personas are split into dev (rules and thresholds are chosen on them) and held-out (reported,
never tuned on) by their number: odd dev, even held out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from pathlib import Path

from common import print_table, setup_django, unlimited_api_client, wait_for_cycles, wait_for_jobs

PERSONAS_DIR = Path(__file__).resolve().parent / "personas"
BUDGETS = (400, 1000, 2000)


def is_dev(persona: dict) -> bool:
    number = int(re.match(r"p(\d+)", persona["persona"]).group(1))
    return number % 2 == 1


def found(block: str, words: list[str]) -> bool:
    lowered = block.casefold()
    return any(word.casefold() in lowered for word in words)


_ASSISTANT_ONLY = re.compile(r"(?:^|/ )(?:assistant|助手): ")
_USER_TURN = re.compile(r"(?:^|/ )(?!assistant|助手)[^:/]{1,40}: ")
_DANGLING = re.compile(r"^(?:- \[[^\]]*\] )?(?:he|she|it|they|them|他|她)\b", re.I)
_INSTRUCTION = re.compile(r"^(?:- \[[^\]]*\] )?(?:remember|记得|记住|请记|don't forget)", re.I)


def noise(line: str) -> str:
    """Why a block line is noise, or ''."""
    body = line.strip()
    if not body.startswith("- "):
        return ""
    if _ASSISTANT_ONLY.search(body) and not _USER_TURN.search(body.replace("assistant: ", "").replace("助手: ", "")):
        return "assistant-only transcript"
    if _DANGLING.match(body):
        return "pronoun with no one named"
    if _INSTRUCTION.match(body) or re.search(r"(?:User|用户)(?: asks| wants)? (?:to )?remember", body):
        return "instruction kept as a fact"
    if "用户" in body and "我" in body.replace("我们", ""):
        return "用户 and 我 in one line"
    return ""


# A trait text that is no trait: a forget request or its words, a placeholder for the user, a cut phrase
# (ends on a joining word or a comma), a greeting or thanks, or a fragment of fewer than three words.
_JUNK_TRAIT = re.compile(r"\b(?:forget|said about|thanks?|thank you)\b|忘|谢谢|\bUser\b|用户|[,，]\s*$|"
                         r"\b(?:as|and|but|or|the|a|to|of|with|because|so)\s*$", re.I)


def junk_trait(text: str, forgotten: list[str]) -> str:
    """Why a shown trait is junk, or '': what a person would not recognise as one of their traits."""
    if _JUNK_TRAIT.search(text):
        return "not a trait's words"
    if len(text.split()) < 3 and len(text) < 6:
        return "a fragment"
    if any(word.casefold() in text.casefold() for word in forgotten):
        return "something the user asked to forget"
    return ""


def shown_share(score: dict[str, float]) -> str:
    """Habit and wish questions whose needed words are in the traits the API shows, of how many."""
    standing = int(score.get("standing", 0))
    return f"{score.get('as trait', 0) / max(standing, 1):.2f} of {standing}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two personas")
    parser.add_argument("--show", action="store_true", help="print each block with its failures")
    parser.add_argument("--only", default="", help="personas whose name starts with this (p03, p0)")
    parser.add_argument("--blocks", action="store_true",
                        help="print each persona's 1,000-character block for its first update question")
    args = parser.parse_args()
    personas = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(PERSONAS_DIR.glob("p*.json"))]
    if args.quick:
        personas = [p for p in personas if p["persona"].startswith(("p01", "p04"))]
    if args.only:
        personas = [p for p in personas if p["persona"].startswith(args.only)]
    setup_django(database="memory_bench_personas", provider="local")
    from django.conf import settings

    settings.CONVERSATION_EPISODES = True
    tenant, auth, client = unlimited_api_client("personas")

    def call(path: str, body: dict) -> dict:
        response = client.post(f"/api/v1/{path}", json.dumps(body), content_type="application/json", **auth)
        if response.status_code not in (200, 201, 202):
            raise RuntimeError(f"{path}: {response.status_code} {response.content[:300]!r}")
        return response.json()

    totals: dict[str, dict[str, float]] = {}
    rows = []
    block_use: dict[str, list[float]] = {}  # language -> share of 2,000 characters a block used
    started = time.perf_counter()
    for number, persona in enumerate(personas, start=1):
        user = f"{persona['user_id']}-{uuid.uuid4().hex[:6]}"
        for session in persona["sessions"]:
            messages = [{"role": t["role"], "content": t["content"], "created_at": session["date"]}
                        for t in session["turns"]]
            sid = f"{session['session_id']}-{user}"
            call("conversations", {"user_id": user, "session_id": sid, "messages": messages})
            wait_for_jobs(tenant)
            call(f"sessions/{sid}/end", {"user_id": user})
        wait_for_cycles(tenant)
        split = "dev" if is_dev(persona) else "held-out"
        score = totals.setdefault(split, {"questions": 0, "leaks": 0, "superseded": 0, "lines": 0, "noise": 0,
                                          **{f"answered {b}": 0 for b in BUDGETS}})
        persona_answered = {b: 0 for b in BUDGETS}
        shown_traits = client.get(f"/api/v1/users/{user}/traits", **auth).json()
        trait_words = " ".join(t["text"] for rows_ in shown_traits.values() for t in rows_)
        forgotten = [w for q in persona["questions"] if q["kind"] == "forget" for w in q.get("must_not", [])]
        for text in (t["text"] for rows_ in shown_traits.values() for t in rows_):
            score["traits"] = score.get("traits", 0) + 1
            if why := junk_trait(text, forgotten):
                score["junk traits"] = score.get("junk traits", 0) + 1
                print(f"    junk trait ({why}) of {persona['persona']}: {text}", file=sys.stderr)
        for question in persona["questions"]:
            if question["kind"] in ("habit", "wish"):
                score["standing"] = score.get("standing", 0) + 1
                score["as trait"] = score.get("as trait", 0) + all(found(trait_words, g) for g in question["needs"])
            score["questions"] += 1
            for budget in BUDGETS:
                block = call("context", {"query": question["question"], "user_id": user,
                                         "max_chars": budget})["context"]
                answered = all(found(block, group) for group in question["needs"])
                persona_answered[budget] += answered
                score[f"answered {budget}"] += answered
                leaked = [w for w in question.get("must_not", []) if w.casefold() in block.casefold()]
                if budget == 2000:
                    block_use.setdefault(persona["language"], []).append(len(block) / budget)
                    if leaked and question["kind"] == "forget":
                        score["leaks"] += 1
                    elif leaked:
                        score["superseded"] += 1
                    lines = [line for line in block.splitlines() if line.strip().startswith("- ")]
                    score["lines"] += len(lines)
                    noisy = [(line, noise(line)) for line in lines if noise(line)]
                    score["noise"] += len(noisy)
                    if args.show and (noisy or leaked):
                        print(f"\n--- {persona['persona']}: {question['question']} leaked={leaked}")
                        for line, why in noisy:
                            print(f"    noise ({why}): {line}")
                if args.blocks and budget == 1000 and question is next(
                        q for q in persona["questions"] if q["kind"] == "update"):
                    print(f"\n--- {persona['persona']}: {question['question']} (max_chars=1000)\n{block}")
                if args.show and not answered and budget in (400, 2000):
                    print(f"\n--- {persona['persona']} @{budget}: {question['question']} needs {question['needs']}"
                          f"\n{block}")
        asked = len(persona["questions"])
        rows.append({"persona": persona["persona"], "lang": persona["language"], "split": split,
                     "questions": asked, **{f"@{b}": f"{persona_answered[b] / asked:.2f}" for b in BUDGETS}})
        print(f"[{number}/{len(personas)}] {persona['persona']} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    print_table("Per persona: share of questions answered", rows,
                ["persona", "lang", "split", "questions", *[f"@{b}" for b in BUDGETS]])
    summary = []
    for split, score in totals.items():
        asked = score["questions"]
        summary.append({"split": split, "questions": int(asked),
                        **{f"answered @{b}": f"{score[f'answered {b}'] / asked:.3f}" for b in BUDGETS},
                        "forget leaks": int(score["leaks"]), "superseded as current": int(score["superseded"]),
                        "noise share": f"{score['noise'] / max(score['lines'], 1):.3f}",
                        "habits/wishes as shown traits": shown_share(score),
                        "junk traits": f"{int(score.get('junk traits', 0))} of {int(score.get('traits', 0))}"})
    print_table("Dev and held-out personas", summary,
                ["split", "questions", *[f"answered @{b}" for b in BUDGETS], "forget leaks",
                 "superseded as current", "noise share", "habits/wishes as shown traits", "junk traits"])
    print_table("Share of a 2,000-character block used, by language",
                [{"language": lang, "blocks": len(uses), "median use": f"{sorted(uses)[len(uses) // 2]:.2f}"}
                 for lang, uses in sorted(block_use.items())], ["language", "blocks", "median use"])
    held = totals.get("held-out") or next(iter(totals.values()))
    asked = held["questions"]
    print(f"\nsummary: held-out personas answered {held['answered 400'] / asked:.3f} @400, "
          f"{held['answered 2000'] / asked:.3f} @2000; forget leaks {int(held['leaks'])}, superseded shown "
          f"{int(held['superseded'])}, noise {held['noise'] / max(held['lines'], 1):.3f}")


if __name__ == "__main__":
    main()
