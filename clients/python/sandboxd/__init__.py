"""sandboxd: Python SDK for the sandboxd code-interpreter daemon (standard library only).

    from sandboxd import Sandbox
    sbx = Sandbox("http://127.0.0.1:7878", "demo")
    ex = sbx.run_code("x = 41\nx + 1", on_stdout=print)
    print(ex.text)            # "42"

See README.md for the whole surface; `sandboxd.errors` for the exceptions.
"""
from .errors import (AuthenticationError, ConflictError, ConnectionFailedError,
                     ContextNotFoundError, DiskFullError, InsufficientStorageError,
                     InternalError, InvalidJSONError, MemoryLimitError,
                     LanguageUnavailableError, LimitReachedError, MethodNotAllowedError,
                     NotFoundError, PayloadTooLargeError, ProcessNotFoundError, ProtocolError,
                     SandboxdError, SandboxFileNotFoundError, SandboxNotFoundError,
                     ValidationError)
from .models import (CodeRaisedError, CommandResult, Execution, ExecutionError, Logs, Record,
                     Result)
from .sandbox import Sandbox
from .aio import AsyncSandbox

__version__ = "0.1.0"

__all__ = [
    "Sandbox", "AsyncSandbox", "Execution", "Result", "Logs", "ExecutionError", "CommandResult", "Record",
    "CodeRaisedError", "SandboxdError", "ConnectionFailedError", "ProtocolError",
    "ValidationError", "InvalidJSONError", "AuthenticationError", "NotFoundError",
    "SandboxNotFoundError", "ContextNotFoundError", "SandboxFileNotFoundError",
    "ProcessNotFoundError", "MethodNotAllowedError", "ConflictError", "PayloadTooLargeError",
    "LimitReachedError", "InternalError", "LanguageUnavailableError",
    "InsufficientStorageError", "DiskFullError", "MemoryLimitError",
]


def load_ipython_extension(ipython):
    """`%load_ext sandboxd`: registers the `%%sandboxd` cell magic (sandboxd.magic)."""
    from .magic import load_ipython_extension as load
    load(ipython)
