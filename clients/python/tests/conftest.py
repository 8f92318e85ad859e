"""Fixtures for the SDK tests: a real sandboxd on a free loopback port.

$SANDBOXD_TEST_URL runs the tests against a daemon already running there instead (handy
while debugging; the token test still starts its own). Otherwise the daemon is build/sandboxd (or $SANDBOXD_BUILD/sandboxd), started with --listen
127.0.0.1:0 and a temporary state directory; the port is read from its
"listening on http://127.0.0.1:PORT" line. It is stopped with SIGTERM at the end and must
exit 0. The SDK is imported from this checkout (clients/python), not from site-packages.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("SANDBOXD_BUILD") or os.path.join(REPO, "build")


class Daemon:
    def __init__(self, *flags):
        self.dir = tempfile.mkdtemp(prefix="sbx-pysdk-")
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.log = open(self.log_path, "w+b")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "sandboxd"), "--listen", "127.0.0.1:0",
             "--state-dir", os.path.join(self.dir, "state"), *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while True:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", self.logs())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None or time.time() > deadline:
                self.proc.kill()
                raise RuntimeError("sandboxd did not start: " + self.logs().decode(errors="replace"))
            time.sleep(0.02)
        self.url = "http://127.0.0.1:%d" % self.port

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        rc = self.proc.returncode
        if rc == 0:
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc


class Running:
    """A daemon someone else started ($SANDBOXD_TEST_URL)."""

    def __init__(self, url):
        self.url = url.rstrip("/")


@pytest.fixture(scope="session")
def daemon():
    if os.environ.get("SANDBOXD_TEST_URL"):
        yield Running(os.environ["SANDBOXD_TEST_URL"])
        return
    d = Daemon()
    yield d
    assert d.stop() == 0, d.logs().decode(errors="replace")[-3000:]


@pytest.fixture
def sandbox(daemon, request):
    from sandboxd import Sandbox
    name = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:60]
    sbx = Sandbox(daemon.url, "t-" + name)
    yield sbx
    try:
        sbx.destroy()
    except Exception:
        pass


@pytest.fixture
def make_daemon():
    """make_daemon(*flags) starts a daemon of its own (stopped, and checked, at the end)."""
    made = []

    def make(*flags):
        made.append(Daemon(*flags))
        return made[-1]
    yield make
    for d in made:
        assert d.stop() == 0, d.logs().decode(errors="replace")[-3000:]
