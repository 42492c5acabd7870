"""The rules a trait is read and worded by from what the user said (reflection.wording, reflection.evidence,
reflection.said, traits.lifecycle.stage_when_ended): table tests, and the evidence model's manifest."""

from __future__ import annotations

import pytest

from memories import vocabulary
from reflection.evidence import EVIDENCE_MODEL_PATH, EvidenceModel, dev_utterances, intent_corpus_rows, said_stopped
from reflection.evidence import stories_hash as evidence_stories_hash
from reflection.said import clause_behind
from reflection.stories import read_stories
from reflection.wording import (
    chinese_trait_text,
    chinese_wish_from_turn,
    chinese_wish_text,
    english_trait_text,
    wording_rank,
)
from traits.lifecycle import stage_when_ended


@pytest.mark.parametrize("turn, trait", [
    ("我每天坐地铁上班的路上都在听书，一个小时正好听几章", "每天坐地铁上班的路上都在听书"),
    ("晚上七点半我准时去广场跳舞，我们那个舞队有二十多个人", "晚上七点半准时去广场跳舞"),
    ("今早照例一杯龙井开工，窗外下着雨", "照例一杯龙井开工"),
    ("香菜我是真的受不了，闻到味道就想吐", "香菜是真的受不了"),
    ("说真的，我的午觉是雷打不动的", "自己的午觉是雷打不动的"),
    ("我们家周末一般去爬山", "我们家周末一般去爬山"),
])
def test_a_chinese_turn_is_worded_as_a_trait_without_its_speaker(turn, trait):
    assert chinese_trait_text(turn) == trait


@pytest.mark.parametrize("turn, wish, trait", [
    ("Also random question. I swim outdoors at Salford Quays every Sunday morning", False,
     "Swims outdoors at Salford Quays every Sunday morning"),
    ("Never miss the daily crossword, keeps the old brain ticking over", False,
     "Never misses the daily crossword, keeps the old brain ticking over"),
    ("I do a 20-minute Peloton ride at 5:30 before the twins wake up", False,
     "Does a 20-minute Peloton ride at 5:30 before the twins wake up"),
    ("Every morning with my first cup of tea I sit at the window", False,
     "Every morning with their first cup of tea sits at the window"),
    ("Please don't use technical words, I'm not a computer person.", True,
     "Asks for answers like this: don't use technical words"),
    ("Can you explain what a router does? Plain English please, none of the jargon", True,
     "Asks for answers like this: plain English please, none of the jargon"),
    ("keep it short pls, I just need a list", True, "Asks for answers like this: keep it short"),
    ("When I get home after a night shift I always black out the room", False,
     "When they get home after a night shift always blacks out the room"),
    ("After work I usually cycle home and I cook", False, "After work usually cycles home, they cook"),
    ("First thing every morning I go through open PRs before I write any code", False,
     "First thing every morning goes through open PRs before they write any code"),
])
def test_an_english_turn_is_worded_as_a_trait_a_reviewer_would_write(turn, wish, trait):
    assert english_trait_text(turn, wish=wish) == trait


@pytest.mark.parametrize("text, trait", [
    ("林静对助手回答的要求：别用太多术语", "希望回答：别用太多术语"),
    ("对助手回答的要求：简短一点。", "希望回答：简短一点"),
])
def test_a_chinese_wish_reads_as_what_the_user_hopes_for(text, trait):
    assert chinese_wish_text(text) == trait


@pytest.mark.parametrize("turn, trait", [
    ("回答别太啰嗦，我带娃时间很碎", "希望回答：回答别太啰嗦"),
    ("English only please，我要练阅读", "希望回答：English only please"),
    ("说重点就行，不用解释那么多", "希望回答：说重点就行"),
])
def test_a_chinese_wish_is_worded_from_the_clause_that_asks(turn, trait):
    assert chinese_wish_from_turn(turn) == trait


@pytest.mark.parametrize("better, worse", [
    ("I bike to the office every day", "Rode in through sleet this morning"),  # how often beats one day
    ("Every morning I'm out in the garden", "Every morning I'm out in the garden, today in the pouring rain"),
    ("我每天中午都要睡半小时午觉", "刚午睡起来，今天睡得特别香"),
    ("I never miss the crossword", "I never miss the daily crossword, it keeps the old brain ticking over"),
])
def test_the_best_statement_of_a_habit_says_how_often_and_no_days_detail(better, worse):
    assert wording_rank(better) > wording_rank(worse)


@pytest.mark.parametrize("said, stopped", [
    ("I don't play chess any more", True),
    ("Doc says no more soccer for me", True),
    ("I've quit the aqua class for good", True),
    ("gave up the morning runs after my knee op", True),
    ("现在不弹吉他了", True),
    ("啤酒也戒了", True),
    ("karaoke 我不去了 lah", True),
    ("I play chess every Sunday", False),
    ("这家店不错了", False),
    ("我真不行", False),
    ("more coffee please", False),
])
def test_which_turns_say_a_habit_ended(said, stopped):
    assert said_stopped(said) is stopped


@pytest.mark.parametrize("turn, memory, clause", [
    ("I bike to work every day, and I hate driving", "Sam hates driving", "I hate driving"),
    ("I bike to work every day, and I hate driving", "Sam bikes to work every day", "I bike to work every day"),
])
def test_a_memory_is_read_on_the_clause_it_was_written_from(turn, memory, clause):
    assert clause_behind(turn, memory).strip(" ,") == clause


@pytest.mark.parametrize("stage, after", [
    (vocabulary.CORE, vocabulary.CANDIDATE), (vocabulary.ESTABLISHED, vocabulary.CANDIDATE),
    (vocabulary.EMERGING, vocabulary.CANDIDATE), (vocabulary.CANDIDATE, vocabulary.CANDIDATE),
    (vocabulary.TREND, vocabulary.TREND), (vocabulary.DISSOLVED, vocabulary.DISSOLVED),
])
def test_a_trait_the_user_said_ended_is_no_longer_shown(stage, after):
    assert stage_when_ended(stage) == after


def test_the_shipped_evidence_model_was_trained_on_the_stories_and_corpus_in_the_repository():
    """Adding or relabelling a story (or an intent corpus line) without retraining fails here: run
    `manage.py train_trait_evidence`. The held-out stories are never read in training."""
    rows = dev_utterances(read_stories()) + intent_corpus_rows()
    model = EvidenceModel.load(EVIDENCE_MODEL_PATH)
    assert model.stories == evidence_stories_hash([(text, label) for _, text, label in rows])
    assert all(not story.held_out for story in read_stories() if any(story.id == s for s, _, _ in rows))
    assert model.scores["evidence precision"] >= 0.8 and model.scores["evidence recall"] >= 0.75, model.scores
