"""Issue 56's pages as a reviewer reads them, in Debian's Chromium at 1366 x 768: a conversation job
(each turn once, what it produced beside it, linked; counts as a table; redaction only where something
was forgotten), Chinese memory and trait lists that fit, the dashboard's way into the queue and the app
list, titles in the project's words. The data come in through the real services: a conversation through
the ingestion path (with an invalidation and a forget), memories and traits through their writers.
Screenshots land in test-artifacts/ (git-ignored)."""

import pytest

from memories.models import MemoryItem
from memories.writing import FORGOTTEN_TURN
from tests.test_admin_browser import browser_context_args, browser_type_launch_args, log_in, shot  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MARCUS = [
    {"role": "user", "name": "Marcus", "content": "Hi, I'm Marcus. I live in Leeds and I work as a nurse."},
    {"role": "assistant", "content": "Nice to meet you, Marcus."},
    {"role": "user", "name": "Marcus", "content": "My brother Tom just started at Manchester university."},
    {"role": "user", "name": "Marcus", "content": "Actually I moved to York last month."},
    {"role": "user", "name": "Marcus",
     "content": "Please forget that my brother is at university, he'd rather I didn't share that."},
]
XIAOLIN = [
    "小林每个周六早上都会去西湖边跑步，跑完再去附近的茶馆喝一杯龙井茶，然后回家给女儿做早饭。",
    "小林的女儿今年九月开始在杭州的一所国际学校读三年级，她最喜欢的科目是科学和美术。",
    "小林在一家做跨境电商的公司当产品经理，每周三要和美国的同事开很晚的视频会议。",
]


def fits(page, table: str = "#result_list") -> list[str]:
    """What is cut off in a list: columns whose box reaches past the visible part of the list, and text
    cells whose words overflow their box. Empty when everything shows."""
    return page.evaluate("""(table) => {
        const list = document.querySelector(table), box = list.closest('.results') || list.parentElement;
        const right = Math.min(box.getBoundingClientRect().right, document.documentElement.clientWidth);
        const cut = [];
        for (const th of list.querySelectorAll('thead th')) {
            const r = th.getBoundingClientRect();
            if (r.right > right + 1 || r.width < 8) cut.push('column ' + th.className + ' ' + r.right + '>' + right);
        }
        for (const cell of list.querySelectorAll('tbody td, tbody th')) {
            for (const el of [cell, ...cell.querySelectorAll('span, a')]) {
                const hidden = getComputedStyle(el).overflow !== 'visible';
                if (hidden && (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1))
                    cut.push('text ' + cell.className + ': ' + el.textContent.slice(0, 30));
            }
        }
        if (box.scrollWidth > box.clientWidth + 1) cut.push('the list scrolls sideways');
        return cut;
    }""", table)


