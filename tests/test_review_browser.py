"""Issue 56 items 1-2 as a reviewer meets them, in Debian's Chromium at 1366 x 768: reinstating a wrongly
invalidated memory (alone, and retiring the wrong replacement), the list's restore saying why not, and the
review queue's feedback in view, Undo giving back the typed reason, legible diffs, the sensitive kind named.
Screenshots land in test-artifacts/ (review-*.png)."""

import re

import pytest

from memories import writing
from memories.models import Candidate, CandidateOperation, MemoryHistory, MemoryItem
from tests.test_admin_browser import (  # noqa: F401  (the Chromium and viewport fixtures)
    ARTIFACTS,
    browser_context_args,
    browser_type_launch_args,
    log_in,
    remember,
    shot,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def screen(page, name: str) -> None:
    """What the reviewer sees without scrolling (the viewport, not the whole page)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def wrongly_invalidated(tenant, home="Leeds", job="at a bank"):
    lives = remember(tenant, "marcus", f"Marcus lives in {home}.")
    works = remember(tenant, "marcus", f"Marcus started a new job {job}.")
    writing.memory_invalidate(tenant=tenant, memory_id=lives.id, invalid_at=works.created_at, actor="extraction",
                              reason=f"contradicted by: Marcus started a new job {job}.", contradicted_by=works)
    return lives, works


def test_a_reviewer_reinstates_a_wrongly_invalidated_memory(page, live_server, operator, tenant_a,
                                                           transactional_db):
    leeds, bank = wrongly_invalidated(tenant_a)
    york, school = wrongly_invalidated(tenant_a, "York", "as a teacher")
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")

    page.goto(f"{live_server.url}/admin/memories/memoryitem/{leeds.id}/change/")
    first = page.locator("fieldset").first
    assert "Invalidated" in first.inner_text()
    assert page.locator("#retired-by-link").inner_text() == "Marcus started a new job at a bank."
    assert page.locator("#restore-button").is_visible() and page.locator("#reinstate-retire-button").is_visible()
    assert page.locator("#restore-button").bounding_box()["y"] < 768, "the choice is on the first screen"
    shot(page, "review-reinstate-choice")
    page.locator("input.correction-reason[form='reinstate-form']").fill("a new job does not move him")
    page.click("#restore-button")
    page.wait_for_selector("text=Restored: the memory is current again.")
    assert "Current" in page.locator(".memory-standing").inner_text()
    leeds.refresh_from_db()
    bank.refresh_from_db()
    assert leeds.expired_at is None and leeds.invalid_at is None and bank.status == "active"
    assert MemoryHistory.objects.filter(memory_id=leeds.id, event="RESTORE", actor="rita",
                                        reason="a new job does not move him").exists()
    shot(page, "review-reinstated-alone")

    page.goto(f"{live_server.url}/admin/memories/memoryitem/{york.id}/change/")
    page.locator("input.correction-reason[form='reinstate-form']").fill("misheard: he never changed jobs")
    page.click("#reinstate-retire-button")
    page.wait_for_selector("text=The wrong replacement")
    york.refresh_from_db()
    school.refresh_from_db()
    assert york.expired_at is None and school.status == "archived"
    assert MemoryHistory.objects.filter(memory_id=school.id, event="DELETE", actor="rita",
                                        reason__contains="misheard").exists()
    shot(page, "review-reinstated-and-retired")


def test_the_list_restore_says_what_it_did_and_why_not(page, live_server, operator, tenant_a, transactional_db):
    leeds, _bank = wrongly_invalidated(tenant_a)
    forgotten = [remember(tenant_a, "marcus", text) for text in ("Marcus plays squash.", "Marcus has a cousin.")]
    for memory in forgotten:
        writing.memory_forget(tenant=tenant_a, memory_id=memory.id, actor="test")
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")

    def restore(memories):
        page.goto(f"{live_server.url}/admin/memories/memoryitem/?user_id=marcus")
        for memory in memories:
            page.check(f"input[name=_selected_action][value='{memory.id}']")
        page.select_option("select[name=action]", "restore_selected")
        page.click("button[name=index]")
        page.wait_for_selector(".messagelist li")
        return page.locator(".messagelist li")

    said = restore(forgotten)
    assert said.count() == 1 and "warning" in said.get_attribute("class")
    assert said.inner_text() == "0 restored: 2 were forgotten at the user's request and cannot be restored."
    shot(page, "review-bulk-restore-nothing")
    said = restore([leeds, *forgotten])
    assert said.inner_text() == "1 restored: 2 were forgotten at the user's request and cannot be restored."
    assert MemoryItem.objects.get(id=leeds.id).expired_at is None


def contrast(page, selector: str) -> float:
    """WCAG contrast ratio of an element's computed text colour over its computed background (the first
    ancestor with one that is not transparent)."""
    colours = page.locator(selector).first.evaluate("""(e) => {
        const fg = getComputedStyle(e).color;
        let n = e, bg = 'rgba(0, 0, 0, 0)';
        while (n && n.nodeType === 1) {
            const c = getComputedStyle(n).backgroundColor;
            if (!/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') { bg = c; break; }
            n = n.parentElement;
        }
        return [fg, bg === 'rgba(0, 0, 0, 0)' ? 'rgb(255, 255, 255)' : bg];
    }""")

    def luminance(css: str) -> float:
        channels = [int(v) / 255 for v in re.findall(r"\d+(?:\.\d+)?", css)[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(colours[0]), luminance(colours[1])), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_queue_answers_where_the_reviewer_looks(page, live_server, operator, tenant_a, transactional_db):
    from memories import governance
    from memories.ingestion import conversation_job_create
    from memories.writing import MemorySpec

    for session, text in (("s1", "I might learn the cello."), ("s2", "My email is ann@example.com."),
                          ("s3", "I think I might try pottery."), ("s4", "Maybe I will move to Oslo."),
                          ("s5", "I might adopt a cat."), ("s6", "I think I might learn Greek.")):
        conversation_job_create(tenant=tenant_a, user_id="ann", session_id=session,
                                messages=[{"role": "user", "content": text}])
    old = remember(tenant_a, "ann", "Ann works at the bakery on Mill Street.")
    governance.review_candidate_create(
        tenant=tenant_a, user_id="ann", operation=CandidateOperation.UPDATE, target=old, reasons=["contradicts"],
        spec=MemorySpec(user_id="ann", text="Ann works at the library on Mill Street."), detail="",
        api_key_id=None)
    waiting = list(Candidate.objects.filter(status="pending").order_by("created_at", "id"))
    email = next(c for c in waiting if "email" in c.text)
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/candidate/")
    page.wait_for_selector("#review-keys")
    shot(page, "review-queue-cards")

    assert "sensitive: email" in page.locator(f"#candidate-{email.id} .review-meta").inner_text()
    for selector in (".review-diff ins", ".review-diff del", "textarea.review-text", ".review-source"):
        ratio = contrast(page, selector)
        assert ratio >= 4.5, f"{selector}: contrast {ratio:.2f} < 4.5"

    decided = waiting[3]
    page.locator(f"#candidate-{decided.id}").scroll_into_view_if_needed()
    page.locator(f"input.review-reason[form='review-{decided.id}']").fill("not about Ann")
    page.locator(f"button.review-reject[form='review-{decided.id}']").click()
    page.wait_for_selector("text=Candidate rejected: not about Ann")
    feedback = page.locator("#review-feedback")
    box, undo = feedback.bounding_box(), page.locator("#review-undo button").bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= 768, f"the confirmation is out of view: {box}"
    assert 0 <= undo["y"] and undo["y"] + undo["height"] <= 768, f"Undo is out of view: {undo}"
    focused = page.evaluate("() => document.activeElement.getBoundingClientRect().toJSON()")
    assert focused["bottom"] <= box["y"] or focused["top"] >= box["y"] + box["height"] or \
        focused["right"] <= box["x"], "the next card hides under the confirmation"
    screen(page, "review-queue-after-reject")

    page.click("#review-undo button")
    page.wait_for_selector("text=with the reason you typed")
    assert Candidate.objects.get(id=decided.id).status == "pending"
    assert page.locator(f"input.review-reason[form='review-{decided.id}']").input_value() == "not about Ann"
    assert page.locator("#review-feedback").bounding_box()["y"] < 768
    screen(page, "review-queue-after-undo")
