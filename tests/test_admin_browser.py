"""The admin as a person uses it: headless Chromium through Playwright.
Screenshots of each page land in test-artifacts/ (git-ignored)."""

import os
import re
from pathlib import Path

import pytest

from memories.models import Candidate, MemoryHistory, MemoryItem
from memories.writing import MemorySpec, memory_create

# Playwright's sync API keeps an event loop running for the rest of the session;
# the ORM calls here (and in fixtures' teardown) are still synchronous. Test-only:
# the deploy check (tests/test_security.py) runs without it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
PASSWORD = "correct horse battery staple"
pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="session")
def browser_type_launch_args():
    return {"executable_path": "/usr/bin/chromium", "headless": True,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    """Every page is looked at as on a common laptop screen, 1366 x 768."""
    return {**browser_context_args, "viewport": {"width": 1366, "height": 768}}


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def remember(tenant, user_id, text):
    return memory_create(tenant=tenant, spec=MemorySpec(user_id=user_id, text=text), actor="test").memory


@pytest.fixture
def queue(transactional_db, tenant_a):
    from memories.ingestion import conversation_job_create

    conversation_job_create(tenant=tenant_a, user_id="alice", session_id="s1", messages=[
        {"role": "user", "content": "I think I might try pottery classes."},
        {"role": "user", "content": "I have a new email, it is alice@example.com."},
    ])
    return tenant_a


def test_a_reviewer_works_the_queue_merges_and_supersedes(page, live_server, operator, queue):
    operator("rita", "reviewers")
    log_in(page, live_server, "rita")
    shot(page, "01-dashboard")
    assert page.locator("#memories-per-day-chart").is_visible() and page.locator("#pending-count").inner_text() == "2"
    assert page.locator("#memories-per-day-chart rect title").count() == 60  # created and archived, 30 days
    assert page.locator("#queue-size-chart").is_visible() and page.locator("#operations-chart").is_visible()
    heights = [float(h) for h in page.locator("#queue-size-chart rect").evaluate_all(
        "bars => bars.map(b => b.getAttribute('height'))")]
    assert max(heights) > 0, "the queue chart is drawn with today's two candidates"
    assert "REVIEW" in page.locator("#operations-chart").inner_html()  # both statements wait for review

    page.goto(f"{live_server.url}/admin/memories/candidate/")
    shot(page, "02-review-queue")
    pottery, email = Candidate.objects.order_by("created_at")
    page.goto(f"{live_server.url}/admin/memories/candidate/{pottery.id}/change/")
    page.fill("#id_text", "Alice wants to try pottery classes.")
    shot(page, "03-candidate")
    page.click("#approve-button")
    page.wait_for_selector("text=Candidate approved")
    page.goto(f"{live_server.url}/admin/memories/candidate/{email.id}/change/")
    page.click("#reject-button")
    page.wait_for_selector("text=Candidate rejected")
    assert sorted(Candidate.objects.values_list("status", flat=True)) == ["approved", "rejected"]

    first = remember(queue, "alice", "Alice has a cat.")
    second = remember(queue, "alice", "Alice's cat is named Miso.")
    page.goto(f"{live_server.url}/admin/memories/memoryitem/")
    for memory in (first, second):
        page.check(f"input[name=_selected_action][value='{memory.id}']")
    page.select_option("select[name=action]", "merge_selected")
    page.click("button[name=index]")
    page.fill("#id_merged_text", "Alice has a cat named Miso.")
    shot(page, "04-merge-form")
    page.click("#merge-submit")
    page.wait_for_selector("text=Merged 2 memories")
    merged = MemoryItem.objects.get(text="Alice has a cat named Miso.")
    assert MemoryHistory.objects.filter(event="MERGE", actor="rita").count() == 3

    page.fill("#id_text", "Alice has a grey cat named Miso.")
    page.click("input[name=_save]")
    page.wait_for_selector("text=Saved as version")
    shot(page, "05-superseded-with-timeline")
    timeline = page.locator("table.history-timeline")
    assert timeline.locator("text=SUPERSEDE").count() >= 1 and timeline.locator("ins.diff-new").count() >= 1
    assert "rita" in timeline.inner_text()
    merged.refresh_from_db()
    assert merged.expired_at is not None and merged.superseded_by.text == "Alice has a grey cat named Miso."


def test_an_auditor_has_no_change_button_and_a_forged_post_is_refused(page, live_server, operator, tenant_a,
                                                                       transactional_db):
    operator("aldo", "auditors")
    memory = remember(tenant_a, "alice", "Alice likes jazz.")
    log_in(page, live_server, "aldo")
    url = f"{live_server.url}/admin/memories/memoryitem/{memory.id}/change/"
    page.goto(url)
    shot(page, "06-auditor-memory")
    assert page.locator("input[name=_save]").count() == 0
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    response = page.request.post(url, form={"csrfmiddlewaretoken": token, "text": "hijacked", "importance": "0.5",
                                            "tags": "", "expected_version": "1"}, headers={"Referer": url})
    assert response.status == 403
    memory.refresh_from_db()
    assert memory.text == "Alice likes jazz."


def test_stored_markup_shows_as_text(page, live_server, operator, tenant_a, transactional_db):
    operator("rita", "reviewers")
    memory = remember(tenant_a, "alice", "<script>window.__pwned = 1</script><b>bold?</b>")
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog) or dialog.dismiss())
    log_in(page, live_server, "rita")
    for url in ("/admin/memories/memoryitem/", f"/admin/memories/memoryitem/{memory.id}/change/"):
        page.goto(live_server.url + url)
        assert page.evaluate("window.__pwned") is None
        assert page.locator("text=<script>window.__pwned = 1</script>").count() >= 1
    shot(page, "07-escaped-markup")
    assert not dialogs and not re.search(r"<b>bold\?</b>", page.locator("#content").inner_html())


