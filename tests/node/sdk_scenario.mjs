// The TypeScript SDK (clients/typescript, built) against the live service: every endpoint once,
// the error classes, retries, cursor pages, and the CommonJS build. Run by tests/test_typescript_sdk.py:
// `node sdk_scenario.mjs api` or `node sdk_scenario.mjs ratelimit`.
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { assert, check, env, rejection, report } from "./checks.mjs";

const sdk = await import("../../clients/typescript/dist/esm/index.js");
const {
  AuthenticationError, Conflict, MemoryClient, NotFound, PermissionDenied, QuotaExceeded, RateLimited, ServerError,
  ServiceUnavailable, TransportError, ValidationError, errorFor, retryDelay, retryAfterSeconds,
} = sdk;

const url = env("MEMORY_URL");

async function pure() {
  await check("each error answer has its class", () => {
    const table = [
      [400, { text: ["too long"] }, ValidationError], [413, { body: ["too large"] }, ValidationError],
      [401, { detail: "bad key" }, AuthenticationError], [403, { detail: "no" }, PermissionDenied],
      [403, { detail: "full", quota: "memories", limit: 1, used: 1 }, QuotaExceeded],
      [404, { detail: "memory x not found" }, NotFound], [409, { detail: "stale", current_version: 3 }, Conflict],
      [429, { detail: "slow down" }, RateLimited], [503, { detail: "database unavailable" }, ServiceUnavailable],
      [500, "<html>", ServerError], [501, { detail: "no" }, sdk.NotSupported],
    ];
    for (const [status, body, expected] of table) {
      const error = errorFor(status, body, { retryAfter: 2, requestId: "r1" });
      assert.equal(error.constructor, expected, `${status} ${JSON.stringify(body)}`);
      assert.ok(error instanceof sdk.MemoryServiceError && error instanceof Error);
      assert.equal(error.status, status);
      assert.equal(error.requestId, "r1");
      assert.equal(error.name, expected.name);
    }
    assert.equal(errorFor(429, {}, { retryAfter: 2 }).retryAfter, 2);
    assert.equal(errorFor(409, { current_version: 3 }).currentVersion, 3);
    assert.equal(errorFor(403, { quota: "memories" }).quota, "memories");
    assert.deepEqual(errorFor(400, { text: ["too long"], tags: "bad", detail: "x" }).fields,
      { text: ["too long"], tags: ["bad"] });
    assert.equal(errorFor(400, { text: ["too long", "not blank"], tags: "bad" }).message,
      "400: text: too long not blank; tags: bad");
    assert.equal(errorFor(404, { detail: "memory x not found" }).message, "404: memory x not found");
    assert.equal(errorFor(500, "<html>").message, "500: <html>");
  });

  await check("retry delays", () => {
    const policy = { maxRetries: 3 };
    const half = () => 0; // the jitter's low end: half the backoff
    assert.equal(retryDelay(policy, 0, 429, 2), 2000); // the service's Retry-After wins
    assert.equal(retryDelay(policy, 0, 503, 120), 30_000); // ... up to maxDelayMs
    assert.equal(retryDelay(policy, 2, 503, undefined, half), 1000); // else backoff: 500 * 2**2 * [0.5, 1)
    assert.ok(retryDelay(policy, 2, 503, undefined) >= 1000 && retryDelay(policy, 2, 503, undefined) < 2000);
    assert.equal(retryDelay(policy, 3, 429, 1), null); // retries exhausted
    assert.equal(retryDelay(policy, 0, 400, undefined), null); // a client error is never retried
    assert.equal(retryDelay(policy, 0, 500, undefined), null); // nor a server error: it may have written
    assert.equal(retryDelay(policy, 0, undefined, undefined, half), 250); // a refused connection is
    assert.equal(retryDelay({ maxRetries: 0 }, 0, 429, 1), null);
    assert.equal(retryAfterSeconds("3"), 3);
    assert.equal(retryAfterSeconds(null), undefined);
    assert.equal(retryAfterSeconds("Thu, 01 Jan 1970 00:00:10 GMT", 4000), 6);
  });
}

