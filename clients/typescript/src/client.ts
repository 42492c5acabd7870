/**
 * `MemoryClient`: every endpoint of the service's /api/v1, on the platform's `fetch` (Node 18+,
 * Deno, Bun, browsers), with no other runtime dependency. The same surface as the Python SDK
 * (clients/python), in TypeScript's names.
 */
import { MemoryServiceError, TransportError, errorFor } from "./errors.js";
import { type RetryPolicy, RETRY_STATUSES, retryAfterSeconds, retryDelay } from "./retry.js";
import type {
  AddOptions, ApiPath, ApproveOptions, Candidate, ContextBlock, ContextOptions, ConversationOptions, Erasure, Health,
  HistoryEvent, Job, ListFilters, Memory, MergeOptions, Message, NewMemory, Page, PeopleOptions, Person, PersonDetail,
  Readiness, ReflectionCycle, RejectOptions, SearchOptions, SearchResponse, Session, SessionTurn, SessionTurnsOptions,
  TraitDetail, UpdateOptions, UserTraits, WriteResult,
} from "./types.js";

export const VERSION = "0.1.0";

export interface MemoryClientOptions {
  /** The service's API key (`manage.py create_api_key`); sent as `Authorization: Bearer ...`. */
  apiKey: string;
  /** Each try's limit; a call that takes longer throws TransportError (and is not retried). Default 30 000. */
  timeoutMs?: number;
  /** Retries of 429, 503 and failed connections (see RetryPolicy). */
  retry?: RetryPolicy;
  /** Another fetch (a proxy agent's, a test's); default: the global one. */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface WaitOptions {
  /** Give up (MemoryServiceError) after this long. Default 60 000. */
  timeoutMs?: number;
  /** Between polls. Default 250. */
  intervalMs?: number;
}

type Query = Record<string, string | number | boolean | string[] | undefined | null>;

interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** A path of the OpenAPI schema (with its {parameters} filled from `params`), or a page's absolute link. */
  path: ApiPath | "/api/v1/ready" | URL;
  params?: Record<string, string | number>;
  query?: Query;
  body?: unknown;
}

/** Connection failures that never reached the service (safe to retry). */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT"]);

function errorCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown; errors?: { code?: unknown }[] } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  const first = cause?.errors?.[0]?.code; // AggregateError: every address refused
  return typeof first === "string" ? first : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function withoutUndefined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The service root for a URL: "http://host:8000" and "http://host:8000/api/v1" both work. */
export function serviceRoot(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return trimmed.endsWith("/api/v1") ? trimmed.slice(0, -"/api/v1".length) : trimmed;
}

export class MemoryClient {
  readonly root: string;
  readonly retry: RetryPolicy;
  readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly headers: Record<string, string>;

