/**
 * When to try a call again. 429 and 503 mean the service wrote nothing, and a failed connection
 * never reached it: those are retried with exponential backoff and jitter, and a Retry-After from
 * the service wins (up to maxDelayMs). Any other answer, and a timeout (the service may still be
 * working on it), is final.
 */

export interface RetryPolicy {
  /** Tries after the first; 0 turns retrying off. Default 3. */
  maxRetries?: number;
  /** The first backoff, doubled at each try (with jitter: half to all of it). Default 500 ms. */
  baseDelayMs?: number;
  /** No wait is longer, a Retry-After included. Default 30 000 ms. */
  maxDelayMs?: number;
}

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

export const DEFAULT_RETRY: Required<RetryPolicy> = { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000 };

/**
 * Milliseconds to wait before try `attempt + 1`, or null to give up (a pure function; `random`
 * is the jitter's source). `status` is undefined for a connection that failed.
 */
export function retryDelay(policy: RetryPolicy, attempt: number, status: number | undefined,
  retryAfterSeconds: number | undefined, random: () => number = Math.random): number | null {
  const { maxRetries, baseDelayMs, maxDelayMs } = { ...DEFAULT_RETRY, ...policy };
  if (attempt >= maxRetries) return null;
  if (status !== undefined && !RETRY_STATUSES.has(status)) return null;
  if (retryAfterSeconds !== undefined) return Math.min(Math.max(retryAfterSeconds * 1000, 0), maxDelayMs);
  return Math.min(baseDelayMs * 2 ** attempt * (0.5 + random() / 2), maxDelayMs);
}

/** Retry-After in seconds (the service sends seconds; an HTTP date is read too), or undefined. */
export function retryAfterSeconds(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds;
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max((when - now) / 1000, 0);
}