async function api() {
  const agent = new MemoryClient(url, { apiKey: env("AGENT_KEY") });
  let memoryId;

  await check("save, read and list with cursor pages", async () => {
    const saved = await agent.add("alice", "Alice's favourite tea is genmaicha.", { tags: ["tea"], importance: 0.8 });
    assert.equal(saved.operation, "ADD");
    assert.equal(saved.memory.version, 1);
    memoryId = saved.memory.id;
    const memory = await agent.get(memoryId);
    assert.equal(memory.text, "Alice's favourite tea is genmaicha.");
    assert.deepEqual(memory.tags, ["tea"]);
    const batch = await agent.addBatch([0, 1, 2, 3].map((n) => ({ user_id: "alice",
      text: `Alice visited museum number ${n}.`, data: { n } })));
    assert.deepEqual(batch.map((r) => r.operation), ["ADD", "ADD", "ADD", "ADD"]);
    const first = await agent.list({ user_id: "alice", page_size: 2 });
    assert.equal(first.results.length, 2);
    assert.ok(first.next);
    const second = await agent.nextPage(first);
    assert.equal(second.results.length, 2);
    const elsewhere = { ...first, next: first.next.replace(/^http:\/\/[^/]+/, "http://internal-host:9999") };
    assert.deepEqual((await agent.nextPage(elsewhere)).results, second.results); // the key stays on its origin
    const all = [];
    for await (const m of agent.iterMemories({ user_id: "alice", page_size: 2, include_data: true })) all.push(m);
    assert.equal(all.length, 5);
    assert.equal(new Set(all.map((m) => m.id)).size, 5);
    assert.deepEqual(all.find((m) => m.text.endsWith("number 2.")).data, { n: 2 });
  });

  await check("search with its filters and score parts", async () => {
    const found = await agent.search("genmaicha tea", { user_id: "alice", limit: 3, mode: "hybrid",
      memory_types: ["fact"], tags: ["tea"], min_score: 0 });
    const top = found.results[0];
    assert.equal(top.memory.id, memoryId);
    assert.equal(top.scores.relevance, 1);
    assert.notEqual(top.scores.keyword, null);
    for (const part of ["fusion", "recency", "importance", "stage", "semantic"]) {
      assert.equal(typeof top.scores[part], "number", part);
    }
    assert.deepEqual(found.degraded, []);
    const keyword = await agent.search("museum", { user_id: "alice", mode: "keyword", limit: 10 });
    assert.ok(keyword.results.length >= 4 && keyword.results.every((r) => r.memory.text.includes("museum")));
    const none = await agent.search("genmaicha", { user_id: "alice", tags: ["no-such-tag"] });
    assert.deepEqual(none.results, []);
    const bounded = await agent.search("genmaicha tea", { user_id: "alice", mode: "semantic", min_similarity: 0,
      start_time: "2000-01-01T00:00:00Z", end_time: new Date(Date.now() + 60_000).toISOString(),
      as_of: new Date().toISOString(), include_data: true });
    assert.equal(bounded.results[0].memory.id, memoryId);
    assert.equal(bounded.results[0].scores.keyword, null); // semantic only
    const before = await agent.search("genmaicha tea", { user_id: "alice", end_time: "2000-01-01T00:00:00Z" });
    assert.deepEqual(before.results, []);
    const elsewhere = await agent.search("genmaicha tea", { user_id: "alice", session_id: "no-such-session",
      agent_id: "no-such-agent", group_id: "no-such-group" });
    assert.ok(elsewhere.results.every((r) => r.memory.session_id === "no-such-session" || r.memory.session_id === ""));
    // The seeds' controls: a keyword list, a time range in days, the answer's matched keywords, preview,
    // original turns (none for a memory saved as given), total and groups.
    const keyed = await agent.search("what does she drink?", { user_id: "alice", mode: "keyword",
      keywords: ["genmaicha"], time_range_days: 30, include_turns: true });
    assert.equal(keyed.results[0].memory.id, memoryId);
    assert.deepEqual(keyed.results[0].matched_keywords, ["genmaicha"]);
    assert.ok(keyed.results[0].preview.length > 0 && keyed.results[0].preview.length <= 200);
    assert.deepEqual(keyed.results[0].turns, []);
    assert.equal(keyed.results[0].turns_total, 0);
    assert.equal(keyed.total_count, keyed.results.length);
    assert.deepEqual(keyed.groups.map((g) => g.group_id), [""]);
    await assert.rejects(agent.search("tea", { user_id: "alice", keywords: ["tea"], mode: "semantic" }),
      (error) => error instanceof ValidationError && "keywords" in error.fields);
  });

  await check("update, conflict and history", async () => {
    const updated = await agent.update(memoryId, { importance: 0.3, expected_version: 1 });
    assert.equal(updated.operation, "UPDATE");
    assert.equal(updated.memory.version, 2);
    const stale = await rejection(agent.update(memoryId, { importance: 0.9, expected_version: 1 }));
    assert.ok(stale instanceof Conflict, String(stale));
    assert.equal(stale.currentVersion, 2);
    const retexted = await agent.update(memoryId, { text: "Alice's favourite tea is sencha." });
    const events = [];
    for await (const event of agent.iterHistory(retexted.memory.id)) events.push(event.event);
    assert.deepEqual(events.slice(0, 2), ["ADD", "UPDATE"]);
    assert.ok(events.includes("SUPERSEDE"), events.join());
  });

  await check("conversations, jobs, session end and reflection", async () => {
    const job = await agent.addConversation("bob", "s1", [
      { role: "user", content: "I work as a nurse in Leeds." }, { role: "assistant", content: "Thanks for sharing." }]);
    assert.ok(job.job_id);
    const done = await agent.waitForJob(job.job_id);
    assert.equal(done.status, "done");
    assert.ok((done.counts.ADD ?? 0) >= 1, JSON.stringify(done.counts));
    const ended = await agent.endSession("s1", { user_id: "bob" });
    assert.equal(ended.trigger, "session_end");
    assert.equal(ended.session_id, "s1");
    assert.equal((await agent.waitForReflection(ended.id)).status, "completed");
    assert.equal((await agent.endSession("s1", { user_id: "bob" })).id, ended.id); // once per session
    const cycle = await agent.reflect("alice");
    assert.equal((await agent.waitForReflection(cycle.id)).status, "completed");
    const traits = await agent.traits("alice");
    assert.deepEqual(Object.keys(traits).sort(), ["behavior", "core", "preference"]);
    assert.deepEqual(Object.values(await agent.traits("alice", { stage: "core,established" })).flat(), []);
    assert.ok(await rejection(agent.trait("00000000-0000-0000-0000-000000000000")) instanceof NotFound);
    assert.ok(await rejection(agent.reflectionCycle(999999)) instanceof NotFound);
    await rejection(agent.retryJob(job.job_id)).then((error) => assert.ok(error instanceof ValidationError
      || error instanceof Conflict, `retrying a finished job: ${error}`));
  });

  await check("context block", async () => {
    const context = await agent.context("What does bob do for a living?", { user_id: "bob", max_chars: 2000,
      format: "markdown" });
    assert.ok(context.context.includes("nurse"), context.context);
    assert.ok(context.memories.length >= 1);
    assert.ok(Array.isArray(context.sections.memories));
  });

  await check("the people in a user's life", async () => {
    const job = await agent.addConversation("hana", "s1", [{ role: "user", content: "My mum Sheila lives in Leeds." }]);
    assert.equal((await agent.waitForJob(job.job_id)).status, "done");
    const people = await agent.people("hana");
    assert.equal(people[0].kind, "user");
    const mum = people.find((p) => p.relation === "mother");
    assert.ok(mum, JSON.stringify(people));
    assert.equal(mum.name, "Sheila");
    assert.equal(mum.relation_word, "mum");
    assert.deepEqual(mum.edges.filter((e) => e.predicate === "lives_in").map((e) => e.value), ["Leeds"]);
    const persons = await agent.people("hana", { kind: "person" });
    assert.ok(persons.every((p) => p.kind === "person") && persons.some((p) => p.id === mum.id));
    const page = await agent.person("hana", mum.id);
    assert.equal(page.id, mum.id);
    assert.equal(page.status, "active");
    assert.deepEqual(page.edges_history.filter((e) => e.predicate === "lives_in").map((e) => [e.value, e.invalid_at]),
      [["Leeds", null]]);
    const about = (await agent.list({ user_id: "hana" })).results.filter((m) => m.subject?.id === mum.id);
    assert.ok(about.length >= 1 && about[0].text.includes("Leeds"), JSON.stringify(about));
    const badKind = await rejection(agent.people("hana", { kind: "robot" }));
    assert.ok(badKind instanceof ValidationError && "kind" in badKind.fields, String(badKind));
    assert.ok(await rejection(agent.person("hana", "00000000-0000-0000-0000-000000000000")) instanceof NotFound);
    assert.ok(await rejection(agent.person("someone-else", mum.id)) instanceof NotFound);
    const other = new MemoryClient(url, { apiKey: env("OTHER_KEY") });
    assert.deepEqual(await other.people("hana"), []);
    assert.ok(await rejection(other.person("hana", mum.id)) instanceof NotFound);
  });

  await check("merge, delete and erase", async () => {
    const a = await agent.add("carol", "Carol has a dog.");
    const b = await agent.add("carol", "Carol's dog is called Rex.");
    const merged = await agent.merge([a.memory.id, b.memory.id], { text: "Carol has a dog called Rex." });
    assert.equal(merged.text, "Carol has a dog called Rex.");
    assert.equal((await agent.delete(merged.id)).operation, "DELETE");
    const erased = await agent.eraseUser("carol");
    assert.equal(erased.counts.memories, 3);
    assert.deepEqual((await agent.list({ user_id: "carol" })).results, []);
  });

  await check("errors say what to fix", async () => {
    const invalid = await rejection(agent.add("alice", ""));
    assert.ok(invalid instanceof ValidationError, String(invalid));
    assert.ok("text" in invalid.fields, JSON.stringify(invalid.body));
    assert.match(invalid.message, /^400: text: /); // says what to fix
    assert.ok(await rejection(agent.get("00000000-0000-0000-0000-000000000000")) instanceof NotFound);
    assert.ok(await rejection(agent.reviewQueue()) instanceof PermissionDenied); // agent keys don't see the queue
    const typo = await rejection(agent.add("alice", "x", { colour: "red" }));
    assert.ok(typo instanceof ValidationError && "colour" in typo.fields, JSON.stringify(typo.body));
    const wrongKey = new MemoryClient(url, { apiKey: "mk_wrong" });
    assert.ok(await rejection(wrongKey.get(memoryId)) instanceof AuthenticationError);
    assert.throws(() => new MemoryClient(url, { apiKey: "" }), /API key is required/);
    assert.throws(() => new MemoryClient("127.0.0.1:8000", { apiKey: "k" }), /not a service URL/);
  });

  await check("health and readiness", async () => {
    assert.ok(["ok", "degraded"].includes((await agent.health()).status));
    assert.equal((await agent.ready()).ready, true);
  });

  await check("reviewers work the queue", async () => {
    const job = await agent.addConversation("dan", "s1", [{ role: "user", content: "My email is dan@example.com." },
      { role: "user", content: "I might take up pottery." }]);
    await agent.waitForJob(job.job_id);
    const reviewer = new MemoryClient(url, { apiKey: env("REVIEWER_KEY") });
    const waiting = await reviewer.reviewQueue();
    const email = waiting.find((c) => c.text.includes("dan@example.com"));
    assert.ok(email, `the email waits for review: ${JSON.stringify(waiting.map((c) => c.text))}`);
    const bare = await rejection(reviewer.approve(email.id));
    assert.ok(bare instanceof ValidationError && "text" in bare.fields, String(bare));
    assert.match(bare.message, /approve it redacted/); // the error says how to keep it
    const redacted = await reviewer.approve(email.id, { sensitive: "redacted" });
    assert.equal(redacted.status, "approved");
    const kept = await agent.get(redacted.result_memory);
    assert.ok(!kept.text.includes("dan@example.com"), kept.text);
    for (const other of waiting.filter((c) => c.id !== email.id)) {
      assert.equal((await reviewer.reject(other.id, { reason: "not needed" })).status, "rejected");
    }
    assert.deepEqual(await reviewer.reviewQueue(), []);
  });

  await check("tenants stay apart, and the /api/v1 form of the URL works", async () => {
    const other = new MemoryClient(`${url}/api/v1/`, { apiKey: env("OTHER_KEY") });
    assert.ok(await rejection(other.get(memoryId)) instanceof NotFound);
    assert.deepEqual((await other.search("tea", { user_id: "alice" })).results, []);
  });

  await check("no server is a transport error after the retries", async () => {
    const closed = await new Promise((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address();
        server.close(() => resolve(port));
      });
    });
    const nobody = new MemoryClient(`http://127.0.0.1:${closed}`, { apiKey: "mk_x", timeoutMs: 2000,
      retry: { maxRetries: 1, baseDelayMs: 10 } });
    const error = await rejection(nobody.health());
    assert.ok(error instanceof TransportError, String(error));
    assert.match(error.message, /ECONNREFUSED/);
  });

  await check("the CommonJS build is the same client", async () => {
    const require = createRequire(import.meta.url);
    const cjs = require("../../clients/typescript/dist/cjs/index.js");
    const client = new cjs.MemoryClient(url, { apiKey: env("AGENT_KEY") });
    assert.equal((await client.get(memoryId)).id, memoryId);
    assert.ok((await rejection(client.get("00000000-0000-0000-0000-000000000000"))) instanceof cjs.NotFound);
  });
}

