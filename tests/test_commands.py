"""The operations commands on the sample files the project ships."""

import io
import json
import re
import uuid
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memories.models import ActiveEmbedding, Candidate, MemoryItem, MemorySource, MemoryVector, Tenant
from memories.porting import checkpoint_path, import_records, read_records
from memories.search import SearchQuery, memory_search
from memories.writing import MemorySpec, memory_create

SAMPLES = Path(__file__).parent / "samples"


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_memory_items_csv_is_mapped_field_by_field(db):
    output = run("import_memories", "--tenant", "old", "--source", "memory-items", "--file",
                 str(SAMPLES / "memory_items.csv"))
    assert "read 4, added 4" in output and "vectors kept 1, re-embedded 3" in output
    mei = MemoryItem.objects.get(text="Mei works as an architect in Taipei.")
    assert mei.memory_type == "profile" and mei.importance == 0.8 and mei.tags == ["work", "profile"]
    assert mei.data == {"city": "Taipei", "imported_id": "6f1c1e62-0000-4000-8000-000000000001"}
    assert mei.valid_at.isoformat().startswith("2024-03-01") and mei.session_id == "sess-1"
    assert MemorySource.objects.get(item=mei).session_id == "sess-1"
    assert MemoryItem.objects.get(text="Mei prefers oolong tea.").status == "archived"  # status 0
    kept = MemoryVector.objects.get(item=mei)
    assert kept.model == "hash-384"
    task = MemoryItem.objects.get(text__startswith="Mei must renew")
    assert MemoryVector.objects.get(item=task).dimensions == 384  # the 8-d vector was re-embedded, not stored
    assert MemoryItem.objects.filter(embedding_state="done").count() == 4
    again = run("import_memories", "--tenant", "old", "--source", "memory-items", "--file",
                str(SAMPLES / "memory_items.csv"))
    assert "added 0, unchanged 4" in again and MemoryItem.objects.count() == 4


