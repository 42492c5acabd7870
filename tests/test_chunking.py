import pytest

from memories.chunking import split_text
from memories.models import MemoryVector


def test_short_text_is_one_chunk():
    assert split_text("short text") == ["short text"]


def test_long_text_is_split_with_overlap_and_loses_nothing():
    sentences = [f"Sentence number {i} talks about topic {i}." for i in range(60)]
    text = " ".join(sentences)
    chunks = split_text(text, size=500, overlap=50)
    assert len(chunks) > 1
    assert all(len(c) <= 500 for c in chunks)
    for sentence in sentences:
        assert any(sentence in c for c in chunks)
    # consecutive chunks share text: the next one starts with the previous one's last words
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert following.split()[0] in previous.split()[-10:]


def test_paragraphs_split_before_sentences():
    text = ("a" * 300) + "\n\n" + ("b" * 300)
    assert split_text(text, size=500, overlap=0) == ["a" * 300, "b" * 300]


def test_an_unbreakable_run_is_cut_by_characters():
    chunks = split_text("x" * 1200, size=500, overlap=50)
    assert all(len(c) <= 500 for c in chunks) and "".join(chunks).count("x") >= 1200


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        split_text("abc", size=10, overlap=10)


def test_a_long_memory_gets_one_vector_per_chunk_and_scores_by_its_best(api):
    filler = " ".join(f"Routine entry {i} about the weather being mild." for i in range(40))
    text = filler + " Alice keeps her spare key under the blue flowerpot."
    memory = api.remember("alice", text)
    assert MemoryVector.objects.filter(item_id=memory["id"]).count() > 2
    api.remember("alice", "Alice likes mild weather.")
    results = api.search("alice", "spare key under the blue flowerpot", mode="semantic")
    assert results[0]["memory"]["id"] == memory["id"]
