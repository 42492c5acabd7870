// Mem0's npm client (mem0ai, its MemoryClient), unchanged, against the live service: every call it
// makes either works as on Mem0's platform or is a clear error naming what this service does not have.
// Run by tests/test_node_clients.py.
import { MemoryClient } from "mem0ai";
import { assert, check, env, rejection, report } from "./checks.mjs";

const host = env("MEMORY_URL");
const client = new MemoryClient({ apiKey: env("AGENT_KEY"), host });

await check("construction pings with the key", async () => {
  await client.ping();
  assert.match(String(client.organizationId), /^tenant-\d+$/);
  const wrong = new MemoryClient({ apiKey: "mk_not-a-key", host });
  const refused = await rejection(wrong.ping());
  assert.equal(refused.name, "AuthenticationError");
  assert.match(refused.message, /Invalid, revoked or expired API key/);
});

let verbatimId;

await check("add extracts, search finds with score on a 0-1 scale", async () => {
  const added = await client.add([
    { role: "user", content: "I'm allergic to peanuts." }, { role: "assistant", content: "Noted, no peanuts." },
    { role: "user", content: "I live in Lisbon with my partner Ana." }], { user_id: "alice", run_id: "trip" });
  assert.ok(added.results.length >= 2, JSON.stringify(added));
  assert.deepEqual(new Set(added.results.map((e) => e.event)), new Set(["ADD"]));
  const found = await client.search("Is she allergic to peanuts?", { filters: { user_id: "alice" }, top_k: 3 });
  const top = found.results[0];
  assert.match(top.memory.toLowerCase(), /peanut/);
  assert.ok(found.results.length >= 1 && found.results.length <= 3);
  assert.equal(top.score, 1); // the best hit; Mem0's users threshold on score
  assert.ok(found.results.every((r) => r.score >= 0 && r.score <= 1 && r.score === r.scores.relevance));
  assert.equal(top.runId, "trip"); // mem0ai answers camelCase
  assert.equal(top.userId, "alice");
  const strict = await client.search("peanuts", { filters: { user_id: "alice" }, threshold: 0.99 });
  assert.ok(strict.results.length < found.results.length + 5);
});

await check("verbatim add, get, update, history and delete", async () => {
  const verbatim = await client.add("Remember: the wifi password hint is 'blue door'.",
    { user_id: "alice", infer: false, metadata: { source: "note" } });
  verbatimId = verbatim.results[0].id;
  const got = await client.get(verbatimId);
  assert.equal(got.memory, "Remember: the wifi password hint is 'blue door'.");
  assert.deepEqual(got.metadata, { source: "note" });
  const updated = await client.update(verbatimId, { text: "The wifi password hint is 'red door'.",
    metadata: { source: "note", edited: true } });
  assert.equal(updated.memory, "The wifi password hint is 'red door'.");
  assert.equal(updated.version, 2);
  assert.equal((await client.get(verbatimId)).memory, updated.memory); // the old id leads to the newest version
  const history = await client.history(verbatimId);
  assert.deepEqual(history.map((h) => h.event), ["ADD", "UPDATE"]);
  assert.match(history[1].oldMemory, /'blue door'\.$/);
  assert.match(history[1].newMemory, /'red door'\.$/);
  assert.equal((await client.delete(verbatimId)).message, "Memory deleted successfully!");
  assert.deepEqual((await client.history(verbatimId)).map((h) => h.event), ["ADD", "UPDATE", "DELETE"]);
  const listed = await client.getAll({ filters: { user_id: "alice" } });
  assert.ok(listed.results.every((r) => r.id !== verbatimId));
});

await check("getAll filters and pages", async () => {
  await client.add(Array.from({ length: 7 }, (_, i) => ({ role: "user", content: `Note number ${i} for the planner.` })),
    { user_id: "bob", agent_id: "planner", run_id: "r1", infer: false });
  await client.add([{ role: "user", content: "A note only the coach saved." }],
    { user_id: "bob", agent_id: "coach", run_id: "r2", infer: false });
  const byAgent = await client.search("note", { filters: { AND: [{ user_id: "bob" }, { agent_id: "coach" }] },
    top_k: 20 });
  assert.deepEqual(new Set(byAgent.results.map((r) => r.agentId)), new Set(["coach"]));
  const byRun = await client.getAll({ filters: { user_id: "bob", run_id: "r1" }, page_size: 100 });
  assert.equal(byRun.count, 7);
  const seen = [];
  for (let page = 1; ; page++) {
    const answer = await client.getAll({ filters: { user_id: "bob" }, page, pageSize: 3 });
    seen.push(...answer.results.map((r) => r.id));
    if (!answer.next) break;
  }
  assert.equal(seen.length, 8);
  assert.equal(new Set(seen).size, 8);
  const dated = await client.getAll({ filters: { AND: [{ user_id: "bob" }, { created_at: { gte: "2000-01-01" } }] } });
  assert.equal(dated.count, 8);
});

