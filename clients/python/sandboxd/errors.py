"""Typed exceptions for sandboxd's error envelope.

Every error the daemon returns is `{"code": "UPPER_SNAKE", "message": "..."}` with an HTTP
status. `error_from_response` turns that envelope into the matching subclass of
`SandboxdError`, so callers can catch exactly what they expect (`ContextNotFoundError`) or
everything at once (`SandboxdError`). Each exception keeps `.code`, `.status` and `.message`.
Codes this module does not know still map to `SandboxdError`, never to a crash. Failures to
reach the daemon at all are `ConnectionFailedError` (code `CONNECTION_FAILED`, status 0).

Errors raised by the user's code are not exceptions here: they are data
(`Execution.error`, an `ExecutionError`), as in E2B's SDK.
"""


class SandboxdError(Exception):
    """Base of every error the SDK raises: `.code` (API code), `.status` (HTTP, 0 if none)."""

    code = "INTERNAL_ERROR"

    def __init__(self, message, code=None, status=0):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.status = status

    def __str__(self):
        return "%s (%s%s)" % (self.message, self.code,
                              ", HTTP %d" % self.status if self.status else "")


class ConnectionFailedError(SandboxdError):
    """The daemon could not be reached, or the connection broke mid-response."""
    code = "CONNECTION_FAILED"


class ProtocolError(SandboxdError):
    """The daemon answered something this SDK cannot parse (not the API's JSON or SSE)."""
    code = "PROTOCOL_ERROR"


class ValidationError(SandboxdError):
    """400 VALIDATION_FAILED: a field had a bad value."""
    code = "VALIDATION_FAILED"


class InvalidJSONError(ValidationError):
    """400 INVALID_JSON: the request body was not JSON."""
    code = "INVALID_JSON"


class AuthenticationError(SandboxdError):
    """401 UNAUTHORIZED: missing or wrong bearer token."""
    code = "UNAUTHORIZED"


class NotFoundError(SandboxdError):
    """404 NOT_FOUND (no such route); base of the more specific not-found errors."""
    code = "NOT_FOUND"


class SandboxNotFoundError(NotFoundError):
    code = "SANDBOX_NOT_FOUND"


class ContextNotFoundError(NotFoundError):
    code = "CONTEXT_NOT_FOUND"


class SandboxFileNotFoundError(NotFoundError):
    """404 FILE_NOT_FOUND (named so as not to shadow the builtin FileNotFoundError)."""
    code = "FILE_NOT_FOUND"


class ProcessNotFoundError(NotFoundError):
    code = "PROCESS_NOT_FOUND"


class MethodNotAllowedError(SandboxdError):
    code = "METHOD_NOT_ALLOWED"


class ConflictError(SandboxdError):
    code = "CONFLICT"


class PayloadTooLargeError(SandboxdError):
    code = "PAYLOAD_TOO_LARGE"


class LimitReachedError(SandboxdError):
    code = "LIMIT_REACHED"


class InsufficientStorageError(SandboxdError):
    """507: the sandbox itself ran out of room for what was asked; base of the two below."""
    code = "INSUFFICIENT_STORAGE"


class DiskFullError(InsufficientStorageError):
    """507 DISK_FULL: the sandbox's workspace (diskMb) is full; nothing was written."""
    code = "DISK_FULL"


class MemoryLimitError(InsufficientStorageError):
    """507 MEMORY_LIMIT: the sandbox's memory (memoryMb) could not take the request."""
    code = "MEMORY_LIMIT"


class InternalError(SandboxdError):
    code = "INTERNAL_ERROR"


class LanguageUnavailableError(SandboxdError):
    code = "LANGUAGE_UNAVAILABLE"


_BY_CODE = {cls.code: cls for cls in (
    ValidationError, InvalidJSONError, AuthenticationError, NotFoundError,
    SandboxNotFoundError, ContextNotFoundError, SandboxFileNotFoundError,
    ProcessNotFoundError, MethodNotAllowedError, ConflictError, PayloadTooLargeError,
    LimitReachedError, InternalError, LanguageUnavailableError, DiskFullError,
    MemoryLimitError)}


def error_from_response(status, body):
    """Build the exception for an HTTP error: `body` is the raw response bytes."""
    import json
    code, message = None, None
    try:
        doc = json.loads(body.decode("utf-8")) if body else None
        if isinstance(doc, dict):
            code, message = doc.get("code"), doc.get("message")
    except (ValueError, UnicodeDecodeError):
        pass
    if not isinstance(code, str):
        code = "INTERNAL_ERROR" if status >= 500 else "HTTP_%d" % status
    if not isinstance(message, str):
        message = body[:200].decode("utf-8", "replace") if body else "HTTP %d" % status
    cls = _BY_CODE.get(code, SandboxdError)
    return cls(message, code=code, status=status)
