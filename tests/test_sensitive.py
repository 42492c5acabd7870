"""The one sensitive-data detector (memories/sensitive.py): a labelled set the tests own, the checks it
rests on, and what an episode withholds."""

import json
from collections import Counter
from pathlib import Path

import pytest

from memories.sensitive import (
    card_issuer_plausible,
    chinese_id_valid,
    find_sensitive,
    iban_valid,
    luhn_valid,
    normalise,
    redact,
    sensitive_kinds_in,
    ssn_valid,
)
from tests.conftest import converse

SAMPLES = json.loads((Path(__file__).parent / "samples" / "sensitive.json").read_text())["items"]


def test_the_labelled_set_recall_and_false_positives_by_kind():
    positives = [s for s in SAMPLES if s["kind"]]
    near_misses = [s for s in SAMPLES if not s["kind"]]
    assert len(positives) >= 150 and len(near_misses) >= 150
    assert {s["lang"] for s in positives} == {s["lang"] for s in near_misses} == {"en", "zh"}
    found, total = Counter(), Counter()
    for sample in positives:
        total[sample["kind"]] += 1
        found[sample["kind"]] += sample["kind"] in sensitive_kinds_in(sample["text"])
    flagged = [s["text"] for s in near_misses if sensitive_kinds_in(s["text"])]
    recall = sum(found.values()) / len(positives)
    false_positive_rate = len(flagged) / len(near_misses)
    for kind in sorted(total):
        print(f"sensitive: {kind:<12} recall {found[kind]}/{total[kind]}")
    print(f"sensitive: recall {recall:.3f} over {len(positives)}, false positives {false_positive_rate:.3f} "
          f"over {len(near_misses)}")
    assert recall >= 0.95, [s["text"] for s in positives if s["kind"] not in sensitive_kinds_in(s["text"])]
    assert false_positive_rate <= 0.05, flagged


@pytest.mark.parametrize(("check", "value", "valid"), [
    (luhn_valid, "4111111111111111", True), (luhn_valid, "4111111111111112", False),
    (card_issuer_plausible, "4111111111111111", True), (card_issuer_plausible, "378282246310005", True),
    (card_issuer_plausible, "9111111111111111", False), (card_issuer_plausible, "37828224631000", False),
    (ssn_valid, "078051120", True), (ssn_valid, "666123456", False), (ssn_valid, "912345678", False),
    (ssn_valid, "123004567", False), (ssn_valid, "123450000", False),
    (chinese_id_valid, "11010519491231002X", True), (chinese_id_valid, "110105194913310021", False),
    (chinese_id_valid, "910105194912310021", False),
    (iban_valid, "GB82WEST12345698765432", True), (iban_valid, "GB83WEST12345698765432", False),
    (iban_valid, "DE89 3704 0044 0532 0130 00", True),
])
def test_the_checks(check, value, valid):
    assert check(value) is valid


def test_findings_map_back_to_the_original_text():
    text = "我的邮箱是ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ，手机一三八一二三四五六七八。"
    assert normalise("ａ＠一").text == "a@1"
    findings = find_sensitive(text)
    assert [(f.kind, text[f.start:f.end]) for f in findings] == [
        ("email", "ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ"), ("phone", "一三八一二三四五六七八")]
    # Redaction replaces exactly those spans: the sentence keeps its full-width punctuation.
    assert redact(text) == "我的邮箱是[email withheld]，手机[phone withheld]。"
    assert redact(text, ["email"]) == "我的邮箱是[email withheld]，手机一三八一二三四五六七八。"


def test_a_card_is_not_also_a_phone_and_an_iban_is_not_a_card():
    assert [f.kind for f in find_sensitive("card 4111 1111 1111 1111, iban DE89 3704 0044 0532 0130 00")] == [
        "card", "iban"]


def test_an_episode_withholds_what_the_detector_finds(api, settings):
    settings.CONVERSATION_EPISODES = True
    turns = ["Write to alice＠example.com about the flat.", "My SSN is 078 05 1120, keep it safe.",
             "The card is 4111/1111/1111/1111.", "我的手机是一三八一二三四五六七八。",
             "身份证：１１０１０５１９４９１２３１００２Ｘ", "Call +351 912 345 678 after lunch.",
             "We met on 2024-05-12 at 10:30 in room 4021."]
    converse(api, turns, user_id="ana", session_id="s-pii")
    from memories.models import MemoryItem
    from memories.writing import EPISODE_TAG

    (episode,) = MemoryItem.objects.filter(user_id="ana", tags__contains=[EPISODE_TAG])
    for secret in ("alice", "078 05 1120", "4111/1111", "一三八一二三四五六七八", "１１０１０５", "912 345 678"):
        assert secret not in episode.text, (secret, episode.text)
    assert "2024-05-12 at 10:30 in room 4021" in episode.text  # what is no secret stays
    assert episode.text.count("withheld]") == 6
    active = MemoryItem.objects.filter(user_id="ana", status="active").exclude(tags__contains=[EPISODE_TAG])
    assert not any(s in m.text for m in active for s in ("078 05 1120", "alice", "912 345 678"))
