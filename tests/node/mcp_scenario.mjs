// The official MCP TypeScript SDK's client over streamable HTTP against the service's MCP server:
// every tool, the memory:// resource, bad arguments as tool errors, tenants apart, and bad keys refused
// (401, then 429 once the address has sent too many). Run by tests/test_node_clients.py:
// `node mcp_scenario.mjs tools` or `node mcp_scenario.mjs bad-keys`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { assert, check, env, rejection, report } from "./checks.mjs";

const url = new URL(env("MCP_URL"));
const TOOLS = ["add_memory", "delete_memory", "end_session", "get_context", "get_person", "list_memories",
  "list_people", "search_memories"];

async function connect(key) {
  const client = new Client({ name: "memory-service-node-test", version: "1.0.0" });
  const headers = key === undefined ? {} : { Authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

function payload(result) {
  assert.ok(!result.isError, JSON.stringify(result.content));
  return JSON.parse(result.content[0].text);
}

async function tools() {
  const session = await connect(env("AGENT_KEY"));
  const user = "node-user";
  let memoryId;
  let mumId;

  await check("the tools and the resource template are listed", async () => {
    assert.deepEqual((await session.listTools()).tools.map((t) => t.name).sort(), TOOLS);
    const templates = (await session.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
    assert.deepEqual(templates, ["memory://{memory_id}"]);
  });

  await check("every tool once", async () => {
    const saved = payload(await session.callTool({ name: "add_memory",
      arguments: { user_id: user, text: "Alex keeps bees in Porto." } }));
    assert.equal(saved.operation, "ADD");
    memoryId = saved.memory.id;
    const extracted = payload(await session.callTool({ name: "add_memory", arguments: { user_id: user,
      session_id: "chat-1", messages: [{ role: "user", content: "I'm a vegetarian since 2019." },
        { role: "assistant", content: "Got it." }] } }));
    assert.equal(extracted.status, "done");
    assert.ok(extracted.operations.some((op) => op.operation === "ADD"));
    const ended = payload(await session.callTool({ name: "end_session",
      arguments: { user_id: user, session_id: "chat-1" } }));
    assert.equal(ended.trigger, "session_end");
    assert.equal(ended.queued, true);
    const again = payload(await session.callTool({ name: "end_session",
      arguments: { user_id: user, session_id: "chat-1" } }));
    assert.equal(again.cycle_id, ended.cycle_id);
    assert.equal(again.queued, false);
    const found = payload(await session.callTool({ name: "search_memories",
      arguments: { user_id: user, query: "bees Porto", limit: 3 } }));
    assert.equal(found.results[0].id, memoryId);
    assert.ok("semantic" in found.results[0].scores);
    const context = payload(await session.callTool({ name: "get_context",
      arguments: { user_id: user, query: "Where are the bees?" } }));
    assert.match(context.context, /bees/);
    const listed = payload(await session.callTool({ name: "list_memories", arguments: { user_id: user, limit: 1 } }));
    assert.equal(listed.results.length, 1);
    assert.ok(listed.next_before);
    const rest = payload(await session.callTool({ name: "list_memories",
      arguments: { user_id: user, before: listed.next_before } }));
    assert.ok([...listed.results, ...rest.results].some((m) => m.id === memoryId));
    const told = payload(await session.callTool({ name: "add_memory", arguments: { user_id: user,
      session_id: "chat-2", messages: [{ role: "user", content: "My mum Sheila lives in Leeds." }] } }));
    assert.equal(told.status, "done");
    const people = payload(await session.callTool({ name: "list_people", arguments: { user_id: user } }));
    mumId = people.people.find((p) => p.relation === "mother")?.id;
    const mum = people.people.find((p) => p.id === mumId);
    assert.equal(mum?.name, "Sheila", JSON.stringify(people));
    assert.deepEqual(mum.edges.filter((e) => e.predicate === "lives_in").map((e) => e.value), ["Leeds"]);
    const persons = payload(await session.callTool({ name: "list_people", arguments: { user_id: user, kind: "person" } }));
    assert.ok(persons.people.every((p) => p.kind === "person") && persons.people.some((p) => p.id === mumId));
    const page = payload(await session.callTool({ name: "get_person", arguments: { user_id: user, person_id: mumId } }));
    assert.equal(page.relation, "mother");
    assert.ok(page.edges_history.some((e) => e.predicate === "lives_in" && e.value === "Leeds"));
  });

  await check("the memory resource", async () => {
    const resource = await session.readResource({ uri: `memory://${memoryId}` });
    assert.equal(JSON.parse(resource.contents[0].text).text, "Alex keeps bees in Porto.");
    assert.equal(resource.contents[0].mimeType, "application/json");
  });

  await check("bad arguments are tool errors naming the field, and the server keeps answering", async () => {
    for (const [name, args, named] of [
      ["search_memories", { user_id: user, query: "x", limit: 0 }, "limit"],
      ["search_memories", { query: "x" }, "user_id"],
      ["add_memory", { user_id: user, text: "x".repeat(100_000) }, "text"],
      ["delete_memory", { memory_id: "not-a-uuid" }, "not found"],
      ["get_person", { user_id: user, person_id: "not-a-uuid" }, "not found"],
      ["list_people", { user_id: user, kind: "robot" }, "kind"],
      ["list_memories", { user_id: user, before: "yesterday-ish" }, "before"],
      ["end_session", { user_id: user, session_id: "never-held" }, "no session"],
      ["no_such_tool", {}, "no_such_tool"],
    ]) {
      const result = await session.callTool({ name, arguments: args });
      assert.ok(result.isError, `${name} ${JSON.stringify(args)}`);
      assert.ok(result.content[0].text.includes(named), result.content[0].text);
    }
    assert.ok(payload(await session.callTool({ name: "search_memories",
      arguments: { user_id: user, query: "vegetarian" } })).results.length >= 1);
  });

  await check("tenants stay apart", async () => {
    const theirs = await connect(env("OTHER_KEY"));
    const found = payload(await theirs.callTool({ name: "search_memories",
      arguments: { user_id: user, query: "bees Porto" } }));
    assert.deepEqual(found.results, []);
    assert.ok((await theirs.callTool({ name: "delete_memory", arguments: { memory_id: memoryId } })).isError);
    assert.ok((await theirs.callTool({ name: "get_person", arguments: { user_id: user, person_id: mumId } })).isError);
    await theirs.close();
  });

  await check("delete", async () => {
    assert.equal(payload(await session.callTool({ name: "delete_memory", arguments: { memory_id: memoryId } }))
      .operation, "DELETE");
  });
  await session.close();
}

async function badKeys() {
  // The pytest side allows 3 bad keys per address per window.
  await check("no key or a wrong one is a 401 the client reports", async () => {
    for (const key of [undefined, "mk_wrong"]) {
      const error = await rejection(connect(key));
      assert.ok(error instanceof StreamableHTTPError, String(error));
      assert.equal(error.code, 401, String(error));
    }
  });
  await check("an address that keeps sending bad keys is refused with 429; a live key still connects", async () => {
    const codes = [];
    for (let n = 0; n < 3; n++) codes.push((await rejection(connect("mk_wrong"))).code);
    assert.deepEqual(codes, [401, 401, 429]); // wrong keys 2 and 3 of the window, then the 4th is refused
    const good = await connect(env("AGENT_KEY"));
    assert.equal((await good.listTools()).tools.length, TOOLS.length);
    await good.close();
  });
}

const mode = process.argv[2] ?? "tools";
if (mode === "tools") await tools();
else if (mode === "bad-keys") await badKeys();
else throw new Error(`unknown mode ${mode}`);
report();