def test_memory_items_straight_from_a_postgres_dsn(db):
    import psycopg

    name = f"import_src_{uuid.uuid4().hex[:8]}"
    admin_dsn = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
    try:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.fail(f"the machine's PostgreSQL 15 on 127.0.0.1:5432 is needed for this test: {exc}")
    try:
        with psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={name}") as conn:
            conn.execute("""CREATE TABLE memory_items (id uuid PRIMARY KEY, user_id varchar(64) NOT NULL,
                type varchar(16) NOT NULL, text text NOT NULL, data jsonb, importance real NOT NULL DEFAULT 0.5,
                tags text[] DEFAULT '{}', source_session_id varchar(64), dedupe_hash varchar(128),
                status smallint NOT NULL DEFAULT 1, created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now())""")
            conn.execute("""CREATE TABLE memory_vector_store (embedding_id uuid PRIMARY KEY,
                item_id uuid NOT NULL REFERENCES memory_items(id) ON DELETE CASCADE, embedding jsonb NOT NULL,
                text text NOT NULL, metadata jsonb NOT NULL DEFAULT '{}', created_at timestamptz DEFAULT now())""")
            first, second = uuid.uuid4(), uuid.uuid4()
            conn.execute("INSERT INTO memory_items (id, user_id, type, text, importance, tags, status) VALUES "
                         "(%s, 'u-9', 'FACT', 'Ada keeps bees.', 0.7, ARRAY['hobby'], 1), "
                         "(%s, 'u-9', 'PROFILE', 'Ada lives in Ghent.', 0.9, '{}', 1)", [first, second])
            conn.execute("INSERT INTO memory_vector_store (embedding_id, item_id, embedding, text) VALUES "
                         "(%s, %s, %s, 'Ada keeps bees.')", [uuid.uuid4(), first, json.dumps({"vector": [0.5] * 16})])
        output = run("import_memories", "--tenant", "pg", "--source", "memory-items", "--dsn",
                     f"host=127.0.0.1 port=5432 user=postgres dbname={name}")
        assert "read 2, added 2" in output and "re-embedded 2" in output
        bees = MemoryItem.objects.get(text="Ada keeps bees.")
        assert bees.tags == ["hobby"] and bees.importance == pytest.approx(0.7) and bees.user_id == "u-9"
        assert MemoryItem.objects.get(text="Ada lives in Ghent.").memory_type == "profile"
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_agent_memories_straight_from_a_dsn_with_a_pgvector_column(db):
    """The older agent_memories schema as it really is: embedding VECTOR(1536),
    read from a database on the embedded server (which has pgvector)."""
    import psycopg
    from django.db import connection

    server = connection.settings_dict
    base = f"host={server['HOST']} port={server['PORT']} user={server['USER']}"
    name = f"agent_src_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{base} dbname=postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        with psycopg.connect(f"{base} dbname={name}") as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute("""CREATE TABLE agent_memories (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                user_id integer NOT NULL, agent_id integer, thread_id uuid, memory_key varchar(255) NOT NULL UNIQUE,
                memory_type varchar(50), summary text, content text, content_metadata jsonb DEFAULT '{}',
                embedding vector(1536), created_at timestamp DEFAULT current_timestamp,
                is_active boolean DEFAULT true)""")
            conn.execute("""CREATE TABLE agent_memory_keywords (id serial PRIMARY KEY,
                memory_key varchar(255) NOT NULL REFERENCES agent_memories(memory_key) ON DELETE CASCADE,
                user_id integer NOT NULL, keyword varchar(255) NOT NULL, weight float DEFAULT 1.0,
                created_at timestamp DEFAULT current_timestamp)""")
            conn.execute("INSERT INTO agent_memories (user_id, agent_id, memory_key, memory_type, summary, content, "
                         "content_metadata, embedding, created_at, is_active) VALUES "
                         "(7, 3, 'k-tea', 'preference', 'Tea', 'Lena drinks green tea.', '{\"source\": \"chat\"}', "
                         "%s, '2024-05-01 08:00', true), "
                         "(7, 3, 'k-old', 'fact', 'Old flat', 'Lena lived in Graz.', '{}', NULL, '2024-05-02 08:00', "
                         "false)", ["[" + ",".join(["0.02"] * 1536) + "]"])
            conn.execute("INSERT INTO agent_memory_keywords (memory_key, user_id, keyword, weight) VALUES "
                         "('k-tea', 7, 'tea', 2.0), ('k-tea', 7, 'drinks', 0.5)")
        output = run("import_memories", "--tenant", "agents-pg", "--source", "agent-memories", "--dsn",
                     f"{base} dbname={name}")
        assert "read 2, added 2" in output and "re-embedded 2" in output  # 1536-d does not fit the active model
        tea = MemoryItem.objects.get(tenant__name="agents-pg", status="active")
        assert tea.text == "Tea\n\nLena drinks green tea." and tea.tags == ["tea", "drinks"]
        assert tea.user_id == "7" and tea.agent_id == "3" and tea.data["source"] == "chat"
        assert tea.data["keyword_weights"] == {"tea": 2.0, "drinks": 0.5}
        assert MemoryItem.objects.get(tenant__name="agents-pg", text__contains="Graz").status == "archived"
    finally:
        with psycopg.connect(f"{base} dbname=postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_agent_memories_with_keywords(db):
    output = run("import_memories", "--tenant", "agents", "--source", "agent-memories", "--file",
                 str(SAMPLES / "agent_memories.jsonl"))
    assert "added 2" in output and "re-embedded 2" in output  # 1536-d vectors do not fit the active model
    lena = MemoryItem.objects.get(user_id="7", status="active")
    assert lena.text == "Vegetarian\n\nLena has been vegetarian since 2019."
    assert lena.tags == ["vegetarian", "diet"] and lena.data["keyword_weights"] == {"vegetarian": 2.0, "diet": 0.5}
    assert lena.agent_id == "3" and lena.data["memory_key"] == "k-diet"
    assert MemoryItem.objects.get(text__contains="bakery").status == "archived"


def test_mem0_export(db):
    run("import_memories", "--tenant", "m0", "--source", "mem0", "--file", str(SAMPLES / "mem0_export.json"))
    cook = MemoryItem.objects.get(text="Likes to cook Italian food")
    assert cook.user_id == "sam" and cook.data["mem0_id"] == "m0-1" and cook.data["category"] == "food"
    assert cook.valid_at.isoformat() == "2024-06-01T19:00:00+00:00"
    assert MemoryItem.objects.get(text="Has a dog named Pixel").agent_id == "helper"


def test_export_then_import_restores_the_same_memories(db, tmp_path):
    tenant = Tenant.objects.create(name="source")
    memory_create(tenant=tenant, actor="t", spec=MemorySpec(
        user_id="ann", text="Ann climbs on Sundays.", memory_type="episodic", tags=["sport"], importance=0.7,
        data={"place": "gym"}, source_session_id="s-1", source_message_indices=[2, 3]))
    memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="ann", text="Ann is vegan."))
    memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="ben", text="Ben plays go."))
    path = tmp_path / "ann.jsonl"
    assert "exported 2 memories" in run("export_memories", "--tenant", "source", "--user", "ann",
                                        "--include-history", "--output", str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0]["history"][0]["event"] == "ADD"
    run("import_memories", "--tenant", "copy", "--source", "jsonl", "--file", str(path))

    def snapshot(name):
        return sorted((m.user_id, m.text, m.memory_type, tuple(m.tags), m.importance, m.data, m.valid_at,
                       tuple((s.session_id, tuple(s.message_indices)) for s in m.sources.all()))
                      for m in MemoryItem.objects.filter(tenant__name=name, user_id="ann"))

    assert snapshot("copy") == snapshot("source")


def test_export_reads_sources_per_chunk_not_per_memory(db, django_assert_max_num_queries):
    from memories.porting import export_rows
    from memories.writing import memory_create_batch

    tenant = Tenant.objects.create(name="many")
    memory_create_batch(tenant=tenant, actor="t", specs=[
        MemorySpec(user_id="ann", text=f"Ann note {i}.", source_session_id="s-1", source_message_indices=[i])
        for i in range(40)])
    with django_assert_max_num_queries(3):
        rows = list(export_rows(tenant=tenant))
    assert len(rows) == 40 and {tuple(r["sources"][0]["message_indices"]) for r in rows} == {(i,) for i in range(40)}


def test_an_interrupted_import_resumes_after_its_last_batch(db, tmp_path):
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"user_id": "u", "text": f"Memory {i}.", "memory_type": "fact"}) + "\n"
                            for i in range(25)))
    tenant = Tenant.objects.create(name="resume")
    checkpoint = checkpoint_path("resume", "jsonl", str(path.resolve()))
    batches = []

    def crash_after_two(report):
        batches.append(report.read)
        if len(batches) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_records(tenant=tenant, records=read_records("jsonl", path=path), actor="t", batch_size=10,
                       checkpoint=checkpoint, progress=crash_after_two)
    assert MemoryItem.objects.count() == 20 and checkpoint.exists()
    output = run("import_memories", "--tenant", "resume", "--source", "jsonl", "--file", str(path),
                 "--batch-size", "10")
    assert "added 5" in output and "skipped (already imported) 20" in output
    assert MemoryItem.objects.count() == 25 and not checkpoint.exists()


def test_a_bad_file_names_the_line_and_writes_nothing_of_that_batch(db):
    with pytest.raises(CommandError, match="line 3: the memory has no text"):
        run("import_memories", "--tenant", "bad", "--source", "jsonl", "--file", str(SAMPLES / "bad_memories.jsonl"))
    assert MemoryItem.objects.count() == 0
    dry = run("import_memories", "--tenant", "bad", "--source", "mem0", "--file", str(SAMPLES / "mem0_export.json"),
              "--dry-run")
    assert dry.startswith("dry run:") and MemoryItem.objects.count() == 0


def test_backfill_fills_what_is_missing(db):
    tenant = Tenant.objects.create(name="fill")
    memory = memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="u", text="Needs a vector.",
                                                                     session_id="s-7")).memory
    MemoryVector.objects.all().delete()
    MemoryItem.objects.update(search_vector=None, content_hash="0" * 64)
    assert "embeddings: missing 1" in run("backfill", "--what", "embeddings", "--dry-run")
    assert "filled 1 of 1" in run("backfill", "--what", "embeddings")
    assert MemoryVector.objects.filter(item=memory).exists()
    run("backfill", "--what", "hashes")
    run("backfill", "--what", "search-vectors")
    assert "filled 1 of 1" in run("backfill", "--what", "sources")
    memory.refresh_from_db()
    from memories.text import content_hash

    assert memory.content_hash == content_hash(memory.text) and memory.search_vector
    assert MemorySource.objects.get(item=memory).session_id == "s-7"
    assert memory_search(tenant=tenant, query=SearchQuery(query="vector", user_id="u", mode="keyword"))


def test_reembed_switches_models_without_an_empty_search(transactional_db):
    # Committed rows, as in production: a new model's HNSW index is created outside any open transaction.
    from memories.process_state import reset

    tenant = Tenant.objects.create(name="switch")
    for text in ("Nora grows tomatoes.", "Nora reads poetry.", "Nora fixes bikes."):
        memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="nora", text=text))
    query = SearchQuery(query="Nora grows tomatoes", user_id="nora", mode="semantic")
    try:
        from memories import maintenance

        with pytest.raises(maintenance.CoverageIncomplete, match="covers 0 of 3"):
            maintenance.activate_model(maintenance.spec_for_model("hash-128"))
        output = run("reembed", "--model", "hash-128")
        assert "3 memories embedded this run, coverage 3/3" in output
        assert set(MemoryVector.objects.values_list("model", flat=True)) == {"hash-384", "hash-128"}
        assert memory_search(tenant=tenant, query=query)  # still the old model, still answers
        run("reembed", "--model", "hash-128", "--activate")
        assert ActiveEmbedding.objects.get().model == "hash-128"
        found = memory_search(tenant=tenant, query=query)
        assert found and found[0].memory.text == "Nora grows tomatoes."
        assert "dropped 3 vectors" in run("reembed", "--model", "hash-128", "--drop-old")
        assert set(MemoryVector.objects.values_list("model", flat=True)) == {"hash-128"}
        assert memory_search(tenant=tenant, query=query)
    finally:
        ActiveEmbedding.objects.all().delete()
        reset()


def test_check_consistency_reports_and_repairs(db):
    tenant = Tenant.objects.create(name="check")
    memory = memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="u", text="Clean.")).memory
    assert "consistent" in run("check_consistency")
    MemoryItem.objects.filter(id=memory.id).update(content_hash="f" * 64, embedding_state="done")
    MemoryVector.objects.filter(item=memory).delete()
    report = run("check_consistency")
    assert "hash_mismatch: 1" in report and "embedded_without_vectors: 1" in report and "problems found" in report
    fixed = run("check_consistency", "--fix")
    assert "fixed hash_mismatch: 1" in fixed and "fixed embedded_without_vectors: 1" in fixed
    assert MemoryItem.objects.get(id=memory.id).embedding_state == "pending"


def test_check_consistency_rebuilds_drifted_keyword_statistics(db):
    from django.db import connection

    tenant = Tenant.objects.create(name="check-stats")
    memory_create(tenant=tenant, actor="t", spec=MemorySpec(user_id="u", text="Nora grows tomatoes."))
    assert "consistent" in run("check_consistency")

    def kept():
        with connection.cursor() as cursor:
            cursor.execute("SELECT lexeme, documents FROM memory_user_term_stats WHERE tenant_id = %s", [tenant.id])
            return dict(cursor.fetchall())

    before = kept()
    with connection.cursor() as cursor:  # what a manual edit with the triggers off could leave
        cursor.execute("UPDATE memory_user_term_stats SET documents = 9 WHERE tenant_id = %s", [tenant.id])
        cursor.execute("INSERT INTO memory_user_term_stats VALUES (%s, 'u', 'ghost', 1)", [tenant.id])
    assert "keyword_statistics_drift: 1" in run("check_consistency")
    assert "fixed keyword_statistics_drift: 1" in run("check_consistency", "--fix")
    assert kept() == before and "ghost" not in before
    assert "consistent" in run("check_consistency")


def test_seed_demo_loads_a_demo_tenant_once(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = run("seed_demo")
    assert "3 conversations ingested" in first and "reviewer API key for tenant" in first and ": mk_" in first
    count = MemoryItem.objects.filter(tenant__name="demo").count()
    assert count >= 10 and Candidate.objects.filter(tenant__name="demo").exists()
    assert MemoryItem.objects.filter(tenant__name="demo", text__contains="烤鸭").exists()
    with django_capture_on_commit_callbacks(execute=True):
        second = run("seed_demo")
    assert "0 conversations ingested, 0 explicit memories added" in second
    assert MemoryItem.objects.filter(tenant__name="demo").count() == count


def test_progress_is_a_bar_in_a_terminal_and_counter_lines_in_a_log():
    import io

    from memories.management.progress import Progress

    log = io.StringIO()
    progress = Progress("backfill", total=1000, unit="memories", stream=log, every=0.0, bar=False)
    for done in (250, 500, 1000):
        progress.update(done)
    progress.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 4 and lines[0].startswith("backfill: 250/1000 memories (") and "s left" in lines[0]
    assert lines[-1].startswith("backfill: 1000/1000 memories")

    terminal = io.StringIO()
    bar = Progress("import", total=10, unit="records", stream=terminal, bar=True)
    bar.update(10, note="10 added")
    bar.close()
    assert "import" in terminal.getvalue() and "10/10" in terminal.getvalue() and "records/s" in terminal.getvalue()


def test_prepare_models_readies_the_search_embedder(db):
    out = io.StringIO()
    call_command("prepare_models", stdout=out)
    assert re.fullmatch(r"hash-384 ready in \d+\.\d s\n", out.getvalue())
