"""Conversations sent session by session without waiting: does every acknowledged job finish with its memories?

A chat app sends each session of a two-person conversation as it ends, one `POST /conversations` after
another, never waiting for the previous job (both speakers as participants, the conversation as the
group). Jobs of the same people then run side by side in several processes: `make run`'s gunicorn
workers with their in-process background threads (`--topology run`, Celery eager), or `make up`'s web
and Celery worker on RabbitMQ (`--topology up`). Issue 51: this replay lost a fifth of its jobs to
deadlocks (`failed`, never retried) a round ago.

Workloads:
- `locomo` (default when ../shared/data is beside the clone): LoCoMo's dev conversations, each replayed
  `--copies` times as separate groups (all sessions of all copies sent at once, one client thread per
  copy). After the jobs: the share of questions whose evidence turn reaches the `/context` block at
  2,000 characters (as `make bench-context-evidence` scores it).
- `synthetic`: overlapping group conversations written here: people P0..Pn, each in two groups (P0+P1,
  P1+P2, ...), the first speaker alternating session by session, every session with one new fact per
  speaker (checked afterwards: a job "finished with its memories" when each is stored), a correction of
  an earlier session, and a statement repeated from the one before. Each session is sent by both
  speakers' apps (`user_id` = the speaker), so a job for A and B and a job for B and A run together.

Each code (this checkout, and `--baseline`, default the round's starting commit, from a git worktree)
runs the same workload on its own tenant, interleaved round by round; the table gives jobs sent, done,
failed (by cause), retried, jobs per second until the last finished, and memories missing.

    make bench-replay                                              # LoCoMo dev, make run, vs the baseline
    make bench-replay BENCH_ARGS="--topology up --copies 2"
    make bench-replay BENCH_ARGS="--workload synthetic --baseline ''"   # what the test in make test runs
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import random
import re
import sys
import threading
import time
import uuid
from pathlib import Path

from common import ROOT, baseline_checkout, gunicorn_server, print_table, setup_django
from locomo import DEFAULT_DATA

BASELINE = "b36e758"  # the code before issue 51 (one lock order, transient failures retried)
EVIDENCE_BUDGET = 2000
UNFINISHED = ("queued", "running", "retrying")

# ----------------------------------------------------------------------------- workloads

CITIES = ["Lisbon", "Oslo", "Kyoto", "Quito", "Tallinn", "Hobart", "Cusco", "Bergen", "Porto", "Ghent", "Split",
          "Nara", "Cork", "Bled", "Lucca", "Sintra", "Arles", "Bruges", "Tartu", "Kotor"]
HOBBIES = ["pottery", "archery", "fencing", "rowing", "juggling", "origami", "birdwatching", "calligraphy",
           "sailing", "knitting", "beekeeping", "bouldering", "woodcarving", "salsa dancing", "stargazing"]
ZH_CITIES = ["成都", "大理", "青岛", "厦门", "西安", "苏州", "桂林", "拉萨", "长沙", "昆明"]


def synthetic_workload(people: int, sessions: int, seed: int = 7) -> list[dict]:
    """Overlapping two-person groups (P0+P1, P1+P2, ..., P(n-1)+P0): a person is in two groups, so the
    jobs of different groups share users. Each session: the first speaker alternates; each speaker says
    one new fact (the marker this checks for), repeats one from the session before, and from the third
    session on corrects an earlier one. Every fourth group speaks Chinese."""
    rng = random.Random(seed)
    groups = []
    for g in range(people):
        a, b = f"p{g}", f"p{(g + 1) % people}"
        names = {a: f"Person{g}", b: f"Person{(g + 1) % people}"}
        chinese = g % 4 == 3
        said: dict[str, list[str]] = {a: [], b: []}
        out_sessions = []
        for s in range(sessions):
            order = [a, b] if s % 2 == 0 else [b, a]
            messages, markers = [], []
            for speaker in order:
                if chinese:
                    city = ZH_CITIES[(g * sessions + s + len(messages)) % len(ZH_CITIES)]
                    marker = f"{city}{g}{s}{speaker}"
                    fact = f"我上周去了{marker}，那里的小吃很好吃。"
                    repeat = said[speaker][-1] if said[speaker] else "我平时早上喝咖啡。"
                    moved = ZH_CITIES[(s + g) % len(ZH_CITIES)]
                    correction = f"其实我已经搬到{moved}住了。" if s >= 2 else "我喜欢爬山。"
                else:
                    hobby = rng.choice(HOBBIES)
                    marker = f"{CITIES[(g * sessions + s) % len(CITIES)]}{g}x{s}{speaker}"
                    fact = f"I started {hobby} classes in {marker} last week."
                    repeat = said[speaker][-1] if said[speaker] else "I drink coffee every morning."
                    correction = (f"Actually I moved to {CITIES[(s + g + 3) % len(CITIES)]} last month, "
                                  "not where I said before." if s >= 2 else "I love hiking on weekends.")
                said[speaker].append(fact)
                markers.append((speaker, marker))
                for text in (fact, repeat, correction):
                    messages.append({"role": "user", "name": names[speaker], "content": text})
            out_sessions.append({"session": f"s{s}", "messages": messages, "markers": markers, "dia": []})
        groups.append({"group": f"g{g}", "users": {names[a]: a, names[b]: b}, "sessions": out_sessions,
                       "senders": [a, b]})
    return groups


def locomo_workload(path: Path, copies: int) -> list[dict]:
    from context_evidence import session_messages

    samples = json.loads(path.read_text())
    groups = []
    for copy in range(copies):
        for sample in samples:
            conv = sample["conversation"]
            group = f"{sample['sample_id']}-{copy}"
            users = {conv["speaker_a"]: f"{group}-a", conv["speaker_b"]: f"{group}-b"}
            out_sessions = [{"session": session, "messages": messages, "markers": [],
                             "dia": [t["dia_id"] for t in turns]}
                            for session, turns, messages in session_messages(sample)]
            groups.append({"group": group, "users": users, "sessions": out_sessions,
                           "senders": [users[conv["speaker_a"]]], "sample": sample})
    return groups


# ----------------------------------------------------------------------------- sending


def post(port: int, key: str, path: str, body: dict, *, patience: float = 600) -> tuple[int, dict]:
    """One request; a 429 (a full background queue) is sent again after its Retry-After, as a client does."""
    deadline = time.monotonic() + patience
    while True:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            conn.request("POST", f"/api/v1/{path}", json.dumps(body),
                         {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            response = conn.getresponse()
            raw = response.read()
            wait = float(response.getheader("Retry-After") or 1)
        finally:
            conn.close()
        if response.status != 429 or time.monotonic() + wait > deadline:
            return response.status, (json.loads(raw) if raw else {})
        time.sleep(wait)


def send_group(port: int, key: str, group: dict, sent: list, refused: list, lock: threading.Lock) -> None:
    """Every session of one group, one POST after another, as fast as the server answers; each sender
    (the app of each speaker) posts the session under its own user id."""
    for session in group["sessions"]:
        for sender in group["senders"]:
            status, body = post(port, key, "conversations", {
                "user_id": sender, "session_id": f"{group['group']}-{session['session']}-{sender}",
                "group_id": group["group"], "participants": group["users"], "messages": session["messages"]})
            with lock:
                if status == 202:
                    sent.append((body["job_id"], group, session))
                else:
                    refused.append(f"{status} {str(body)[:200]}")


def replay(port: int, key: str, tenant, groups: list[dict], timeout: float) -> dict:
    from memories.models import ConversationJob

    sent: list = []
    refused: list[str] = []
    lock = threading.Lock()
    started = time.monotonic()
    threads = [threading.Thread(target=send_group, args=(port, key, g, sent, refused, lock)) for g in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    posted = time.monotonic() - started
    deadline = started + timeout
    jobs = ConversationJob.objects.filter(tenant=tenant)
    while jobs.filter(status__in=UNFINISHED).exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    statuses = dict.fromkeys(("done", "failed", *UNFINISHED), 0)
    causes: dict[str, int] = {}
    attempts_over_one = 0
    for status, error, attempts in jobs.values_list("status", "error", "attempts"):
        statuses[status] = statuses.get(status, 0) + 1
        attempts_over_one += attempts > 1
        if status == "failed":
            cause = re.split(r"[:\n]", error, maxsplit=1)[0] if error else "unknown"
            causes[cause] = causes.get(cause, 0) + 1
    return {"sent": sent, "refused": refused, "statuses": statuses, "causes": causes, "posted s": posted,
            "elapsed": elapsed, "rerun": attempts_over_one}


def missing_markers(tenant, sent: list) -> int:
    """Session markers (a new fact per speaker) with no memory of that speaker saying it."""
    from memories.models import MemoryItem

    missing = 0
    for session in {(g["group"], s["session"]): s for _, g, s in sent}.values():
        for speaker, marker in session["markers"]:
            if not MemoryItem.objects.filter(tenant=tenant, user_id=speaker, text__contains=marker).exists():
                missing += 1
    return missing


def evidence_share(port: int, key: str, tenant, sent: list) -> float | None:
    """LoCoMo: the share of questions whose evidence turn reaches the /context block (context_evidence)."""
    from context_evidence import carried
    from locomo import questions

    from memories.models import MemorySource

    dia_of: dict[tuple[str, int], str] = {}
    turn_text: dict[str, dict[str, str]] = {}
    samples: dict[str, dict] = {}
    for job_id, group, session in sent:
        if "sample" not in group:
            return None
        samples[group["group"]] = group
        for index, dia in enumerate(session["dia"]):
            dia_of[(job_id, index)] = dia
            turn_text.setdefault(group["group"], {})[dia] = session["messages"][index]["content"]
    fact_turns: dict[str, set[str]] = {}
    for item_id, job_id, indices in MemorySource.objects.filter(item__tenant=tenant).values_list(
            "item_id", "job_id", "message_indices"):
        fact_turns.setdefault(str(item_id), set()).update(
            dia_of[(job_id, i)] for i in indices or [] if (job_id, i) in dia_of)
    hits = asked = 0
    for name, group in samples.items():
        for q in questions(group["sample"], set(turn_text[name])):
            status, body = post(port, key, "context", {"group_id": name, "query": q["question"],
                                                       "max_chars": EVIDENCE_BUDGET})
            asked += 1
            hits += status == 200 and carried(body["context"], list(body["sections"].values()), fact_turns,
                                              turn_text[name], q["evidence"])
    return hits / asked if asked else None


# ----------------------------------------------------------------------------- serving


@contextlib.contextmanager
def serve(topology: str, env: dict[str, str], tree: Path):
    if topology == "up":
        from load import SHIPPED, topology_up

        workers, threads = (int(x) for x in SHIPPED.split("x"))
        with topology_up(env, workers, threads, tree) as (port, _):
            yield port
    else:
        with gunicorn_server(env, workers=None, checkout=tree, as_make_run=True) as port:
            yield port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", choices=["locomo", "synthetic"],
                        default="locomo" if DEFAULT_DATA.exists() else "synthetic")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--copies", type=int, default=1, help="LoCoMo: times each conversation is replayed")
    parser.add_argument("--people", type=int, default=8, help="synthetic: people (and groups)")
    parser.add_argument("--sessions", type=int, default=6, help="synthetic: sessions per group")
    parser.add_argument("--topology", choices=["run", "up"], default="run")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--provider", default="local")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--no-evidence", action="store_true", help="LoCoMo: skip the /context evidence share")
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with ('': none)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    setup_django(database="memory_replay", provider=args.provider)
    from django.conf import settings

    from memories.keys import api_key_create
    from memories.models import Tenant

    groups = (locomo_workload(args.data, args.copies) if args.workload == "locomo"
              else synthetic_workload(args.people, args.sessions))
    env = {"EMBEDDED_DB_NAME": settings.DATABASES["default"]["NAME"], "EMBEDDING_PROVIDER": args.provider,
           "MEMORY_VAR_DIR": str(settings.VAR_DIR), "TENANT_MAX_PENDING_JOBS": "100000",
           "EXTRACTION_PROVIDER": "rules", "CONVERSATION_EPISODES": "true",
           # Every job in the background, as LoCoMo's long sessions run: the client never waits for one.
           "CONVERSATION_SYNC_CHARS": "0"}
    rows = []
    with contextlib.ExitStack() as stack:
        codes = [("this checkout", ROOT)]
        if args.baseline:
            codes.insert(0, (f"baseline ({args.baseline})", stack.enter_context(baseline_checkout(args.baseline))))
        for round_number in range(args.rounds):
            for label, tree in (codes if round_number % 2 == 0 else codes[::-1]):
                tenant = Tenant.objects.create(name=f"replay-{uuid.uuid4().hex[:8]}")
                key = api_key_create(tenant_name=tenant.name).raw_key
                with serve(args.topology, env, tree) as port:
                    result = replay(port, key, tenant, groups, args.timeout)
                    share = None if args.no_evidence else evidence_share(port, key, tenant, result["sent"])
                statuses = result["statuses"]
                row = {"round": round_number + 1, "code": label, "jobs sent": len(result["sent"]),
                       "refused": len(result["refused"]), "done": statuses["done"], "failed": statuses["failed"],
                       "unfinished": sum(statuses[s] for s in UNFINISHED), "run again": result["rerun"],
                       "jobs/s": len(result["sent"]) / result["elapsed"],
                       "missing facts": missing_markers(tenant, result["sent"]),
                       "evidence@2000": share if share is not None else "",
                       "failure causes": ", ".join(f"{c} x{n}" for c, n in sorted(result["causes"].items())) or "-"}
                rows.append(row)
                if result["refused"]:
                    print(f"refused: {result['refused'][:3]}", file=sys.stderr)
                print(f"round {round_number + 1} {label}: {row['done']}/{row['jobs sent']} done, "
                      f"{row['failed']} failed, {row['jobs/s']:.2f} jobs/s", file=sys.stderr, flush=True)
    print_table(f"Sessions sent without waiting ({args.workload}, {len(groups)} groups, `make {args.topology}`'s "
                f"processes)", rows, ["round", "code", "jobs sent", "refused", "done", "failed", "unfinished",
                                      "run again", "jobs/s", "missing facts", "evidence@2000", "failure causes"])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    mine = [r for r in rows if r["code"] == "this checkout"]
    print(f"\nsummary: jobs={sum(r['jobs sent'] for r in mine)} done={sum(r['done'] for r in mine)} "
          f"failed={sum(r['failed'] for r in mine)} unfinished={sum(r['unfinished'] for r in mine)} "
          f"refused={sum(r['refused'] for r in mine)} missing={sum(r['missing facts'] for r in mine)} "
          f"jobs_per_s={sum(r['jobs/s'] for r in mine) / len(mine):.2f}")


if __name__ == "__main__":
    main()
