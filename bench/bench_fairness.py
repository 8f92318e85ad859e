"""Fairness: what one idle tenant sees while other tenants misbehave, against the same daemon idle.

One daemon. A victim sandbox is measured twice in the same run, first with the daemon otherwise
idle, then while four hostile tenants run at once, each from its own client process:
- cpu:     a sandbox at `cpus: 0.05` running CPU burners (background processes and a Python
           busy loop) and starting `true` through its own init in a loop, so its init is starved;
- flood:   a sandbox whose commands print flat out (NUL bytes, plain and streamed), so the
           daemon has output to buffer and escape on its behalf;
- create:  a sandbox at `cpus: 0.05` creating and deleting Python contexts in a loop;
- conns:   a client holding more idle connections open than the daemon's connection cap.
The victim's figures, each a median and p99 over the same request sequence in both phases:
`GET /v1/health` on a new connection; `1+1` round trip in a Python context; creating a Python context (until it
answers `1+1`); `exec` of `true`. Goal (issue 11): p99 loaded within 3x of p99 idle.

Standalone: /usr/bin/python3 bench/bench_fairness.py --build build [--quick]
(also `make bench`, module "fairness"). Nothing asserts a time.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from client import Http  # noqa: E402
from common import median, p99  # noqa: E402
from util import Section, daemon, stop  # noqa: E402

ATTACKS = ["cpu", "flood", "create", "conns"]
SLOW = {"limits": {"cpus": 0.05}}
# More idle connections than the daemon's default connection cap (4096): a flood must not lock
# a new client out.
CONNS = 5000


def attack(kind, port, seconds):
    """Runs one hostile tenant until `seconds` have passed (in its own process)."""
    t_end = time.time() + seconds
    h = Http(port, timeout=120)
    sid = "attack-" + kind
    if kind == "conns":
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (CONNS + 64, CONNS + 64))
        held = []
        for _ in range(CONNS):
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        while time.time() < t_end:
            time.sleep(0.2)
        return
    h.json("PUT", "/v1/sandboxes/" + sid, SLOW if kind in ("cpu", "create") else None)
    if kind == "cpu":
        for _ in range(4):
            h.json("POST", "/v1/sandboxes/%s/processes" % sid,
                   {"command": "while :; do :; done"})
        cid = h.json("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": "python"})["id"]
        burn = Http(port, timeout=seconds + 60)
        burn.send_raw(Http.encode("POST", "/v1/sandboxes/%s/execute" % sid,
                                  {"code": "while True: pass", "context": cid,
                                   "timeoutMs": int(seconds * 1000) + 5000}))
        while time.time() < t_end:
            h.request("POST", "/v1/sandboxes/%s/exec" % sid, {"command": "true"})
    elif kind == "flood":
        big = {"command": "head -c 50000000 /dev/zero"}
        while time.time() < t_end:
            h.request("POST", "/v1/sandboxes/%s/exec" % sid, big)
            h.request("POST", "/v1/sandboxes/%s/exec" % sid, big, accept="text/event-stream")
    elif kind == "create":
        while time.time() < t_end:
            st, body = h.request("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": "python"})
            if st == 201:
                import json
                cid = json.loads(body)["id"]
                h.request("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sid, cid))


def measure(port, seconds, every):
    """The victim's request sequence, repeated for `seconds`; returns {figure: [ms, ...]} and
    the number of requests that failed (a refused or timed-out connection counts as 10 s)."""
    h = Http(port, timeout=120)
    h.json("PUT", "/v1/sandboxes/victim")
    cid = h.json("POST", "/v1/sandboxes/victim/contexts", {"language": "python"})["id"]
    rtt_raw = Http.encode("POST", "/v1/sandboxes/victim/execute", {"code": "1+1", "context": cid})
    out = {"health": [], "rtt": [], "create": [], "exec": []}
    failed = [0]

    def timed(key, fn):
        t = time.perf_counter()
        try:
            fn()
            out[key].append((time.perf_counter() - t) * 1e3)
        except (OSError, RuntimeError):
            failed[0] += 1
            out[key].append(10000.0)

    def one_health():      # a new client: a fresh connection each time
        c = Http(port, timeout=10)
        try:
            c.json("GET", "/v1/health")
        finally:
            c.close()

    def one_rtt():
        h.send_raw(rtt_raw)
        st, body = h.read_response()
        if st != 200 or b'"2"' not in body:
            raise RuntimeError("1+1 failed: %d %s" % (st, body[:200]))

    def one_create():
        c = h.json("POST", "/v1/sandboxes/victim/contexts", {"language": "python"})["id"]
        h.json("POST", "/v1/sandboxes/victim/execute", {"code": "1+1", "context": c})
        h.json("DELETE", "/v1/sandboxes/victim/contexts/" + c)

    def one_exec():
        st, body = h.request("POST", "/v1/sandboxes/victim/exec", {"command": "true"})
        if st != 200:
            raise RuntimeError("exec failed: %d %s" % (st, body[:200]))

    t_end = time.time() + seconds
    i = 0
    while time.time() < t_end:
        timed("health", one_health)
        timed("rtt", one_rtt)
        if i % every == 0:
            timed("create", one_create)
            timed("exec", one_exec)
        i += 1
    h.json("DELETE", "/v1/sandboxes/victim")
    h.close()
    return out, failed[0]


FIGURES = [("health", "`GET /v1/health`"), ("rtt", "`1+1` round trip"),
           ("create", "Python context creation (+ first `1+1`)"), ("exec", "`exec` of `true`")]


def run(opts):
    sec = Section("fairness", "Fairness: an idle tenant beside hostile ones", __doc__)
    seconds, every = (15, 5) if opts.quick else (45, 5)
    proc, port = daemon(opts.build, sec)
    try:
        idle, idle_failed = measure(port, seconds, every)
        attackers = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--attack", k,
                                       "--port", str(port), "--seconds", str(seconds + 30)])
                     for k in ATTACKS]
        time.sleep(3)           # let the attacks reach their steady state
        loaded, loaded_failed = measure(port, seconds, every)
        for a in attackers:
            a.kill()
            a.wait()
    finally:
        stop(proc)
    worst = 0
    for key, name in FIGURES:
        ratio = p99(loaded[key]) / p99(idle[key])
        worst = max(worst, ratio)
        sec.row(name + ", p99 within 3x of idle", loaded[key], "ms", "same daemon idle",
                idle[key], target="p99 ≤ 3× idle", met=ratio <= 3, headline=key == "rtt")
    sec.note("Each phase %d s; loaded: the attacks %s at once (%d connections held). Rounds: "
             "%d idle, %d loaded; failed requests: %d idle, %d loaded. Worst p99 ratio %.2f×."
             % (seconds, ", ".join(ATTACKS), CONNS, len(idle["rtt"]), len(loaded["rtt"]),
                idle_failed, loaded_failed, worst))
    return sec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--attack", choices=ATTACKS)
    ap.add_argument("--port", type=int)
    ap.add_argument("--seconds", type=float, default=60)
    o = ap.parse_args()
    if o.attack:
        attack(o.attack, o.port, o.seconds)
        return 0
    o.build = os.path.abspath(o.build)
    sec = run(o)
    print("%-48s %22s %22s %8s" % ("figure (ms)", "idle p50 / p99", "loaded p50 / p99", "ratio"))
    for r in sec.rows:
        print("%-48s %10.2f / %9.2f %10.2f / %9.2f %7.2fx" % (
            r["figure"][:48], r["bvalue"], r["bp99"], r["value"], r["p99"], r["p99"] / r["bp99"]))
    for n in sec.notes:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
