"""`AsyncSandbox`: the `Sandbox` API for asyncio code (`await sbx.run_code(...)`).

Design: each call runs the blocking standard-library transport of `Sandbox` in a worker
thread (`asyncio.to_thread`), so the event loop never blocks and many runs can proceed at
once (each request has its own connection). Callbacks (`on_stdout`, `on_stderr`,
`on_result`, `on_error`) run on the event loop, in event order, and may be plain functions
or coroutine functions; the worker waits for each before reading the next event, so a slow
callback slows the stream instead of piling events up. Cancelling an awaiting `run_code`
(e.g. `asyncio.wait_for` timing out) interrupts the run in the sandbox (DELETE of the
execution, as Ctrl-C does in the sync client) and stops calling the callbacks. Methods,
arguments and return values are those of `Sandbox`; `stream_process_logs` is an async
generator. `AsyncSandbox.sync` is the underlying `Sandbox`.
"""
import asyncio
import functools
import inspect

from .sandbox import Sandbox

# Methods that are the same call, awaited (no callbacks).
_PLAIN = ("create", "info", "destroy", "health", "create_code_context", "list_code_contexts",
          "get_code_context", "delete_code_context", "restart_code_context",
          "interrupt_code_context", "get_execution", "cancel_execution", "write_file",
          "read_file", "list_files", "delete_file", "mkdir", "move_file", "start_process",
          "list_processes", "get_process", "get_process_logs", "write_stdin", "kill_process")
_CALLBACKS = ("on_stdout", "on_stderr", "on_result", "on_error")


class _Bridge:
    """Turns the caller's callbacks into ones a worker thread can call: each is run on the
    loop and awaited if it returns an awaitable; after `stop()` they do nothing."""

    def __init__(self, loop):
        self.loop = loop
        self.stopped = False

    def stop(self):
        self.stopped = True

    def wrap(self, cb):
        if cb is None:
            return None

        async def on_loop(arg):
            out = cb(arg)
            if inspect.isawaitable(out):
                await out

        def from_thread(arg):
            if not self.stopped:
                asyncio.run_coroutine_threadsafe(on_loop(arg), self.loop).result()
        return from_thread

    def wrap_all(self, kwargs):
        return {k: (self.wrap(v) if k in _CALLBACKS else v) for k, v in kwargs.items()}


def _plain(name):
    method = getattr(Sandbox, name)

    @functools.wraps(method)
    async def call(self, *args, **kwargs):
        return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)
    return call


class AsyncSandbox:
    """`Sandbox(url, sandbox_id, token, request_timeout, **create_options)` for asyncio."""

    def __init__(self, url=None, sandbox_id="default", token=None, request_timeout=60.0,
                 **create_options):
        self.sync = Sandbox(url, sandbox_id, token, request_timeout, **create_options)
        self.id = sandbox_id

    def __repr__(self):
        return "AsyncSandbox(%r, %r)" % (self.sync._http.url, self.id)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    @classmethod
    async def list(cls, url=None, token=None):
        return await asyncio.to_thread(Sandbox.list, url, token)

    async def run_code(self, code, *args, **kwargs):
        """`Sandbox.run_code`, awaited; see the module docstring for callbacks and cancel."""
        bridge = _Bridge(asyncio.get_running_loop())
        hdrs = {}
        work = asyncio.ensure_future(asyncio.to_thread(
            self.sync.run_code, code, *args, _hdrs=hdrs, **bridge.wrap_all(kwargs)))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            bridge.stop()
            work.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved
            eid = hdrs.get("x-execution-id")
            if eid:
                try:
                    await asyncio.to_thread(self.sync.cancel_execution, eid)
                except Exception:  # best effort, as Ctrl-C in the sync client
                    pass
            raise

    async def attach(self, execution_id, *args, **kwargs):
        bridge = _Bridge(asyncio.get_running_loop())
        return await asyncio.to_thread(self.sync.attach, execution_id, *args,
                                       **bridge.wrap_all(kwargs))

    async def exec(self, command, *args, **kwargs):
        bridge = _Bridge(asyncio.get_running_loop())
        return await asyncio.to_thread(self.sync.exec, command, *args,
                                       **bridge.wrap_all(kwargs))

    async def stream_process_logs(self, process_id, on_stdout=None, on_stderr=None):
        """Async generator of (event, data) until the process exits."""
        bridge = _Bridge(asyncio.get_running_loop())
        gen = self.sync.stream_process_logs(process_id, bridge.wrap(on_stdout),
                                            bridge.wrap(on_stderr))
        done = object()
        try:
            while True:
                item = await asyncio.to_thread(next, gen, done)
                if item is done:
                    return
                yield item
        finally:
            bridge.stop()
            try:
                await asyncio.to_thread(gen.close)
            except ValueError:  # still inside next() in its thread (we were cancelled)
                pass


for _name in _PLAIN:
    setattr(AsyncSandbox, _name, _plain(_name))
del _name