await check("batch update and delete, users", async () => {
  const added = await client.add([0, 1, 2].map((i) => ({ role: "user", content: `Fact ${i} about carol.` })),
    { user_id: "carol", infer: false });
  const ids = added.results.map((r) => r.id);
  await client.batchUpdate([{ memoryId: ids[0], text: "Fact zero, corrected." },
    { memoryId: ids[1], text: "Fact one, corrected." }]);
  assert.equal((await client.get(ids[0])).memory, "Fact zero, corrected.");
  const partly = await rejection(client.batchUpdate([{ memoryId: ids[2], text: "changed?" },
    { memoryId: "00000000-0000-0000-0000-000000000000", text: "x" }]));
  assert.equal(partly.name, "MemoryNotFoundError"); // all or none: nothing of the batch is applied
  assert.equal((await client.get(ids[2])).version, 1);
  const deleted = await client.batchDelete([ids[2], ids[2]]); // named twice: one deletion
  assert.match(JSON.stringify(deleted), /deleted 1 memories/);
  const users = await client.users();
  assert.ok(users.results.some((u) => u.name === "carol" && u.totalMemories === 2), JSON.stringify(users));
});

await check("tenants stay apart", async () => {
  const other = new MemoryClient({ apiKey: env("OTHER_KEY"), host });
  assert.deepEqual((await other.users()).results, []);
  assert.equal((await other.getAll({ filters: { user_id: "carol" } })).count, 0);
  const hidden = await rejection(other.get((await client.getAll({ filters: { user_id: "carol" } })).results[0].id));
  assert.equal(hidden.name, "MemoryNotFoundError");
});

await check("deleteAll, deleteUsers and the deprecated deleteUser erase", async () => {
  assert.equal((await client.deleteAll({ user_id: "carol" })).message, "Memories deleted successfully!");
  assert.equal((await client.getAll({ filters: { user_id: "carol" } })).count, 0);
  await client.add("Dora keeps bees.", { user_id: "dora", infer: false });
  assert.equal((await client.deleteUsers({ userId: "dora" })).message, "Entity deleted successfully.");
  assert.equal((await client.getAll({ filters: { user_id: "dora" } })).count, 0);
  await client.add("Eve keeps goats.", { user_id: "eve", infer: false });
  const old = await client.deleteUser({ entity_id: "eve", entity_type: "user" });
  assert.equal(old.message, "Entity deleted successfully.");
  assert.equal((await client.getAll({ filters: { user_id: "eve" } })).count, 0);
});

await check("what this service does not have is a clear error, never a 500", async () => {
  const calls = {
    getProject: () => client.getProject({ fields: ["custom_instructions"] }),
    updateProject: () => client.updateProject({ custom_instructions: "only food" }),
    getWebhooks: () => client.getWebhooks({ projectId: "p" }),
    createWebhook: () => client.createWebhook({ name: "w", url: "https://example.com/hook", eventTypes: [] }),
    updateWebhook: () => client.updateWebhook({ webhookId: 1, name: "w" }),
    deleteWebhook: () => client.deleteWebhook({ webhookId: 1 }),
    feedback: () => client.feedback({ memoryId: verbatimId, feedback: "POSITIVE" }),
    getProfile: () => client.getProfile({ entityId: "alice" }),
    generateProfile: () => client.generateProfile({ entityId: "alice" }),
    getProfileSettings: () => client.getProfileSettings(),
    updateProfileSettings: () => client.updateProfileSettings({ enabled: true }),
    sampleProfiles: () => client.sampleProfiles({}),
    getProfileJob: () => client.getProfileJob("job-1"),
    createMemoryExport: () => client.createMemoryExport({ schema: {}, filters: { user_id: "alice" } }),
    getMemoryExport: () => client.getMemoryExport({ memoryExportId: "x" }),
    rerank: () => client.search("q", { filters: { user_id: "alice" }, rerank: true }),
    customInstructions: () => client.add("hi", { user_id: "alice", custom_instructions: "only food" }),
    agentOnly: () => client.add("hi", { agent_id: "lonely-agent" }),
    orFilter: () => client.search("q", { filters: { OR: [{ user_id: "x" }, { user_id: "y" }] } }),
    appId: () => client.getAll({ filters: { user_id: "alice", app_id: "crm" } }),
  };
  const answered = {};
  for (const [name, call] of Object.entries(calls)) {
    const error = await rejection(call());
    answered[name] = Number(String(error.errorCode ?? "").replace("HTTP_", "")) || error.message;
  }
  for (const [name, status] of Object.entries(answered)) {
    assert.ok(status === 501 || (status >= 400 && status < 500), `${name}: ${status}`);
  }
  assert.equal(answered.getProfile, 501);
  assert.equal(answered.createMemoryExport, 501);
  assert.equal(answered.rerank, 400);
  assert.equal(answered.appId, 400);
});

report();
