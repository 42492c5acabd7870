/** TypeScript client for the memory governance service: `new MemoryClient(url, { apiKey })`. */
export { MemoryClient, serviceRoot, VERSION } from "./client.js";
export type { MemoryClientOptions, WaitOptions } from "./client.js";
export {
  AuthenticationError, Conflict, errorFor, MemoryServiceError, NotFound, NotSupported, PermissionDenied,
  QuotaExceeded, RateLimited, ServerError, ServiceUnavailable, TransportError, ValidationError,
} from "./errors.js";
export type { ErrorDetails } from "./errors.js";
export { DEFAULT_RETRY, RETRY_STATUSES, retryAfterSeconds, retryDelay } from "./retry.js";
export type { RetryPolicy } from "./retry.js";
export type * from "./types.js";
export type { components, operations, paths } from "./schema.js";
