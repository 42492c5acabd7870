/**
 * What a failed call throws: one class per answer a caller handles differently. Catch them with
 * `instanceof` (`err instanceof Conflict`), or read `err.status` and `err.body` on the base class.
 */

export interface ErrorDetails {
  status?: number;
  body?: unknown;
  requestId?: string;
  retryAfter?: number;
  cause?: unknown;
}

/** Any error answer (or none at all). `body` is the service's JSON, `requestId` its X-Request-ID. */
export class MemoryServiceError extends Error {
  readonly status: number | undefined;
  readonly body: unknown;
  readonly requestId: string | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.body = details.body;
    this.requestId = details.requestId;
    Object.setPrototypeOf(this, new.target.prototype);
  }
}

function bodyField(body: unknown, name: string): unknown {
  return body !== null && typeof body === "object" ? (body as Record<string, unknown>)[name] : undefined;
}

/** 400, 413 or 422: `fields` maps each bad field to what is wrong with it. */
export class ValidationError extends MemoryServiceError {
  get fields(): Record<string, string[]> {
    if (this.body === null || typeof this.body !== "object" || Array.isArray(this.body)) return {};
    const fields: Record<string, string[]> = {};
    for (const [name, problems] of Object.entries(this.body as Record<string, unknown>)) {
      if (name === "detail") continue;
      fields[name] = Array.isArray(problems) ? problems.map((p) => (typeof p === "string" ? p : JSON.stringify(p)))
        : [typeof problems === "string" ? problems : JSON.stringify(problems)];
    }
    return fields;
  }
}

/** 401: the key is missing, wrong, revoked or expired. */
export class AuthenticationError extends MemoryServiceError {}

/** 403: the key may not do this (an agent key on the review queue, self-approval, ...). */
export class PermissionDenied extends MemoryServiceError {}

/** 403 with a quota: nothing was written. */
export class QuotaExceeded extends PermissionDenied {
  get quota(): string | undefined {
    const quota = bodyField(this.body, "quota");
    return typeof quota === "string" ? quota : undefined;
  }
}

/** 404: no such memory, job, trait, cycle or candidate in this tenant. */
export class NotFound extends MemoryServiceError {}

/** 409: the memory changed since you read it. Re-read it, or retry with `currentVersion`. */
export class Conflict extends MemoryServiceError {
  get currentVersion(): number | undefined {
    const version = bodyField(this.body, "current_version");
    return typeof version === "number" ? version : undefined;
  }

  get supersededBy(): string | undefined {
    const id = bodyField(this.body, "superseded_by");
    return typeof id === "string" ? id : undefined;
  }
}

/** 429 after the retries ran out; `retryAfter` is the service's wait in seconds. */
export class RateLimited extends MemoryServiceError {
  readonly retryAfter: number | undefined;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details);
    this.retryAfter = details.retryAfter;
  }
}

/** 503 after the retries ran out (database, Redis or embedder down): nothing was written. */
export class ServiceUnavailable extends RateLimited {}

/** 501: the service does not have this feature. */
export class NotSupported extends MemoryServiceError {}

/** Another 5xx. */
export class ServerError extends MemoryServiceError {}

/** No answer: the connection failed (after the retries) or the call timed out. */
export class TransportError extends MemoryServiceError {}

/** What the answer says to fix, in one line: its `detail`, or each bad field with its problems. */
function summarize(body: unknown): string {
  if (typeof body === "string") return body.slice(0, 500);
  if (body === null || typeof body !== "object" || Array.isArray(body)) return JSON.stringify(body);
  const { detail, ...fields } = body as Record<string, unknown>;
  const named = Object.entries(fields).map(([name, problems]) =>
    `${name}: ${Array.isArray(problems) ? problems.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" ")
      : typeof problems === "string" ? problems : JSON.stringify(problems)}`);
  return [typeof detail === "string" ? detail : undefined, ...named].filter(Boolean).join("; ") || "{}";
}

/** The error for an answer's status and body (a pure function: tests/node/sdk_scenario.mjs tables it). */
export function errorFor(status: number, body: unknown, extra: { retryAfter?: number; requestId?: string } = {}):
  MemoryServiceError {
  const message = `${status}: ${summarize(body)}`;
  const details: ErrorDetails = { status, body, requestId: extra.requestId };
  if (status === 400 || status === 413 || status === 422) return new ValidationError(message, details);
  if (status === 401) return new AuthenticationError(message, details);
  if (status === 403) {
    return bodyField(body, "quota") !== undefined ? new QuotaExceeded(message, details)
      : new PermissionDenied(message, details);
  }
  if (status === 404) return new NotFound(message, details);
  if (status === 409) return new Conflict(message, details);
  if (status === 429) return new RateLimited(message, { ...details, retryAfter: extra.retryAfter });
  if (status === 501) return new NotSupported(message, details);
  if (status === 503) return new ServiceUnavailable(message, { ...details, retryAfter: extra.retryAfter });
  if (status >= 500) return new ServerError(message, details);
  return new MemoryServiceError(message, details);
}
