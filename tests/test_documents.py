"""Documents with file id, file name and chunk index (seed 004 §7.3, issue 57 item 4): a file's chunks
are document memories naming their file and place, found by search, listed per file, saved again as
no change."""

import io

import pytest
from django.core.management import call_command

from memories.documents import document_save, documents_of_user
from memories.models import MemoryHistory, MemoryItem, MemoryVector

PARAGRAPHS = [f"Section {i}. The quarterly report covers shipping routes, warehouse {i} and staffing levels "
              f"for the northern region, with notes on costs and delays." for i in range(12)]
PARAGRAPHS[7] += " The spare generator for warehouse seven is stored behind the blue loading door."
REPORT = "\n\n".join(PARAGRAPHS)


def test_a_file_becomes_chunks_that_name_it(api, tenant_a, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # the chunks' embedding, enqueued after commit
        saved = document_save(tenant=tenant_a, user_id="alice", file_name="report.txt", text=REPORT, actor="t")
    chunks = MemoryItem.objects.filter(tenant=tenant_a, user_id="alice", memory_type="document").order_by(
        "data__chunk_index")
    assert len(saved.chunks) == chunks.count() > 2
    assert [c.data["chunk_index"] for c in chunks] == list(range(chunks.count()))
    assert {(c.data["file_id"], c.data["file_name"], c.data["chunk_count"]) for c in chunks} \
        == {(saved.file_id, "report.txt", chunks.count())}
    assert all(len(c.text) <= 500 for c in chunks)  # one embedding window each: one vector per chunk
    assert MemoryVector.objects.filter(item__in=chunks).count() == chunks.count()
    # written by the writer, with history
    assert MemoryHistory.objects.filter(memory_id__in=chunks.values("id"), event="ADD").count() == chunks.count()
    answer = api.post("memories/search?include=data", {"user_id": "alice", "query": "where is the spare generator",
                                                       "mode": "hybrid"})
    hit = answer.json()["results"][0]["memory"]
    assert hit["memory_type"] == "document" and "blue loading door" in hit["text"]
    assert hit["data"]["file_id"] == saved.file_id and hit["data"]["file_name"] == "report.txt"


def test_files_are_listed_per_user_and_saving_again_changes_nothing(api, tenant_a, tenant_b):
    first = document_save(tenant=tenant_a, user_id="alice", file_name="report.txt", text=REPORT, actor="t")
    document_save(tenant=tenant_a, user_id="alice", file_name="notes.md", text="Buy a new kettle.", actor="t")
    document_save(tenant=tenant_b, user_id="alice", file_name="other tenant.txt", text="Not yours.", actor="t")
    again = document_save(tenant=tenant_a, user_id="alice", file_name="report.txt", text=REPORT, actor="t",
                          file_id=first.file_id)
    assert {c["operation"] for c in again.chunks} == {"NOOP"}
    files = documents_of_user(tenant=tenant_a, user_id="alice")
    assert [f["file_name"] for f in files] == ["notes.md", "report.txt"]
    report = files[1]
    assert report["file_id"] == first.file_id
    assert [c["chunk_index"] for c in report["chunks"]] == list(range(report["chunk_count"]))


def test_a_chunk_carrying_sensitive_data_waits_for_review(api, tenant_a):
    text = REPORT + "\n\nThe storeroom alarm code is 4421 and my card number is 4111 1111 1111 1111."
    saved = document_save(tenant=tenant_a, user_id="alice", file_name="report.txt", text=text, actor="t")
    assert saved.chunks[-1]["operation"] == "REVIEW" and saved.chunks[-1]["memory_id"] is None
    assert not MemoryItem.objects.filter(text__contains="4111").exists()


def test_the_command_saves_a_file(api, tmp_path, tenant_a):
    path = tmp_path / "manual.txt"
    path.write_text(REPORT, encoding="utf-8")
    out = io.StringIO()
    call_command("import_document", "--tenant", tenant_a.name, "--user", "bob", "--file", str(path), stdout=out)
    assert "(manual.txt)" in out.getvalue() and "ADD" in out.getvalue()
    assert documents_of_user(tenant=tenant_a, user_id="bob")[0]["file_name"] == "manual.txt"


@pytest.mark.parametrize(("name", "text", "complaint"), [(" ", "text", "file name"), ("a.txt", "  ", "no text")])
def test_a_document_needs_a_name_and_text(tenant_a, name, text, complaint):
    with pytest.raises(ValueError, match=complaint):
        document_save(tenant=tenant_a, user_id="alice", file_name=name, text=text, actor="t")