async function ratelimit() {
  // The service allows 2 requests a second for this key (the pytest side sets it).
  await check("429 is retried after the wait the service names", async () => {
    const patient = new MemoryClient(url, { apiKey: env("AGENT_KEY"), retry: { maxRetries: 5, maxDelayMs: 2000 } });
    const started = Date.now();
    for (let n = 0; n < 5; n++) await patient.add("erin", `Erin note ${n}.`);
    assert.ok(Date.now() - started >= 1000, "some calls waited for the next window");
  });
  await check("then RateLimited carries retryAfter", async () => {
    const impatient = new MemoryClient(url, { apiKey: env("AGENT_KEY"), retry: { maxRetries: 0 } });
    let refused;
    for (let n = 0; n < 5 && !refused; n++) {
      refused = await impatient.add("erin", `Erin other note ${n}.`).then(() => undefined, (error) => error);
    }
    assert.ok(refused instanceof RateLimited, String(refused));
    assert.ok(refused.retryAfter > 0 && refused.retryAfter <= 1, String(refused.retryAfter));
  });
}

const mode = process.argv[2] ?? "api";
if (mode === "api") {
  await pure();
  await api();
} else if (mode === "ratelimit") {
  await ratelimit();
} else {
  throw new Error(`unknown mode ${mode}`);
}
report();