def test_a_superuser_previews_and_forgets_a_user_and_makes_a_key(page, live_server, operator, tenant_a,
                                                                 transactional_db):
    from memories.models import ApiKey, ErasureReceipt

    operator("root", superuser=True)
    remember(tenant_a, "erin", "Erin's locker code is 4411.")
    remember(tenant_a, "erin", "Erin bikes to work.")
    log_in(page, live_server, "root")
    page.goto(f"{live_server.url}/admin/memories/memoryitem/forget/?tenant={tenant_a.id}&user_id=erin")
    assert page.locator("h1").count() == 1
    table = page.locator("#forget-counts").inner_text()
    assert re.search(r"memories\s+2", table) and "history_scrubbed" in table and "working_memory" in table
    shot(page, "forget-preview")
    page.click("#forget-confirm")
    page.wait_for_selector(".messagelist")
    assert "receipt" in page.locator(".messagelist").inner_text()
    assert not MemoryItem.objects.filter(user_id="erin").exists() and ErasureReceipt.objects.count() == 1

    page.goto(f"{live_server.url}/admin/memories/apikey/add/")
    page.select_option("#id_tenant", str(tenant_a.id))
    page.fill("#id_name", "ci agent")
    page.select_option("#id_role", "reviewer")
    page.click("input[name=_save]")
    page.wait_for_selector(".messagelist")
    message = page.locator(".messagelist").inner_text()
    assert "mk_" in message and ApiKey.objects.get(name="ci agent").role == "reviewer"
    shot(page, "api-key-created")


