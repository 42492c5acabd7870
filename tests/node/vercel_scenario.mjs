// Mem0's Vercel AI SDK provider (@mem0/vercel-ai-provider), unchanged, with its `host` set to the live
// service and its model a scripted local OpenAI-compatible server (tests/fake_openai.py): each turn's
// words are added as memories and what the service finds goes into the model's prompt.
// Run by tests/test_node_clients.py, which scripts the model's replies and reads what it was sent.
import { addMemories, createMem0, getMemories, retrieveMemories, searchMemories } from "@mem0/vercel-ai-provider";
import { generateText, streamText } from "ai";
import { assert, check, env, report } from "./checks.mjs";

const host = env("MEMORY_URL");
const mem0ApiKey = env("AGENT_KEY");
const mem0 = createMem0({
  provider: "openai", mem0ApiKey, apiKey: "sk-local-test", config: { baseURL: env("MODEL_URL") },
  mem0Config: { host },
});

await check("a turn adds what the user said", async () => {
  const { text } = await generateText({
    model: mem0.chat("test-model", { user_id: "vera" }),
    prompt: "I'm vegetarian and I live in Porto.",
  });
  assert.equal(text, "Noted!");
  const found = await getMemories("Where does she live?", { user_id: "vera", mem0ApiKey, host });
  assert.ok(found.some((m) => /Porto/.test(m.memory)), JSON.stringify(found));
});

await check("the next turn's prompt carries the memories", async () => {
  const result = await generateText({
    model: mem0.chat("test-model", { user_id: "vera" }),
    messages: [{ role: "user", content: [{ type: "text", text: "What should I cook tonight? I eat no meat." }] }],
  });
  assert.equal(result.text, "How about a mushroom risotto?");
  const source = result.sources.find((s) => s.providerMetadata?.mem0);
  assert.ok(source, JSON.stringify(result.sources));
  assert.match(source.providerMetadata.mem0.memoriesText, /vegetarian/i);
  assert.ok(source.providerMetadata.mem0.memories.every((m) => m.score >= 0 && m.score <= 1));
});

await check("a streamed turn gets the memories too", async () => {
  const result = streamText({
    model: mem0.chat("test-model", { user_id: "vera" }),
    prompt: "Any dinner idea without meat?",
  });
  let text = "";
  for await (const part of result.textStream) text += part;
  assert.equal(text, "Lentil curry, then.");
});

await check("the standalone helpers reach the service", async () => {
  const added = await addMemories([{ role: "user", content: [{ type: "text", text: "My sister Ines is a pilot." }] }],
    { user_id: "vera", mem0ApiKey, host });
  assert.ok(added.results.some((e) => e.event === "ADD"), JSON.stringify(added));
  const system = await retrieveMemories("Tell me about my sister", { user_id: "vera", mem0ApiKey, host });
  assert.match(system, /^System Message: /);
  assert.match(system, /pilot/);
  const searched = await searchMemories("sister", { user_id: "vera", mem0ApiKey, host, top_k: 2 });
  assert.ok(searched.results.length >= 1 && searched.results.length <= 2);
  const none = await getMemories("anything", { user_id: "nobody-here", mem0ApiKey, host });
  assert.deepEqual(none, []);
});

report();
