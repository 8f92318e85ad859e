"""The SDK's SSE parser and error mapping without a daemon."""
import io

from sandboxd._http import parse_sse
from sandboxd.errors import (ContextNotFoundError, DiskFullError, InsufficientStorageError,
                             MemoryLimitError, SandboxdError, ValidationError,
                             error_from_response)
from sandboxd.models import Execution, Record


def test_parse_sse_framing():
    raw = (b"event: stdout\nid: 1\ndata: {\"text\":\"a\"}\n\n: comment\n"
           b"event: end\r\ndata: {}\r\n\r\ndata: x\ndata: y\n\nevent: tail\ndata: z")
    assert list(parse_sse(io.BytesIO(raw))) == [
        ("stdout", '{"text":"a"}'), ("end", "{}"), ("message", "x\ny"), ("tail", "z")]


def test_error_mapping():
    e = error_from_response(404, b'{"code":"CONTEXT_NOT_FOUND","message":"no ctx"}')
    assert isinstance(e, ContextNotFoundError) and e.status == 404 and e.message == "no ctx"
    e = error_from_response(400, b'{"code":"VALIDATION_FAILED","message":"bad"}')
    assert isinstance(e, ValidationError)
    e = error_from_response(418, b'{"code":"SOMETHING_NEW","message":"m"}')
    assert type(e) is SandboxdError and e.code == "SOMETHING_NEW"
    e = error_from_response(507, b'{"code":"DISK_FULL","message":"full"}')
    assert isinstance(e, DiskFullError) and isinstance(e, InsufficientStorageError)
    e = error_from_response(507, b'{"code":"MEMORY_LIMIT","message":"oom"}')
    assert isinstance(e, MemoryLimitError) and e.status == 507
    e = error_from_response(502, b"<html>gateway</html>")
    assert e.code == "INTERNAL_ERROR" and "gateway" in e.message


def test_execution_from_plain_json():
    ex = Execution.from_json({"results": [{"text": "1", "isMainResult": True}],
                              "logs": {"stdout": ["a"], "stderr": []},
                              "error": {"name": "E", "message": "m", "traceback": ["t1", "t2"]},
                              "executionCount": 3})
    assert ex.text == "1" and ex.stdout == "a" and ex.error.traceback == "t1\nt2"
    assert Record({"exitCode": 1}).exit_code == 1