def test_a_conversation_job_page_shows_each_turn_once_with_what_it_made(page, live_server, operator, tenant_a,
                                                                         transactional_db, settings):
    from memories.ingestion import conversation_job_create

    settings.CONVERSATION_EPISODES = True  # the episode cites every turn: it is shown once, not in each
    job = conversation_job_create(tenant=tenant_a, user_id="marcus", session_id="s1", messages=MARCUS)
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}/admin/memories/conversationjob/{job.id}/change/")
    shot(page, "pages-job")
    assert "| Conversation job |" in page.title()
    rows = page.locator("table.job-conversation tbody tr")
    assert rows.count() == 5
    said = page.locator("table.job-conversation").inner_text()
    for turn in ("I live in Leeds", "Nice to meet you", "I moved to York"):
        assert said.count(turn) == 1, f"{turn!r} shown {said.count(turn)} times"
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 1400, f"the job page is {height} px tall for 5 turns"

    # What each turn produced, beside it and linked: the move invalidated Leeds and added York ...
    york = MemoryItem.objects.exclude(tags__contains=["episode"]).get(text__contains="York", tenant=tenant_a)
    leeds = MemoryItem.objects.exclude(tags__contains=["episode"]).get(text__contains="Leeds", tenant=tenant_a)
    moved = rows.nth(3)
    assert moved.locator(f"a[href$='/memoryitem/{york.id}/change/']").count() == 1
    assert moved.locator(f"a[href$='/memoryitem/{leeds.id}/change/']").count() == 1
    assert "INVALIDATE" in moved.inner_text() and "ADD" in moved.inner_text()
    # ... and the request to forget shows its DELETE, linked to the memory that went.
    forgotten = MemoryItem.objects.get(tenant=tenant_a, text=FORGOTTEN_TURN)
    request = rows.nth(4)
    assert "DELETE" in request.inner_text()
    assert request.locator(f"a[href$='/memoryitem/{forgotten.id}/change/']").count() == 1
    assert page.locator("table.job-episodes a").count() >= 1  # the episode, once, for the whole job

    # Redaction only where something was forgotten: the turn that said it and the request; not elsewhere.
    assert "Manchester" not in page.locator("#content").inner_text()
    assert FORGOTTEN_TURN in rows.nth(2).inner_text() and FORGOTTEN_TURN not in rows.nth(0).inner_text()
    assert FORGOTTEN_TURN not in rows.nth(3).inner_text()

    counts = page.locator("table.job-counts")
    assert counts.count() == 1 and "{" not in page.locator(".field-counts_table").inner_text()
    assert "INVALIDATE" in counts.inner_text() and "DELETE" in counts.inner_text()
    page.goto(f"{live_server.url}/admin/memories/conversationjob/")
    shot(page, "pages-job-list")
    assert page.locator("h1").inner_text() == "Conversation jobs"
    assert "{" not in page.locator("#result_list").inner_text()


def test_chinese_memories_and_traits_fit_a_laptop_and_the_dashboard_leads_to_the_queue(
        page, live_server, operator, tenant_a, transactional_db):
    from memories.ingestion import conversation_job_create
    from memories.writing import MemorySpec, memory_create
    from traits.services import trait_create

    conversation_job_create(tenant=tenant_a, user_id="xiaolin", session_id="s1", messages=[
        {"role": "user", "content": "我叫小林，住在杭州。"}, {"role": "user", "content": "我可能会去学陶艺。"}])
    memories = [memory_create(tenant=tenant_a, spec=MemorySpec(user_id="xiaolin", text=text), actor="test").memory
                for text in XIAOLIN]
    trait_create(tenant=tenant_a, user_id="xiaolin", actor="test", subtype="behavior",
                 text="小林习惯在周末早上先运动再喝茶，工作日晚上常常因为跨时区会议而睡得很晚。",
                 evidence=[(memories[0], "A"), (memories[2], "B")])
    operator("rita", "reviewers", tenant=tenant_a)
    log_in(page, live_server, "rita")
    shot(page, "pages-dashboard")
    assert page.title().startswith("Review and audit")
    pending = page.locator("#pending-count a")
    assert pending.count() == 1 and "/admin/memories/candidate/" in pending.get_attribute("href")
    apps = page.locator("#content-main .app-memories")
    assert apps.bounding_box()["y"] < 768, "the app list starts below the first screen"

    page.goto(f"{live_server.url}/admin/memories/memoryitem/")
    shot(page, "pages-memory-list-chinese")
    assert page.locator("h1").inner_text() == "Memories" and page.title().startswith("Memories")
    listed = page.locator("#result_list tbody").inner_text()
    for text in XIAOLIN:
        assert text in listed, f"cut: {text}"
    assert fits(page) == []

    page.goto(f"{live_server.url}/admin/traits/trait/")
    shot(page, "pages-trait-list-chinese")
    assert "跨时区会议而睡得很晚" in page.locator("#result_list tbody").inner_text()
    assert fits(page) == []

    page.click("#result_list tbody a")
    assert "| Trait |" in page.title()
    page.goto(f"{live_server.url}/admin/memories/candidate/")
    assert page.locator("h1").inner_text() == "Review queue"
