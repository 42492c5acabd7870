// The README's TypeScript agent turn, as written: its code block is transpiled (TypeScript's own
// transpiler), pointed at the live service and the built SDK, and run for two turns with a stand-in
// model that records its prompts. Run by tests/test_typescript_sdk.py.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "../../clients/typescript/node_modules/typescript/lib/typescript.js";
import { assert, check, env, report } from "./checks.mjs";

const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const block = /The same turn in TypeScript:\n\n```ts\n([\s\S]*?)```/.exec(readme);
assert.ok(block, "README.md has the TypeScript agent turn");
const sdk = pathToFileURL(new URL("../../clients/typescript/dist/esm/index.js", import.meta.url).pathname).href;
const source = block[1].replace('"memory-client"', JSON.stringify(sdk));
process.env.PORT = new URL(env("MEMORY_URL")).port; // the turn reads $PORT, as make run serves on it
const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2022 }, reportDiagnostics: true });
const dir = mkdtempSync(join(tmpdir(), "readme-turn-"));
try {
  writeFileSync(join(dir, "turn.mjs"), outputText);
  const { agentTurn, sessionOver } = await import(pathToFileURL(join(dir, "turn.mjs")).href);
  const prompts = [];
  const llm = async (prompt) => {
    prompts.push(prompt);
    return "Noted.";
  };
  await check("the README's turn runs as written", async () => {
    assert.equal(await agentTurn("gus", "chat-1", "I moved to Oslo last spring.", llm), "Noted.");
    await agentTurn("gus", "chat-1", "Where do I live now?", llm);
    assert.match(prompts[1], /Oslo/);
    await sessionOver("gus", "chat-1");
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
report();
