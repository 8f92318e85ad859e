"""`Sandbox`: one sandbox on a sandboxd daemon, and every operation the API offers on it.

The sandbox is got-or-created (`PUT /v1/sandboxes/{id}`) on the first call that needs it, so
constructing a `Sandbox` costs nothing and never fails. `run_code` always streams (SSE):
callbacks fire while the code runs and the returned `Execution` is assembled from the same
events. Methods return plain values or `Record`s (dicts with attribute access) and raise the
typed errors of `sandboxd.errors`; an error inside the user's code is data in
`Execution.error`, not an exception. Timeouts given to this class are in seconds, as in the
Python world; the API's `timeoutMs` is computed from them.
"""
import base64
import os
import urllib.parse

from ._http import Transport, quote
from .errors import ProtocolError
from .models import (CommandResult, Execution, ExecutionError, Logs, Record, Result)

DEFAULT_URL = "http://127.0.0.1:7878"
WORKSPACE = "/workspace"
_SLACK = 30.0  # seconds the socket waits beyond a server-enforced run timeout


def _ms(seconds):
    return None if seconds is None else int(round(seconds * 1000))


def _drop_none(d):
    return {k: v for k, v in d.items() if v is not None}


class Sandbox:
    """A handle on sandbox `sandbox_id` of the daemon at `url`.

    `url` defaults to $SANDBOXD_URL or http://127.0.0.1:7878, `token` to $SANDBOXD_TOKEN.
    `request_timeout` bounds each non-streaming request (seconds). `create_options` are sent
    with the get-or-create: `limits`, `network`, `env`.
    """

    def __init__(self, url=None, sandbox_id="default", token=None, request_timeout=60.0,
                 **create_options):
        url = url or os.environ.get("SANDBOXD_URL") or DEFAULT_URL
        token = token if token is not None else os.environ.get("SANDBOXD_TOKEN") or None
        self.id = sandbox_id
        self._http = Transport(url, token, request_timeout)
        self._create_options = _drop_none(create_options)
        self._ensured = False
        self._info = None

    def __repr__(self):
        return "Sandbox(%r, %r)" % (self._http.url, self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    # -- sandbox ----------------------------------------------------------------------------
    @property
    def _base(self):
        return "/v1/sandboxes/" + quote(self.id)

    def _ensure(self):
        if not self._ensured:
            self._info = Record(self._http.request("PUT", self._base, self._create_options or None))
            self._ensured = True

    def create(self):
        """Get-or-create now and return the Sandbox record (id, createdAt, limits, usage)."""
        self._ensured = False
        self._ensure()
        return self._info

    def info(self):
        """The Sandbox record as the daemon sees it now."""
        self._ensure()
        return Record(self._http.request("GET", self._base))

    def destroy(self):
        """Delete the sandbox: its processes end and its workspace is removed."""
        out = self._http.request("DELETE", self._base)
        self._ensured = False
        return bool(out and out.get("deleted"))

    kill = destroy

    @classmethod
    def list(cls, url=None, token=None):
        """Every sandbox on the daemon, as Records."""
        url = url or os.environ.get("SANDBOXD_URL") or DEFAULT_URL
        token = token if token is not None else os.environ.get("SANDBOXD_TOKEN") or None
        doc = Transport(url, token).request("GET", "/v1/sandboxes")
        return [Record(s) for s in doc.get("sandboxes", [])]

    def health(self):
        return Record(self._http.request("GET", "/v1/health"))

    # -- code contexts ----------------------------------------------------------------------
    def create_code_context(self, language="python", cwd=None, env_vars=None):
        """A new code context (its own interpreter state); returns the CodeContext record."""
        self._ensure()
        body = _drop_none({"language": language, "cwd": cwd, "envVars": env_vars})
        return Record(self._http.request("POST", self._base + "/contexts", body))

    def list_code_contexts(self):
        self._ensure()
        doc = self._http.request("GET", self._base + "/contexts")
        return [Record(c) for c in doc.get("contexts", [])]

    def get_code_context(self, context):
        self._ensure()
        return Record(self._http.request("GET", self._ctx_path(context)))

    def delete_code_context(self, context):
        self._ensure()
        return bool(self._http.request("DELETE", self._ctx_path(context)).get("deleted"))

    def restart_code_context(self, context):
        """Fresh state, same id, cwd and envVars; returns the CodeContext record."""
        self._ensure()
        return Record(self._http.request("POST", self._ctx_path(context) + "/restart", {}))

    def interrupt_code_context(self, context):
        """Interrupt the running code; returns {"interrupted", "statePreserved"}."""
        self._ensure()
        return Record(self._http.request("POST", self._ctx_path(context) + "/interrupt", {}))

    def _ctx_path(self, context):
        cid = context if isinstance(context, str) else context["id"]
        return self._base + "/contexts/" + quote(cid)

    # -- running code -----------------------------------------------------------------------
    def run_code(self, code, context=None, language=None, env_vars=None, timeout=None,
                 on_stdout=None, on_stderr=None, on_result=None, on_error=None, _hdrs=None):
        """Run `code` and return its `Execution`, streaming events to the callbacks.

        `context` is a context id or record (default: the sandbox's default context for
        `language`, python when omitted). `timeout` is in seconds and enforced by the daemon
        (0 = none). Callbacks: `on_stdout(text)`, `on_stderr(text)`, `on_result(Result)`,
        `on_error(ExecutionError)`; they run in this thread as each event arrives.

        Ctrl-C (KeyboardInterrupt) while the code runs interrupts the run in the sandbox
        (DELETE of the execution) before it propagates, so the context is not left busy.
        """
        self._ensure()
        body = {"code": code}
        if context is not None:
            body["context"] = context if isinstance(context, str) else context["id"]
        body.update(_drop_none({"language": language, "envVars": env_vars,
                                "timeoutMs": _ms(timeout)}))
        sock_timeout = None if not timeout else timeout + _SLACK
        hdrs = {} if _hdrs is None else _hdrs  # AsyncSandbox reads the execution id from it
        events = self._http.stream("POST", self._base + "/execute", body, sock_timeout,
                                   response_headers=hdrs)
        callbacks = (on_stdout, on_stderr, on_result, on_error)
        return self._follow(events, hdrs, Execution(logs=Logs()), callbacks)

    def attach(self, execution_id, on_stdout=None, on_stderr=None, on_result=None,
               on_error=None, after=None):
        """Re-attach to a run by its id (`Execution.id`, or the X-Execution-Id of its
        request): its events are replayed from the start (or from after event id `after`),
        then followed live until it ends. Returns the same `Execution` as run_code, with the
        same callbacks. Raises NotFoundError when the daemon no longer keeps it."""
        self._ensure()
        path = self._base + "/executions/" + quote(execution_id) + "/events"
        if after is not None:
            path += "?after=%d" % int(after)
        hdrs = {}
        events = self._http.stream("GET", path, None, None, response_headers=hdrs)
        ex = Execution(logs=Logs(), id=execution_id)
        return self._follow(events, hdrs, ex, (on_stdout, on_stderr, on_result, on_error))

    def get_execution(self, execution_id):
        """The execution as a Record: state queued|running|done and, once done, the whole
        plain document (results, logs, error, usage, …)."""
        self._ensure()
        return Record(self._http.request("GET", self._base + "/executions/" +
                                         quote(execution_id)))

    def cancel_execution(self, execution_id):
        """Cancel a queued run or interrupt a running one; {"id","cancelled","interrupted"}."""
        self._ensure()
        return Record(self._http.request("DELETE", self._base + "/executions/" +
                                         quote(execution_id)))

    def _follow(self, events, hdrs, ex, callbacks):
        """Consume an execution's events into ex; on Ctrl-C, interrupt the run first."""
        try:
            ended = self._consume(events, hdrs, ex, callbacks)
        except KeyboardInterrupt:
            eid = ex.id or hdrs.get("x-execution-id")
            if eid:
                try:
                    self._http.request("DELETE", self._base + "/executions/" + quote(eid),
                                       timeout=5)
                except Exception:   # the interrupt is best effort; Ctrl-C must propagate
                    pass
            raise
        finally:
            events.close()
        if not ended:
            raise ProtocolError("execution stream ended without its 'end' event")
        return ex

    @staticmethod
    def _consume(events, hdrs, ex, callbacks):
        on_stdout, on_stderr, on_result, on_error = callbacks
        for event, data in events:
            ex.id = ex.id or hdrs.get("x-execution-id")
            ex.context_id = ex.context_id or hdrs.get("x-context-id")
            data = data or {}
            if event == "stdout":
                ex.logs.stdout.append(data.get("text", ""))
                if on_stdout:
                    on_stdout(data.get("text", ""))
            elif event == "stderr":
                ex.logs.stderr.append(data.get("text", ""))
                if on_stderr:
                    on_stderr(data.get("text", ""))
            elif event == "result":
                r = Result.from_json(data)
                ex.results.append(r)
                if on_result:
                    on_result(r)
            elif event == "error":
                ex.error = ExecutionError.from_json(data)
                if on_error:
                    on_error(ex.error)
            elif event == "end":
                ex.execution_count = data.get("executionCount")
                ex.duration_ms = data.get("durationMs")
                ex.state_preserved = data.get("statePreserved", True)
                ex.usage = data.get("usage")
                return True
        return False

    # -- commands ---------------------------------------------------------------------------
    def exec(self, command, cwd=None, env=None, timeout=None, stdin=None,
             on_stdout=None, on_stderr=None):
        """Run a shell command to completion; returns a CommandResult.

        With `on_stdout`/`on_stderr` the output streams to them as it is produced.
        """
        self._ensure()
        body = _drop_none({"command": command, "cwd": cwd, "env": env,
                           "timeoutMs": _ms(timeout), "stdin": stdin})
        if on_stdout is None and on_stderr is None:
            tmo = None if not timeout else max(timeout + _SLACK, self._http.timeout)
            return CommandResult(self._http.request("POST", self._base + "/exec", body,
                                                    timeout=tmo))
        out, err, result = [], [], None
        for event, data in self._http.stream("POST", self._base + "/exec", body,
                                             None if not timeout else timeout + _SLACK):
            data = data or {}
            if event == "stdout":
                out.append(data.get("text", ""))
                if on_stdout:
                    on_stdout(data.get("text", ""))
            elif event == "stderr":
                err.append(data.get("text", ""))
                if on_stderr:
                    on_stderr(data.get("text", ""))
            elif event == "exit":
                result = data
        if result is None:
            raise ProtocolError("exec stream ended without its 'exit' event")
        code = result.get("exitCode")
        return CommandResult(stdout="".join(out), stderr="".join(err), exitCode=code,
                             success=code == 0, durationMs=result.get("durationMs"),
                             timedOut=result.get("timedOut", False))

    # -- files ------------------------------------------------------------------------------
    def _file_path(self, path):
        """URL for a sandbox path: under /workspace it is sent relative, others absolute."""
        path = path or WORKSPACE
        if path == WORKSPACE or path == WORKSPACE + "/":
            rel = ""
        elif path.startswith(WORKSPACE + "/"):
            rel = path[len(WORKSPACE) + 1:]
        else:
            rel = path
        return self._base + "/files/" + urllib.parse.quote(rel, safe="/")

    def write_file(self, path, data):
        """Write bytes (or str, as UTF-8) to `path`, creating parents; returns {path, size}."""
        self._ensure()
        if isinstance(data, str):
            data = data.encode("utf-8")
        return Record(self._http.request("PUT", self._file_path(path), bytes(data),
                                         headers={"Content-Type": "application/octet-stream"}))

    def read_file(self, path, text=False):
        """The file's bytes (or str decoded as UTF-8 when `text`)."""
        self._ensure()
        data = self._http.request("GET", self._file_path(path), raw=True,
                                  headers={"Accept": "*/*"})
        return data.decode("utf-8") if text else data

    def list_files(self, path=WORKSPACE):
        """Entries of a directory: Records with name, type (file|dir|symlink), size, mtime."""
        self._ensure()
        doc = self._http.request("GET", self._file_path(path), headers={"Accept": "*/*"})
        if not isinstance(doc, dict) or "entries" not in doc:
            raise ProtocolError("%r is not a directory listing" % path)
        return [Record(e) for e in doc["entries"]]

    def delete_file(self, path):
        self._ensure()
        self._http.request("DELETE", self._file_path(path))

    def mkdir(self, path):
        self._ensure()
        return self._http.request("POST", self._base + "/files:mkdir", {"path": path})

    def move_file(self, src, dst):
        self._ensure()
        return self._http.request("POST", self._base + "/files:move", {"from": src, "to": dst})

    # -- background processes ---------------------------------------------------------------
    def start_process(self, command, cwd=None, env=None, stdin=False):
        """Start a background process; returns {id, pid, command, status}. With stdin=True
        its stdin is a pipe that write_stdin writes (else /dev/null)."""
        self._ensure()
        body = _drop_none({"command": command, "cwd": cwd, "env": env,
                           "stdin": True if stdin else None})
        return Record(self._http.request("POST", self._base + "/processes", body))

    def list_processes(self):
        self._ensure()
        doc = self._http.request("GET", self._base + "/processes")
        items = doc.get("processes", []) if isinstance(doc, dict) else doc
        return [Record(p) for p in items]

    def get_process(self, process_id):
        self._ensure()
        return Record(self._http.request("GET", self._proc_path(process_id)))

    def get_process_logs(self, process_id):
        """Output so far: {stdout, stderr}."""
        self._ensure()
        return Record(self._http.request("GET", self._proc_path(process_id) + "/logs"))

    def stream_process_logs(self, process_id, on_stdout=None, on_stderr=None):
        """Follow a process's output until it exits; yields (event, data) pairs.

        Events are `stdout`/`stderr` ({"text"}) and a final one (e.g. `exit`). The callbacks,
        when given, are called too. Iterate the generator to drive it.
        """
        self._ensure()
        for event, data in self._http.stream("GET", self._proc_path(process_id) + "/logs",
                                             None, None):
            data = data or {}
            if event == "stdout" and on_stdout:
                on_stdout(data.get("text", ""))
            elif event == "stderr" and on_stderr:
                on_stderr(data.get("text", ""))
            yield event, data

    def write_stdin(self, process_id, data, eof=False):
        """Write data (str, or bytes sent as base64) to the stdin of a process started with
        stdin=True; eof=True closes it after data. Returns {id, accepted, open, held}.
        The daemon holds at most --process-stdin-bytes the process has not read: a write
        past that raises LimitReachedError (429) and nothing of it was written; retry once the
        process reads."""
        self._ensure()
        if isinstance(data, (bytes, bytearray, memoryview)):
            body = {"data": base64.b64encode(bytes(data)).decode(), "encoding": "base64"}
        else:
            body = {"data": data}
        if eof:
            body["eof"] = True
        return Record(self._http.request("POST", self._proc_path(process_id) + "/stdin", body))

    def kill_process(self, process_id):
        self._ensure()
        return self._http.request("DELETE", self._proc_path(process_id))

    def _proc_path(self, process_id):
        pid = process_id if isinstance(process_id, str) else process_id["id"]
        return self._base + "/processes/" + quote(pid)