def test_admin_and_docs_work_under_the_content_security_policy(page, live_server, operator, tenant_a,
                                                                transactional_db):
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    operator("root", superuser=True)
    remember(tenant_a, "alice", "Alice likes tea.")
    log_in(page, live_server, "root")
    for path in ("/admin/", "/admin/memories/memoryitem/", "/admin/memories/memoryitem/forget/",
                 "/admin/memories/apikey/add/"):
        response = page.goto(f"{live_server.url}{path}")
        assert "default-src 'self'" in response.headers["content-security-policy"]
    response = page.goto(f"{live_server.url}/api/v1/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".swagger-ui .opblock", timeout=15000)  # the UI rendered from the schema
    shot(page, "docs-under-csp")
    assert violations == []


def test_an_operator_searches_as_the_agent(page, live_server, operator, tenant_a, transactional_db):
    remember(tenant_a, "alice", "Alice wants to try pottery classes.")
    remember(tenant_a, "alice", "Alice's sister lives in Porto.")
    operator("rita", "reviewers", tenant=tenant_a)
    page.set_viewport_size({"width": 1366, "height": 768})
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/memoryitem/")
    page.click("#search-as-agent-link")
    page.fill("input[name=user_id]", "alice")
    page.fill("#agent-query", "pottery classes")
    page.click("#agent-search-submit")
    page.wait_for_selector("#agent-results")
    shot(page, "07-search-as-agent")
    assert "pottery" in page.locator("#agent-results tbody tr").first.inner_text()
    assert "pottery" in page.locator("#context-block").inner_text()
    assert page.locator("#agent-plan").inner_text().startswith("vector plan")

    remember(tenant_a, "alice", "Alice mentioned that she has been training for the Berlin marathon every "
                                "weekend since March, and that her knee has been hurting after long runs.")
    for width in (1280, 1920):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/admin/memories/memoryitem/")
        shot(page, f"08-memory-list-{width}")
        # The text column is truncated to one line, never wrapped a word per line; nothing spills off the right.
        row = page.locator("#result_list tbody tr").first
        assert row.bounding_box()["height"] < 80
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", row.inner_text()), "one date format: ISO"


def test_the_review_queue_by_keyboard_inline_edit_and_bulk_reject(page, live_server, operator, tenant_a,
                                                                  transactional_db):
    from memories.ingestion import conversation_job_create

    for session, text in (("s1", "I think I might try pottery."), ("s2", "My email is ann@example.com."),
                          ("s3", "I might learn the cello."), ("s4", "Maybe I will move to Oslo."),
                          ("s5", "I think I might adopt a cat.")):
        conversation_job_create(tenant=tenant_a, user_id="ann", session_id=session,
                                messages=[{"role": "user", "content": text}])
    waiting = list(Candidate.objects.filter(status="pending").order_by("created_at"))
    assert len(waiting) >= 4
    operator("rita", "reviewers", tenant=tenant_a)
    page.set_viewport_size({"width": 1366, "height": 768})
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/candidate/")
    page.wait_for_selector("#review-keys")
    shot(page, "09-review-queue-work-list")

    page.keyboard.press("a")  # the first row is selected: approve it by keyboard
    page.wait_for_selector("text=Candidate approved")
    assert Candidate.objects.get(id=waiting[0].id).status == "approved"

    page.keyboard.press("e")  # the next first row: edit its text inline, then approve with the edit
    page.keyboard.press("Control+A")
    page.keyboard.type("Ann wants to learn something new.")
    page.locator(f"button.review-approve[form='review-{waiting[1].id}']").click()
    page.wait_for_selector("text=with your edit")
    assert MemoryItem.objects.filter(text="Ann wants to learn something new.").exists()

    for candidate in waiting[2:4]:
        page.check(f"input[name=_selected_action][value='{candidate.id}']")
    page.select_option("select[name=action]", "reject_selected")
    page.click("button[name=index]")
    page.wait_for_selector("text=2 rejected.")
    assert {Candidate.objects.get(id=c.id).status for c in waiting[2:4]} == {"rejected"}
    shot(page, "10-review-queue-after-decisions")


def test_the_review_queue_fits_a_laptop_keeps_the_place_and_undoes(page, live_server, operator, tenant_a,
                                                                    transactional_db):
    """At 1366 x 768: no sideways scrolling; after a decision the focus is on the next row; a reject
    carries its reason; the last decision can be undone (history and the admin's log say so)."""
    from django.contrib.admin.models import LogEntry

    from memories.ingestion import conversation_job_create

    for session, text in (("s1", "I think I might try pottery, the wheel kind, with a long story attached to it "
                                 "that goes on and on about clay and glazes and kilns and the teacher."),
                          ("s2", "My email is ann@example.com."), ("s3", "I might learn the cello."),
                          ("s4", "Maybe I will move to Oslo.")):
        conversation_job_create(tenant=tenant_a, user_id="ann", session_id=session,
                                messages=[{"role": "user", "content": text}])
    waiting = list(Candidate.objects.filter(status="pending").order_by("created_at", "id"))
    assert len(waiting) >= 3
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/candidate/")
    page.wait_for_selector("#review-keys")
    shot(page, "11-review-queue-1366")
    overflow = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert overflow[0] <= overflow[1], f"the queue scrolls sideways: {overflow}"
    assert page.locator(f"#candidate-{waiting[0].id} textarea.review-text").count() == 1  # the text once
    assert page.locator("td.field-submitted_by").first.inner_text().startswith("the service")
    assert "conversation job" in page.locator("td.field-submitted_by").first.inner_text()

    page.locator(f"button.review-approve[form='review-{waiting[0].id}']").click()
    page.wait_for_selector("text=Candidate approved")
    assert page.evaluate("() => document.activeElement.id") == f"candidate-{waiting[1].id}"

    page.locator(f"input.review-reason[form='review-{waiting[1].id}']").fill("not about Ann")
    page.locator(f"button.review-reject[form='review-{waiting[1].id}']").click()
    page.wait_for_selector("text=Candidate rejected: not about Ann")
    assert "rejected: not about Ann" in Candidate.objects.get(id=waiting[1].id).reason_detail
    assert page.evaluate("() => document.activeElement.id") == f"candidate-{waiting[2].id}"
    shot(page, "12-review-queue-after-reject-with-undo")

    page.click("#review-undo button")
    page.wait_for_selector("text=Decision undone")
    undone = Candidate.objects.get(id=waiting[1].id)
    assert undone.status == "pending" and "not about Ann" not in undone.reason_detail
    assert LogEntry.objects.filter(object_id=str(undone.id), change_message__contains="Undid").exists()

    approved = Candidate.objects.get(id=waiting[0].id)
    assert approved.status == "approved"
    with pytest.raises(Exception, match="only the reviewer"):  # someone else's decision stays
        from memories import governance

        governance.candidate_undo(tenant=tenant_a, candidate_id=approved.id, actor="admin:someone-else")


def test_a_memory_page_leads_with_its_standing_and_an_archived_one_is_restored(page, live_server, operator,
                                                                               tenant_a, transactional_db):
    """The page opens on whether the memory holds (an invalidated one links to what replaced it), what
    waits in review against it, then history; an archived memory is read-only with a Restore button.
    Chinese text renders in a real font (make browser installs one), not as boxes."""
    from memories import writing

    old = remember(tenant_a, "xiaolin", "小林住在杭州。")
    new = remember(tenant_a, "xiaolin", "小林搬到了上海。")
    writing.memory_invalidate(tenant=tenant_a, memory_id=old.id, invalid_at=new.created_at, actor="test",
                              reason="contradicted by: 小林搬到了上海。", contradicted_by=new)
    archived = remember(tenant_a, "xiaolin", "小林喜欢喝龙井茶。")
    writing.memory_set_status(tenant=tenant_a, memory_id=archived.id, status="archived", actor="test")
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")

    page.goto(f"{live_server.url}/admin/memories/memoryitem/{old.id}/change/")
    standing = page.locator(".memory-standing")
    assert "Invalidated" in standing.inner_text()
    first_box = page.locator("fieldset").first.inner_text()
    assert "Invalidated" in first_box and "小林搬到了上海" in first_box  # the link to what replaced it, first
    page.locator(f"a[href$='/{new.id}/change/']").first.click()
    assert "Current" in page.locator(".memory-standing").inner_text()
    shot(page, "13-memory-page-chinese")

    # A real CJK font: two different characters do not draw the same box.
    glyphs = []
    for char in ("用", "茶"):
        page.evaluate("(c) => { const s = document.createElement('span'); s.id = 'glyph'; s.textContent = c;"
                      " s.style.fontSize = '40px'; document.body.prepend(s); }", char)
        glyphs.append(page.locator("#glyph").screenshot())
        page.evaluate("() => document.getElementById('glyph').remove()")
    assert glyphs[0] != glyphs[1], "Chinese characters render as identical boxes: no CJK font"

    page.goto(f"{live_server.url}/admin/memories/memoryitem/{archived.id}/change/")
    assert "Archived" in page.locator(".memory-standing").inner_text()
    assert page.locator("textarea[name=text]").count() == 0 and page.locator("input[name=_save]").count() == 0
    page.click("#restore-button")
    page.wait_for_selector("text=Restored")
    assert MemoryItem.objects.get(id=archived.id).status == "active"
    assert page.locator("textarea[name=text]").count() == 1  # editable again
    assert MemoryHistory.objects.filter(memory_id=archived.id, event="RESTORE", actor="rita").exists()


def test_a_conversation_job_reads_as_the_conversation(page, live_server, operator, tenant_a, transactional_db):
    from memories.ingestion import conversation_job_create

    job = conversation_job_create(tenant=tenant_a, user_id="ann", session_id="s1", messages=[
        {"role": "user", "content": "I live in Ghent and I keep bees."},
        {"role": "assistant", "content": "Lovely."},
        {"role": "user", "content": "My email is ann@example.com."}])
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/conversationjob/{job.id}/change/")
    table = page.locator("table.job-conversation")
    rows = table.locator("tbody tr")
    assert rows.count() == 3
    assert "Ghent" in rows.nth(0).inner_text() and "ADD" in rows.nth(0).inner_text()
    assert "REVIEW" in rows.nth(2).inner_text() and "(pending)" in rows.nth(2).inner_text()
    assert "[{" not in page.locator("fieldset").nth(1).inner_text()  # not raw JSON
    shot(page, "14-conversation-job")


def test_a_reviewer_reads_a_person_with_their_facts_and_edges(page, live_server, operator, tenant_a,
                                                              transactional_db):
    """The people list, then one person: aliases, the memories about her, where she lives now and where
    she lived before, her history; readable at 1366 x 768 without scrolling sideways."""
    from memories.ingestion import conversation_job_create
    from memories.models import Person

    for session, turns in (("s1", ["I'm Priya. My mum Sheila teaches maths.", "She lives in Leeds."]),
                           ("s2", ["Mum moved from Leeds to York last month."])):
        conversation_job_create(tenant=tenant_a, user_id="priya", session_id=session,
                                messages=[{"role": "user", "name": "Priya", "content": t} for t in turns])
    sheila = Person.objects.get(name="Sheila")
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/person/")
    shot(page, "15-people-list")
    assert "Sheila" in page.locator("#result_list").inner_text()
    page.click(f"#result_list a[href$='/{sheila.id}/change/']")
    page.wait_for_selector("table.person-memories")
    shot(page, "16-person-page")
    assert "teaches maths" in page.locator("table.person-memories").inner_text()
    now = page.locator(".field-current_edges table.person-edges").inner_text()
    assert "Sheila lives in York" in now and "Sheila is priya’s mother" in now
    assert "Sheila lives in Leeds" in page.locator(".field-past_edges table.person-edges").inner_text()
    assert "EDGE_END" in page.locator("table.person-history").inner_text()
    overflow = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert overflow[0] <= overflow[1], f"the person's page scrolls sideways: {overflow}"
