from django.core.management.base import BaseCommand
from django.db import transaction

from memories.ingestion import conversation_job_create
from memories.keys import api_key_create
from memories.models import ConversationJob, Tenant
from memories.writing import MemorySpec, memory_create_batch

CONVERSATIONS = {
    "alice": ("Alice", [
        "Hi! I'm planning my week.",
        "I work as a pediatric nurse at the city hospital.",
        "I prefer short, direct answers, please.",
        "My wife Sarah loves hiking, we went to the Alps last summer.",
        "I'm allergic to peanuts.",
        "I think I might try pottery classes.",
        "I'm going to run the Berlin marathon in September.",
    ]),
    "bob": ("Bob", [
        "Hello there.",
        "I live in Lisbon.",
        "I moved to Porto last month.",
        "I love jazz records and vinyl.",
        "I usually work late before a deadline.",
        "My email is bob@example.com, remember it.",
    ]),
    "xiaowang": ("小王", [
        "你好！",
        "我在腾讯工作。",
        "我喜欢在北京吃烤鸭。",
        "我打算明年去日本旅行。",
        "我的女儿今年上小学了。",
    ]),
}


class Command(BaseCommand):
    help = ("Load a small demo tenant: three users with English and Chinese conversations, an explicit memory "
            "or two, and review candidates. Prints an API key for it. Running it again adds nothing new.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", default="demo")

    def handle(self, *args, tenant, **options):
        tenant_row, created = Tenant.objects.get_or_create(name=tenant)
        jobs = 0
        for user_id, (name, turns) in CONVERSATIONS.items():
            session = f"demo-{user_id}"
            if ConversationJob.objects.filter(tenant=tenant_row, session_id=session, status="done").exists():
                continue
            with transaction.atomic():
                conversation_job_create(tenant=tenant_row, user_id=user_id, session_id=session, messages=[
                    {"role": "user", "name": name, "content": turn} for turn in turns])
            jobs += 1
        results = memory_create_batch(tenant=tenant_row, actor="seed_demo", count_for_reflection=False, specs=[
            MemorySpec(user_id="alice", text="Alice's favourite tea is sencha.", tags=["food"], importance=0.6),
            MemorySpec(user_id="bob", text="Bob is learning the trumpet.", tags=["music"], importance=0.5),
        ])
        added = sum(r.operation == "ADD" for r in results)
        issued = api_key_create(tenant_name=tenant, name="demo", role="reviewer")
        self.stdout.write(f"tenant {tenant}: {jobs} conversations ingested, {added} explicit memories added")
        self.stdout.write(f"reviewer API key for tenant {tenant} (shown once; it also works the review queue): "
                          f"{issued.raw_key}")
