/*
 * errors.ts — the API's error envelope `{code, message}` as typed exceptions.
 *
 * Every error the daemon returns becomes an instance of the class named for its `code`, all
 * extending SandboxdError, with `.code`, `.status` and the server's `.message` unchanged. An
 * unknown code still gives a SandboxdError, so callers can always branch on `.code`.
 * Errors raised by the user's code are NOT exceptions: they are `Execution.error`.
 */

export class SandboxdError extends Error {
  /** The API's error code, e.g. `CONTEXT_NOT_FOUND`; `NETWORK_ERROR` when no answer came. */
  readonly code: string;
  /** The HTTP status (0 when the daemon could not be reached). */
  readonly status: number;

  constructor(message: string, code = "INTERNAL_ERROR", status = 0, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }

  toJSON(): { name: string; code: string; status: number; message: string } {
    return { name: this.name, code: this.code, status: this.status, message: this.message };
  }
}

export class ValidationError extends SandboxdError {}
export class UnauthorizedError extends SandboxdError {}
export class NotFoundError extends SandboxdError {}
export class SandboxNotFoundError extends NotFoundError {}
export class ContextNotFoundError extends NotFoundError {}
export class FileNotFoundError extends NotFoundError {}
export class ProcessNotFoundError extends NotFoundError {}
export class MethodNotAllowedError extends SandboxdError {}
export class ConflictError extends SandboxdError {}
export class PayloadTooLargeError extends SandboxdError {}
export class LimitReachedError extends SandboxdError {}
export class LanguageUnavailableError extends SandboxdError {}
export class InternalError extends SandboxdError {}
/** 507: the sandbox itself ran out of room for what was asked. */
export class InsufficientStorageError extends SandboxdError {}
/** 507 DISK_FULL: the workspace (diskMb) is full; nothing was written. */
export class DiskFullError extends InsufficientStorageError {}
/** 507 MEMORY_LIMIT: the sandbox's memory (memoryMb) could not take the request. */
export class MemoryLimitError extends InsufficientStorageError {}
/** The daemon could not be reached, or the connection broke mid-answer. */
export class NetworkError extends SandboxdError {}

/** One row per API error code (shared/API.md, "Conventions"). */
const BY_CODE: Record<string, typeof SandboxdError> = {
  INVALID_JSON: ValidationError,
  VALIDATION_FAILED: ValidationError,
  UNAUTHORIZED: UnauthorizedError,
  SANDBOX_NOT_FOUND: SandboxNotFoundError,
  CONTEXT_NOT_FOUND: ContextNotFoundError,
  FILE_NOT_FOUND: FileNotFoundError,
  PROCESS_NOT_FOUND: ProcessNotFoundError,
  NOT_FOUND: NotFoundError,
  METHOD_NOT_ALLOWED: MethodNotAllowedError,
  CONFLICT: ConflictError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  LIMIT_REACHED: LimitReachedError,
  INTERNAL_ERROR: InternalError,
  LANGUAGE_UNAVAILABLE: LanguageUnavailableError,
  DISK_FULL: DiskFullError,
  MEMORY_LIMIT: MemoryLimitError,
};

/**
 * Builds the exception for an error response. `body` is the response text; when it is not the
 * API's envelope (a proxy's HTML page, say) the status decides the code and the text is kept.
 */
export function errorFromResponse(status: number, body: string): SandboxdError {
  let code = "";
  let message = "";
  try {
    const j = JSON.parse(body) as { code?: unknown; message?: unknown; error?: unknown };
    if (typeof j.code === "string") code = j.code;
    if (typeof j.message === "string") message = j.message;
    else if (typeof j.error === "string") message = j.error;
  } catch {
    /* not JSON: fall through to the status */
  }
  if (!code) code = status === 401 ? "UNAUTHORIZED" : status === 404 ? "NOT_FOUND" : `HTTP_${status}`;
  if (!message) message = body.trim().slice(0, 500) || `HTTP ${status}`;
  const Cls = BY_CODE[code] ?? SandboxdError;
  return new Cls(message, code, status);
}
