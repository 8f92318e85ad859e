"""Test harness: a context process driven over a real channel.

``Context`` spawns ``/usr/bin/python3 -m sandboxd_runtime`` with a socketpair
end on fd 3, pipes on fd 1/2 and /dev/null on fd 0, and reads them the way the
daemon does: before handling a channel message it drains both pipes, so the
event list shows output and results in the order the protocol promises.
"""

import fcntl
import json
import os
import selectors
import socket
import subprocess
import sys
import time
import uuid

import pytest

PYTHON = "/usr/bin/python3"
RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Run:
    """What one execute produced: ``events`` in order, plus shortcuts."""

    def __init__(self, events):
        self.events = events
        self.results = [e[1] for e in events if e[0] == "result"]
        errors = [e[1] for e in events if e[0] == "error"]
        assert len(errors) <= 1
        self.error = errors[0] if errors else None
        self.count = events[-1][1]
        self.stdout = "".join(e[1] for e in events if e[0] == "stdout")
        self.stderr = "".join(e[1] for e in events if e[0] == "stderr")

    @property
    def kinds(self):
        """Event types in order, repeats merged (a print may be two writes)."""
        kinds = []
        for kind, _ in self.events:
            if not kinds or kinds[-1] != kind or kind not in ("stdout", "stderr"):
                kinds.append(kind)
        return kinds

    @property
    def main(self):
        mains = [r for r in self.results if r.get("isMainResult")]
        assert len(mains) <= 1
        return mains[0] if mains else None


class Context:
    """One context process and its channel."""

    def __init__(self, env=None):
        parent, child = socket.socketpair()
        self.sock = parent
        cfd = child.fileno()
        full_env = dict(os.environ, PYTHONPATH=RUNTIME_DIR, **(env or {}))
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "sandboxd_runtime"], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
            pass_fds=(cfd, 3), preexec_fn=lambda: os.dup2(cfd, 3))
        child.close()
        for f in (self.proc.stdout, self.proc.stderr):
            fl = fcntl.fcntl(f, fcntl.F_GETFL)
            fcntl.fcntl(f, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "stdout")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "stderr")
        self.sel.register(self.sock, selectors.EVENT_READ, "channel")
        self.buf = b""
        self.pending = []  # decoded channel messages not yet handled
        self.ready = self.next_message(timeout=30)
        assert self.ready["type"] == "ready", self.ready

    def _drain(self, name, events):
        stream = getattr(self.proc, name)
        while True:
            try:
                data = os.read(stream.fileno(), 1 << 16)
            except BlockingIOError:
                return
            if not data:
                self.sel.unregister(stream)
                return
            events.append((name, data.decode("utf-8", "replace")))

    def next_message(self, timeout=20, events=None):
        """Return the next channel message; pipe output goes to ``events``."""
        events = [] if events is None else events
        deadline = time.monotonic() + timeout
        while not self.pending:
            left = deadline - time.monotonic()
            assert left > 0, "timed out waiting for the context"
            for key, _ in self.sel.select(left):
                if key.data != "channel":
                    self._drain(key.data, events)
                    continue
                data = self.sock.recv(1 << 20)
                assert data, "context closed the channel"
                self.buf += data
                *lines, self.buf = self.buf.split(b"\n")
                self.pending += [json.loads(line) for line in lines]
        # the daemon drains fd 1/2 before it handles a message
        self._drain("stdout", events)
        self._drain("stderr", events)
        return self.pending.pop(0)

    def send(self, message):
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def run(self, code, env=None, timeout=20):
        """Execute ``code`` and return its Run."""
        exec_id = uuid.uuid4().hex
        message = {"type": "execute", "id": exec_id, "code": code}
        if env is not None:
            message["envVars"] = env
        self.send(message)
        return self.collect(exec_id, timeout)

    def collect(self, exec_id, timeout=20):
        events = []
        while True:
            msg = self.next_message(timeout, events)
            kind = msg["type"]
            if kind == "stream":        # Python-level output travels on the channel
                events.append((msg["name"], msg["text"]))
                continue
            assert msg.get("id") == exec_id, msg
            if kind == "end":
                events.append(("end", msg["executionCount"]))
                return Run(events)
            events.append((kind, msg.get("result", msg.get("error"))))

    def close(self):
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.fixture(scope="session")
def ctx():
    """A context shared by the tests that tolerate each other's state."""
    context = Context()
    yield context
    context.close()


@pytest.fixture
def fresh():
    """A context of the test's own."""
    context = Context()
    yield context
    context.close()