  /** `new MemoryClient("http://localhost:8000", { apiKey: process.env.MEMORY_API_KEY! })` */
  constructor(url: string, options: MemoryClientOptions) {
    if (!options?.apiKey) throw new MemoryServiceError("an API key is required (manage.py create_api_key)");
    this.root = serviceRoot(url);
    let parsed: URL | undefined;
    try {
      parsed = new URL(this.root);
    } catch {
      parsed = undefined;
    }
    if (parsed?.protocol !== "http:" && parsed?.protocol !== "https:") {
      throw new MemoryServiceError(`not a service URL: ${JSON.stringify(url)} (like "http://127.0.0.1:8000")`);
    }
    this.retry = options.retry ?? {};
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof this.fetchImpl !== "function") throw new MemoryServiceError("no fetch: use Node 18+ or pass fetch");
    this.headers = { Accept: "application/json", "User-Agent": `memory-client-typescript/${VERSION}`,
      ...options.headers, Authorization: `Bearer ${options.apiKey}` };
  }

  // -- memories

  /** Save one memory (verbatim; `infer: true` decides against the user's near-duplicates first). */
  add(userId: string, text: string, options: AddOptions = {}): Promise<WriteResult> {
    return this.send({ method: "POST", path: "/api/v1/memories", body: { ...options, user_id: userId, text } });
  }

  /** Save many memories in one transaction (each as for add); all or none. */
  async addBatch(memories: NewMemory[]): Promise<WriteResult[]> {
    const answer = await this.send<{ results: WriteResult[] }>(
      { method: "POST", path: "/api/v1/memories/batch", body: { memories } });
    return answer.results;
  }

  get(memoryId: string): Promise<Memory> {
    return this.send({ method: "GET", path: "/api/v1/memories/{memory_id}", params: { memory_id: memoryId } });
  }

  /** One page of memories, newest first; `nextPage(page)` or `iterMemories` for the rest. */
  list(filters: ListFilters = {}): Promise<Page<Memory>> {
    const { include_data, ...query } = filters;
    return this.send({ method: "GET", path: "/api/v1/memories",
      query: { ...query, include: include_data ? "data" : undefined } });
  }

  /** Every memory the filters match (as for list), page after page: `for await (const m of ...)`. */
  async *iterMemories(filters: ListFilters = {}): AsyncGenerator<Memory, void, undefined> {
    yield* this.walk(await this.list(filters));
  }

  /** Change a memory. A new text makes a new version (its id is in the result). Throws Conflict when
   * `expected_version` is stale; an operator-approved memory may be held for review (operation REVIEW). */
  update(memoryId: string, changes: UpdateOptions): Promise<WriteResult> {
    return this.send({ method: "PATCH", path: "/api/v1/memories/{memory_id}", params: { memory_id: memoryId },
      body: changes });
  }

  /** Archive a memory (its history keeps who and why). */
  delete(memoryId: string): Promise<WriteResult> {
    return this.send({ method: "DELETE", path: "/api/v1/memories/{memory_id}", params: { memory_id: memoryId } });
  }

  /** Merge memories of one user into a new one; the originals are superseded by it. */
  merge(memoryIds: string[], options: MergeOptions = {}): Promise<Memory> {
    return this.send({ method: "POST", path: "/api/v1/memories/merge", body: { ...options, ids: memoryIds } });
  }

  /** A memory's history, oldest first, one page (its versions' events included). */
  history(memoryId: string): Promise<Page<HistoryEvent>> {
    return this.send({ method: "GET", path: "/api/v1/memories/{memory_id}/history",
      params: { memory_id: memoryId } });
  }

  async *iterHistory(memoryId: string): AsyncGenerator<HistoryEvent, void, undefined> {
    yield* this.walk(await this.history(memoryId));
  }

  /** Hybrid (or semantic / keyword) search; each result carries its score parts. */
  search(query: string, options: SearchOptions = {}): Promise<SearchResponse> {
    const { include_data, ...fields } = options;
    return this.send({ method: "POST", path: "/api/v1/memories/search", body: { ...fields, query },
      query: { include: include_data ? "data" : undefined } });
  }

  /** Erase everything of a user (or one agent's part): nothing of their words remains. */
  eraseUser(userId: string, options: { agent_id?: string } = {}): Promise<Erasure> {
    return this.send({ method: "DELETE", path: "/api/v1/users/{user_id}/memories", params: { user_id: userId },
      query: options });
  }

  // -- conversations and jobs

  /** Send turns ({role, content[, name, created_at]}); the service extracts what is worth keeping. */
  addConversation(userId: string, sessionId: string, messages: Message[], options: ConversationOptions = {}):
    Promise<Job> {
    return this.send({ method: "POST", path: "/api/v1/conversations",
      body: { ...options, user_id: userId, session_id: sessionId, messages } });
  }

  job(jobId: string): Promise<Job> {
    return this.send({ method: "GET", path: "/api/v1/jobs/{job_id}", params: { job_id: jobId } });
  }

  /** Run a failed job again. */
  retryJob(jobId: string): Promise<Job> {
    return this.send({ method: "POST", path: "/api/v1/jobs/{job_id}/retry", params: { job_id: jobId } });
  }

  /** The job once it is done or failed. */
  waitForJob(jobId: string, options: WaitOptions = {}): Promise<Job> {
    return this.poll(() => this.job(jobId), (job) => job.status === "done" || job.status === "failed",
      (job) => `job ${jobId} still ${job.status}`, options);
  }

  // -- context

  /** The block to put in the prompt: traits, the group, relevant memories, working memory. */
  context(query: string, options: ContextOptions = {}): Promise<ContextBlock> {
    return this.send({ method: "POST", path: "/api/v1/context", body: { ...options, query } });
  }

  // -- review (reviewer keys)

  /** What waits for a reviewer (reviewer keys only: an agent key gets PermissionDenied). */
  async reviewQueue(): Promise<Candidate[]> {
    return (await this.send<{ results: Candidate[] }>({ method: "GET", path: "/api/v1/review" })).results;
  }

  /** Approve a candidate (with `text`: approve the edited text instead; flagged sensitive text only with
   * `sensitive: "redacted"`, or `"as_written"` and a `reason`). */
  approve(candidateId: string, options: ApproveOptions = {}): Promise<Candidate> {
    return this.send({ method: "POST", path: "/api/v1/review/{candidate_id}/approve",
      params: { candidate_id: candidateId }, body: withoutUndefined(options) });
  }

  reject(candidateId: string, options: RejectOptions = {}): Promise<Candidate> {
    return this.send({ method: "POST", path: "/api/v1/review/{candidate_id}/reject",
      params: { candidate_id: candidateId }, body: { reason: options.reason ?? "" } });
  }

  // -- traits and reflection

  /** The user's traits by subtype (behavior, preference, core); `stage`: comma-separated stages. */
  traits(userId: string, options: { stage?: string } = {}): Promise<UserTraits> {
    return this.send({ method: "GET", path: "/api/v1/users/{user_id}/traits", params: { user_id: userId },
      query: options });
  }

  /** One trait with its evidence, children and confidence history. */
  trait(traitId: string): Promise<TraitDetail> {
    return this.send({ method: "GET", path: "/api/v1/traits/{trait_id}", params: { trait_id: traitId } });
  }

  /** Queue a reflection cycle; poll reflectionCycle(id) or use waitForReflection. */
  reflect(userId: string): Promise<ReflectionCycle> {
    return this.send({ method: "POST", path: "/api/v1/users/{user_id}/reflect", params: { user_id: userId },
      body: {} });
  }

  /** Say a session ended: its reflection cycle (trigger session_end) is queued, once per session. */
  endSession(sessionId: string, options: { user_id: string }): Promise<ReflectionCycle> {
    return this.send({ method: "POST", path: "/api/v1/sessions/{session_id}/end",
      params: { session_id: sessionId }, body: { user_id: options.user_id } });
  }

  reflectionCycle(cycleId: number): Promise<ReflectionCycle> {
    return this.send({ method: "GET", path: "/api/v1/reflection-cycles/{cycle_id}", params: { cycle_id: cycleId } });
  }

  /** The cycle once it is no longer queued or running. */
  waitForReflection(cycleId: number, options: WaitOptions = {}): Promise<ReflectionCycle> {
    return this.poll(() => this.reflectionCycle(cycleId),
      (cycle) => cycle.status !== "queued" && cycle.status !== "running",
      (cycle) => `reflection cycle ${cycleId} still ${cycle.status}`, options);
  }

  // -- people

  /** The people (and pets, places, organisations) in the user's life: the user first, then by last mention;
   * each with relation, aliases, current edges (where they live or work) and current facts. `kind`: one kind. */
  async people(userId: string, options: PeopleOptions = {}): Promise<Person[]> {
    const answer = await this.send<{ people: Person[] }>({ method: "GET", path: "/api/v1/users/{user_id}/people",
      params: { user_id: userId }, query: options });
    return answer.people;
  }

  /** One person of the user (NotFound for another user's): as in `people`, plus the facts that stopped holding,
   * every edge with its times (where they lived before), the history of changes, and who is within two hops. */
  person(userId: string, personId: string): Promise<PersonDetail> {
    return this.send({ method: "GET", path: "/api/v1/users/{user_id}/people/{person_id}",
      params: { user_id: userId, person_id: personId } });
  }

  // -- sessions

  /** The user's sessions, latest first: first and last conversation job time, how many turns and jobs. */
  async sessions(userId: string): Promise<Session[]> {
    const answer = await this.send<{ sessions: Session[] }>({ method: "GET", path: "/api/v1/users/{user_id}/sessions",
      params: { user_id: userId } });
    return answer.sessions;
  }

  /** One page of the user's raw turns of a session, in order, as the conversation jobs keep them (a forgotten
   * turn reads as its marker); follow `next` with nextPage. */
  sessionTurns(userId: string, sessionId: string, options: SessionTurnsOptions = {}): Promise<Page<SessionTurn>> {
    return this.send({ method: "GET", path: "/api/v1/users/{user_id}/sessions/{session_id}/turns",
      params: { user_id: userId, session_id: sessionId }, query: options });
  }

  // -- pages and the service

  /** The page after this one, or null on the last page. The link is followed on this client's own origin
   * (behind a proxy the service may name another host; the key goes nowhere else). */
  async nextPage<T>(page: Page<T>): Promise<Page<T> | null> {
    if (!page.next) return null;
    const link = new URL(page.next, this.root);
    const own = new URL(this.root);
    const url = link.origin === own.origin ? link : new URL(link.pathname + link.search, own.origin);
    return this.send<Page<T>>({ method: "GET", path: url });
  }

  /** Liveness and, for a valid key, the checks (database, model, broker, Redis). */
  health(): Promise<Health> {
    return this.send({ method: "GET", path: "/api/v1/health" });
  }

  /** Readiness: the database answers, migrations are applied, the model is loaded (else ServiceUnavailable). */
  ready(): Promise<Readiness> {
    return this.send({ method: "GET", path: "/api/v1/ready" });
  }

  private async *walk<T>(first: Page<T>): AsyncGenerator<T, void, undefined> {
    let page: Page<T> | null = first;
    while (page) {
      yield* page.results;
      page = await this.nextPage(page);
    }
  }

  private async poll<T>(read: () => Promise<T>, finished: (value: T) => boolean, still: (value: T) => string,
    { timeoutMs = 60_000, intervalMs = 250 }: WaitOptions): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (finished(value)) return value;
      if (Date.now() > deadline) throw new MemoryServiceError(`${still(value)} after ${timeoutMs} ms`);
      await sleep(intervalMs);
    }
  }

  private url(call: Call): URL {
    if (call.path instanceof URL) return call.path;
    const path = call.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = call.params?.[name];
      if (value === undefined || value === "") throw new MemoryServiceError(`${name} is required`);
      return encodeURIComponent(String(value));
    });
    const url = new URL(this.root + path);
    for (const [name, value] of Object.entries(call.query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(one));
    }
    return url;
  }

  /** One call: tries until an answer that is not retried, then its JSON or the error for it. */
  private async send<T>(call: Call): Promise<T> {
    const url = this.url(call);
    const headers: Record<string, string> = { ...this.headers };
    const init: RequestInit = { method: call.method, headers };
    if (call.body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(call.body);
    }
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        if ((error as Error)?.name === "TimeoutError" || (error as Error)?.name === "AbortError") {
          throw new TransportError(`timed out after ${this.timeoutMs} ms waiting for ${call.method} ${url.pathname}`,
            { cause: error });
        }
        const code = errorCode(error);
        const wait = code && NOT_CONNECTED.has(code) ? retryDelay(this.retry, attempt, undefined, undefined) : null;
        if (wait === null) {
          throw new TransportError(`no answer from ${this.root}: ${(error as Error)?.message ?? error}` +
            (code ? ` (${code})` : ""), { cause: error });
        }
        await sleep(wait);
        continue;
      }
      const retryAfter = retryAfterSeconds(response.headers.get("Retry-After"));
      if (RETRY_STATUSES.has(response.status)) {
        const wait = retryDelay(this.retry, attempt, response.status, retryAfter);
        if (wait !== null) {
          await response.body?.cancel();
          await sleep(wait);
          continue;
        }
      }
      const text = await response.text();
      let body: unknown = null;
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      if (response.status >= 400) {
        throw errorFor(response.status, body, { retryAfter,
          requestId: response.headers.get("X-Request-ID") ?? undefined });
      }
      return body as T;
    }
  }
}
