"""The offline extractor on the labelled utterances (memories/extraction_data/):
recall (utterances a person would keep that left a memory) and junk (share of
created memories that came from utterances to drop), for the tuning part and the
held-out part, English and Chinese, with the shipped classifier and with the
rules alone (the baseline), in one run.

    make bench-extraction
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from common import print_table, setup_django


def run(rows, *, classifier: bool) -> list[list]:
    from memories.extraction import Message, RulesExtractor

    extractor = RulesExtractor(use_classifier=classifier)
    now = datetime(2024, 6, 1, tzinfo=UTC)
    return [extractor.extract(messages=[Message(index=0, role="user", content=row.text)], speakers={"User": "u"},
                              existing=[], now=now) for row in rows]


def score(rows, outputs) -> dict:
    keep = [r for r, out in zip(rows, outputs, strict=True) if r.keep]
    kept = sum(1 for r, out in zip(rows, outputs, strict=True) if r.keep and out)
    created = sum(len(out) for out in outputs)
    junk = sum(len(out) for r, out in zip(rows, outputs, strict=True) if not r.keep)
    return {"utterances": len(rows), "to keep": len(keep), "recall": kept / max(len(keep), 1),
            "memories": created, "junk": junk / max(created, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show-misses", action="store_true", help="print the tuning part's misses and junk")
    args = parser.parse_args()
    setup_django()
    from memories.durable import labelled_utterances

    rows = labelled_utterances()
    table, summary = [], {}
    for name, classifier in (("rules alone (baseline)", False), ("rules + classifier (shipped)", True)):
        outputs = run(rows, classifier=classifier)
        for split in ("tune", "heldout"):
            for language in ("en", "zh", "all"):
                picked = [(r, o) for r, o in zip(rows, outputs, strict=True)
                          if r.split == split and language in ("all", r.language)]
                result = score([p[0] for p in picked], [p[1] for p in picked])
                table.append({"extractor": name, "split": split, "language": language, **result})
                if language == "all":
                    summary[(name, split)] = result
        if classifier:
            mixed = [c.text for out in outputs for c in out if "User" in c.text and any("\u4e00" <= ch <= "\u9fff"
                                                                                         for ch in c.text)]
            print(f"Chinese memories with 'User' inside: {len(mixed)}")
            if args.show_misses:
                for r, out in zip(rows, outputs, strict=True):
                    if r.split == "tune" and r.keep != bool(out):
                        print(f"  {'MISS' if r.keep else 'JUNK'} [{r.category}] {r.text} -> {[c.text for c in out]}")
    print_table("Offline extraction on the labelled utterances", table,
                ["extractor", "split", "language", "utterances", "to keep", "recall", "memories", "junk"])
    shipped = summary[("rules + classifier (shipped)", "heldout")]
    base = summary[("rules alone (baseline)", "heldout")]
    print(f"\nsummary: heldout recall={shipped['recall']:.3f} junk={shipped['junk']:.3f} "
          f"(rules alone: recall={base['recall']:.3f} junk={base['junk']:.3f})")


if __name__ == "__main__":
    main()
