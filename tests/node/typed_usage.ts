// What an editor sees using the TypeScript SDK: this compiles (tsc -p tests/node/tsconfig.json, run by
// tests/test_typescript_sdk.py), and every line under @ts-expect-error must be a type error.
import {
  Conflict, MemoryClient, ValidationError, type ContextBlock, type Memory, type Person, type PersonDetail,
  type SearchResult, type WriteResult,
} from "../../clients/typescript/dist/esm/index.js";

export async function typed(client: MemoryClient): Promise<string[]> {
  const saved: WriteResult = await client.add("alice", "Alice likes tea.", { tags: ["tea"], memory_type: "fact" });
  const id: string | undefined = saved.memory?.id;
  const block: ContextBlock = await client.context("What does Alice drink?", { user_id: "alice", format: "plain" });
  const hits: SearchResult[] = (await client.search("tea", { user_id: "alice", mode: "semantic" })).results;
  const semantic: number | null = hits[0]!.scores.semantic;
  for await (const memory of client.iterMemories({ user_id: "alice", memory_type: "fact" })) {
    const text: string = memory.text;
    void text;
  }
  const people: Person[] = await client.people("alice", { kind: "person" });
  const mum: Person | undefined = people.find((p) => p.relation === "mother");
  const where: string[] = mum!.edges.filter((e) => e.predicate === "lives_in").map((e) => e.value);
  const facts: string[] = mum!.current_facts.map((f) => f.text);
  const page: PersonDetail = await client.person("alice", mum!.id);
  const moved: (string | null)[] = page.edges_history.map((e) => e.invalid_at);
  const about: string | undefined = (await client.get(id!)).subject?.name;
  void where, facts, moved, about;
  try {
    await client.update(id!, { text: "Alice likes green tea.", expected_version: 1 });
  } catch (error) {
    if (error instanceof Conflict) return [String(error.currentVersion)];
    if (error instanceof ValidationError) return Object.keys(error.fields);
  }

  // @ts-expect-error: no such field on a new memory
  await client.add("alice", "x", { colour: "red" });
  // @ts-expect-error: memory_type is one of the service's types
  await client.add("alice", "x", { memory_type: "gossip" });
  // @ts-expect-error: the search mode is hybrid, semantic or keyword
  await client.search("tea", { mode: "fuzzy" });
  // @ts-expect-error: end_session needs the user
  await client.endSession("s1", {});
  // @ts-expect-error: a memory's text is a string
  const wrong: number = ({} as Memory).text;
  // @ts-expect-error: sensitive text is approved redacted or as_written
  await client.approve("c1", { sensitive: "maybe" });
  // @ts-expect-error: a person's kind is user, person, pet, place or organisation
  await client.people("alice", { kind: "robot" });
  // @ts-expect-error: a person's name is a string
  const badName: number = ({} as Person).name;
  // @ts-expect-error: a memory's subject is {id, name}, not a string
  const badSubject: string = ({} as Memory).subject!;
  void badName, badSubject;
  // @ts-expect-error: messages have a role and content
  await client.addConversation("alice", "s1", [{ text: "hi" }]);
  void wrong;
  return [block.context, String(semantic)];
}
