"""What an offline episode unit's summary keeps, against LoCoMo's own per-session observations (what its
authors say each speaker revealed in a session). For every session and speaker, the speaker's episode is
built as the conversation path builds it (memories.extraction.episode_unit: their own turns and the
turns that address them by name) and its summary (and title) read; an observation "appears" in it when at
least half of its content words (query_tokens, the speakers' names left out) are in the summary's words.
Mean word recall is given beside it (no threshold).

Compared, per split (dev: conv-26, where the summary's length and the sentence rules were chosen; held
out: conv-30 and conv-41):
- before: what an offline episode carried before units: the title "Conversation <session>, <date>" and
  no summary (offline, there was no narrative either);
- lead: the speaker's first sentences in the same length (what choosing sentences adds);
- unit: the generated title and summary;
- all turns: the speaker's own turns whole (the ceiling a summary of their words can reach).

    cd bench && ../.venv/bin/python episode_units.py [--show N]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
SPLITS = {"dev": ("conv-26",), "held out": ("conv-30", "conv-41")}
APPEARS = 0.5


def setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_project.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


def session_day(text: str):
    return datetime.strptime(text.split(" on ")[1], "%d %B, %Y").date()


def words(text: str, names: set[str]) -> set[str]:
    from memories.text import query_tokens

    return {t for t in query_tokens(text) if t not in names}


def lead(own: list[str], budget: int) -> str:
    from memories.extraction.clauses import sentences

    out, used = [], 0
    for sentence in (s for text in own for s in sentences(text)):
        if out and used + len(sentence) > budget:
            break
        out.append(sentence)
        used += len(sentence)
    return " ".join(out)


def score(facts: list[str], shown: str, names: set[str]) -> tuple[int, float]:
    have = words(shown, names)
    appear, recall = 0, 0.0
    for fact in facts:
        need = words(fact, names)
        share = len(need & have) / len(need) if need else 0.0
        appear += share >= APPEARS
        recall += share
    return appear, recall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", type=int, default=0, help="print this many units of the dev split")
    args = parser.parse_args()
    setup()
    import json

    from memories.extraction.episode_unit import SUMMARY_CHARS, Seen, episode_digest, perspectives

    samples = {s["sample_id"]: s for s in json.loads(DATA.read_text())}
    shown = 0
    print("| split | units | observations | before | lead | unit | all turns | unit chars/summary | word recall "
          "before / lead / unit / all |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for split, ids in SPLITS.items():
        totals = {k: [0, 0.0] for k in ("before", "lead", "unit", "all")}
        observed = units = chars = 0
        for sample_id in ids:
            conv, obs = samples[sample_id]["conversation"], samples[sample_id]["observation"]
            speakers = {conv["speaker_a"]: "a", conv["speaker_b"]: "b"}
            names = {t for n in speakers for t in words(n, set())}
            for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
                day, turns = session_day(conv[f"{key}_date_time"]), conv[key]
                seen = perspectives([Seen(i, speakers[t["speaker"]], t["text"]) for i, t in enumerate(turns)],
                                    speakers, "a")
                for name, user_id in speakers.items():
                    facts = [f for f, _ in obs.get(f"{key}_observation", {}).get(name, [])]
                    own = [turns[i]["text"] for i in seen.get(user_id, []) if turns[i]["speaker"] == name]
                    if not facts or not own:
                        continue
                    other = [n for n in speakers if n != name]
                    digest = episode_digest([(t, day) for t in own], name=name, others=other)
                    texts = {"before": f"Conversation {key}, {day.isoformat()}",
                             "lead": lead(own, SUMMARY_CHARS[digest.language]),
                             "unit": f"{digest.title} {digest.summary}", "all": " ".join(own)}
                    for kind, text in texts.items():
                        appear, recall = score(facts, text, names)
                        totals[kind][0] += appear
                        totals[kind][1] += recall
                    observed += len(facts)
                    units += 1
                    chars += len(digest.summary)
                    if split == "dev" and shown < args.show:
                        shown += 1
                        print(f"\n{name} {key}: {digest.title}\n  {digest.summary}\n  {digest.keywords}\n"
                              f"  observations: {facts}\n")
        share = {k: v[0] / observed for k, v in totals.items()}
        recall = " / ".join(f"{totals[k][1] / observed:.3f}" for k in totals)
        print(f"| {split} | {units} | {observed} | {share['before']:.3f} | {share['lead']:.3f} | {share['unit']:.3f}"
              f" | {share['all']:.3f} | {chars / max(units, 1):.0f} | {recall} |")
    print("summary: share of LoCoMo observations that appear in the speaker's offline episode unit")


if __name__ == "__main__":
    main()
