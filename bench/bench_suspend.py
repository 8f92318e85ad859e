"""Suspend and resume of a sandbox that is doing something, against the kernel's freezer alone.

The sandbox runs a Python context (numpy imported, a 50 MB array in memory) and a
background process that burns CPU (`while :; do :; done`). Each round: POST …/suspend until
its 200 (every task frozen), then POST …/resume until its 200, on one keep-alive connection;
then an execute in the context proves it kept its state. "Implicit resume" is a POST
…/execute of `1` in the suspended sandbox (the request resumes it first) against the same
execute in the running sandbox.
Baseline in the same run, from this Python process: a cgroup made by hand in the same
freezer hierarchy (v1 freezer.state, or v2 cgroup.freeze) holding a busy loop and a sleeping
Python process, frozen (write, then poll every 0.1 ms until FROZEN) and thawed.
"""
import os
import subprocess
import sys
import time

from client import Http
from util import Section, bar_chart, daemon, stop


def freezer_root():
    if os.path.isdir("/sys/fs/cgroup/freezer"):
        return "/sys/fs/cgroup/freezer", 1
    return "/sys/fs/cgroup", 2


def direct_freezer(n):
    """(freeze ms, thaw ms) of a hand-made group with a busy loop and a sleeping python."""
    root, version = freezer_root()
    cg = os.path.join(root, "bench-suspend-%d" % os.getpid())
    os.makedirs(cg, exist_ok=True)
    procs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"]),
             subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])]
    state, frozen_word = (("freezer.state", "FROZEN"), "FROZEN") if version == 1 else \
        (("cgroup.freeze", "1"), "frozen 1")
    try:
        for p in procs:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(p.pid))

        def write(v):
            with open(os.path.join(cg, state[0]), "w") as f:
                f.write(v)

        def frozen():
            name = "freezer.state" if version == 1 else "cgroup.events"
            with open(os.path.join(cg, name)) as f:
                return frozen_word in f.read()

        fr, th = [], []
        for _ in range(n):
            t = time.perf_counter()
            write(state[1])
            while not frozen():
                time.sleep(0.0001)
            t1 = time.perf_counter()
            write("THAWED" if version == 1 else "0")
            t2 = time.perf_counter()
            fr.append((t1 - t) * 1e3)
            th.append((t2 - t1) * 1e3)
            time.sleep(0.01)
        return fr, th
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for _ in range(100):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.01)


def run(opts):
    sec = Section("suspend", "Suspend and resume", __doc__)
    n = 20 if opts.quick else 100
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    sid = "/v1/sandboxes/susp"
    try:
        h.json("PUT", sid)
        h.json("POST", sid + "/execute",
               {"code": "import numpy as np; a = np.ones(50_000_000 // 8); int(a.sum())"})
        h.json("POST", sid + "/processes", {"command": "while :; do :; done"})
        time.sleep(0.5)
        sus, res, implicit, running = [], [], [], []
        for i in range(n + 5):
            t = time.perf_counter()
            info = h.json("POST", sid + "/suspend")
            t1 = time.perf_counter()
            assert info["state"] == "suspended", info
            info = h.json("POST", sid + "/resume")
            t2 = time.perf_counter()
            assert info["state"] == "running", info
            if i >= 5:
                sus.append((t1 - t) * 1e3)
                res.append((t2 - t1) * 1e3)
            time.sleep(0.01)
        out = h.json("POST", sid + "/execute", {"code": "int(a.sum())"})
        assert out["results"][0]["text"] == "6250000", out
        for i in range(n + 5):
            h.json("POST", sid + "/suspend")
            t = time.perf_counter()
            h.json("POST", sid + "/execute", {"code": "1"})
            t1 = time.perf_counter()
            h.json("POST", sid + "/execute", {"code": "1"})
            t2 = time.perf_counter()
            if i >= 5:
                implicit.append((t1 - t) * 1e3)
                running.append((t2 - t1) * 1e3)
    finally:
        h.close()
        stop(proc)
    fr, th = direct_freezer(n)
    sec.row("suspend (POST …/suspend → 200, all frozen)", sus, "ms",
            "kernel freezer: write + poll until frozen", fr, headline=True)
    sec.row("resume (POST …/resume → 200)", res, "ms", "kernel freezer: thaw write", th,
            headline=True)
    sec.row("execute `1` in a suspended sandbox (implicit resume)", implicit, "ms",
            "execute `1` in the running sandbox", running)
    from common import median as med
    bar_chart(sec, "suspend.png", "Suspend and resume (median)",
              ["sandboxd suspend", "sandboxd resume", "kernel freeze", "kernel thaw"],
              [med(sus), med(res), med(fr), med(th)], "ms")
    return sec
