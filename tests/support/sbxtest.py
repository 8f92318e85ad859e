"""Shared by the end-to-end and hostile suites: a real sandboxd on a free loopback port.

`daemon` is shared by a whole test module; `make_daemon(*flags)` starts one with its own
flags for tests of limits and settings. Every daemon gets its own state directory and is
stopped with SIGTERM at the end; a daemon that does not exit 0 fails the test that made it.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

BUILD = os.environ.get("SANDBOXD_BUILD") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
BINARY = os.path.join(BUILD, "sandboxd")


class Daemon:
    """One sandboxd process and helpers to talk to it."""

    def __init__(self, *flags, env=None, state=None):
        self.own_state = state is None   # removed by cleanup(): sandboxes outlive a daemon
        self.state = state or tempfile.mkdtemp(prefix="sbx-e2e-")
        self.log_path = os.path.join(self.state, "daemon-%d.log" % time.monotonic_ns())
        self.log = open(self.log_path, "w+b")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [BINARY, "--listen", "127.0.0.1:0", "--state-dir",
             os.path.join(self.state, "state"), *flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        self.port = self._wait_port()
        self.token = None

    def _wait_port(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", self.logs())
            if m:
                return int(m.group(1))
            if self.proc.poll() is not None:
                raise RuntimeError("sandboxd exited: " + self.logs().decode(errors="replace"))
            time.sleep(0.02)
        raise RuntimeError("sandboxd did not start: " + self.logs().decode(errors="replace"))

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read()

    def conn(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """Returns (status, headers dict with lower-case names, body bytes)."""
        own = conn is None
        c = conn or self.conn()
        hdrs = dict(headers or {})
        if self.token and "Authorization" not in hdrs:
            hdrs["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=hdrs)
        r = c.getresponse()
        data = r.read()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
        if own:
            c.close()
        return out

    def json(self, method, path, body=None, headers=None, conn=None):
        status, hdrs, data = self.request(method, path, body, headers, conn)
        return status, json.loads(data) if data else None

    def raw(self, data, timeout=5, until_close=True):
        """Send raw bytes; return everything read until the server closes or times out."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(data)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
                if not until_close and b"\r\n\r\n" in out:
                    break
        except socket.timeout:
            pass
        s.close()
        return out

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("sandboxd did not exit within %ss of SIGTERM" % timeout)
        self.log.close()
        return self.proc.returncode

    def cleanup(self):
        """Remove the state dir this object made (kept sandboxes, their workspace images),
        once the daemon is stopped; the log stays."""
        if self.own_state and self.proc.poll() is not None:
            shutil.rmtree(os.path.join(self.state, "state"), ignore_errors=True)


@pytest.fixture(scope="module")
def daemon():
    d = Daemon()
    yield d
    assert d.stop() == 0, d.logs().decode(errors="replace")[-3000:]
    d.cleanup()


@pytest.fixture
def make_daemon():
    made = []

    def make(*flags, env=None):
        d = Daemon(*flags, env=env)
        made.append(d)
        return d

    yield make
    for d in made:
        assert d.stop() == 0, d.logs().decode(errors="replace")[-3000:]
        d.cleanup()


def sse_events(data):
    """Parse an SSE body into a list of (event, id, data-json)."""
    events = []
    for block in data.decode().split("\n\n"):
        # comment lines (": keep-alive", the heartbeat) are not events
        lines = [ln for ln in block.split("\n") if ln and not ln.startswith(":")]
        if not lines:
            continue
        fields = {}
        for line in lines:
            k, _, v = line.partition(": ")
            fields[k] = v
        events.append((fields.get("event"), int(fields.get("id", 0)), json.loads(fields["data"])))
    return events


class Sandbox:
    """A sandbox on a daemon, with helpers for commands."""

    def __init__(self, daemon, sid, **body):
        self.d = daemon
        self.id = sid
        status, self.info = daemon.json("PUT", "/v1/sandboxes/" + sid, body or None)
        assert status in (200, 201), self.info

    def exec(self, command, **kw):
        body = {"command": command, **kw}
        status, out = self.d.json("POST", "/v1/sandboxes/%s/exec" % self.id, body)
        assert status == 200, out
        return out

    def sh(self, command, **kw):
        """stdout of a command that must succeed."""
        out = self.exec(command, **kw)
        assert out["exitCode"] == 0, out
        return out["stdout"]

    def delete(self):
        return self.d.json("DELETE", "/v1/sandboxes/" + self.id)


@pytest.fixture
def sandbox(daemon, request):
    name = "t-" + request.node.name.replace("[", "-").replace("]", "")[:40]
    name = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name)
    s = Sandbox(daemon, name)
    yield s
    s.delete()


def run(daemon, sid, code, stream=False, **kw):
    """POST …/execute; plain: the JSON body; stream: the list of (event, id, data)."""
    body = {"code": code, **kw}
    if not stream:
        status, out = daemon.json("POST", "/v1/sandboxes/%s/execute" % sid, body)
        assert status == 200, out
        return out
    c = daemon.conn(timeout=120)
    c.request("POST", "/v1/sandboxes/%s/execute" % sid, json.dumps(body),
              {"Accept": "text/event-stream", "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200, r.read()
    events = sse_events(r.read())
    c.close()
    return events


def context(daemon, sid, **body):
    status, ctx = daemon.json("POST", "/v1/sandboxes/%s/contexts" % sid, body)
    assert status == 201, ctx
    return ctx["id"]


def main_text(out):
    mains = [r for r in out["results"] if r.get("isMainResult")]
    return mains[0]["text"] if mains else None
