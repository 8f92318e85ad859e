"""Soak: a daemon under mixed load for a bounded time, with faults, and what it kept.

    /usr/bin/python3 tests/soak/soak.py --build build --minutes 10 [--threads 6]
                                        [--restarts 2] [--seed 1] [--json out.json]

Several threads, each with its own sandboxes, pick operations at random from OPS (runs,
streamed runs, commands, file writes read back, contexts killed from inside, OOMs,
timeouts, clients that disconnect mid-stream, suspend/resume) and check each outcome
exactly (the result's text, the error's name, the file's bytes). --restarts N stops the
daemon with SIGTERM N times, evenly spread, and starts it again on the same state dir.

Every operation ends in one class: "ok", or "<op>:<what went wrong>". Classes that name a
feature this daemon does not have (a 404 NOT_FOUND for its route: "unsupported:…") and
connection errors while the daemon restarts ("restart:…") are counted apart from failures.
The report gives the operations run, failures by class with a first example, and the
daemon's RSS and open fds at the start and the end (of its first and last incarnation).
Exit status: 0 when no operation failed (unsupported and restart classes aside), else 1.
"""
import argparse
import collections
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


class Daemon:
    """One sandboxd on a free loopback port; restartable on the same state dir."""

    def __init__(self, build, state, flags):
        self.binary = os.path.join(build, "sandboxd")
        self.state, self.flags = state, flags
        self.proc, self.port, self.log = None, None, None
        self.incarnations = []  # dicts: pid, start/end rss and fds, exit, stop seconds

    def start(self):
        log_path = os.path.join(self.state, "daemon-%d.log" % len(self.incarnations))
        self.log = open(log_path, "w+b")
        self.proc = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0", "--state-dir",
             os.path.join(self.state, "state"), "--log-level", "warn", *self.flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            with open(log_path, "rb") as f:
                m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError("sandboxd exited at start: see " + log_path)
            time.sleep(0.05)
        else:
            raise RuntimeError("sandboxd did not start: see " + log_path)
        self.wait_python()
        self.incarnations.append({"pid": self.proc.pid, "start": self.sample(), "log": log_path})

    def wait_python(self):
        deadline = time.time() + 60
        request(self, "PUT", "/v1/sandboxes/soak-warmup")
        while time.time() < deadline:
            st, _ = request(self, "POST", "/v1/sandboxes/soak-warmup/contexts",
                            {"language": "python"})
            if st == 201:
                break
            time.sleep(0.1)
        request(self, "DELETE", "/v1/sandboxes/soak-warmup")

    def sample(self):
        pid = self.proc.pid
        rss = 0
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
        return {"rssBytes": rss, "fds": len(os.listdir("/proc/%d/fd" % pid))}

    def stop(self, timeout=60):
        inc = self.incarnations[-1]
        inc["end"] = self.sample()
        t = time.time()
        self.proc.send_signal(signal.SIGTERM)
        try:
            inc["exit"] = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            inc["exit"] = "killed after %ds" % timeout
            self.proc.wait()
        inc["stopSeconds"] = round(time.time() - t, 2)
        self.log.close()


def request(d, method, path, body=None, headers=None, timeout=60):
    """(status, parsed JSON or raw bytes). Connection errors raise OSError."""
    c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout)
    try:
        hdrs = dict(headers or {})
        data = body
        if isinstance(body, (dict, list)):
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=hdrs)
        r = c.getresponse()
        raw = r.read()
        if r.getheader("Content-Type", "").startswith("application/json") and raw:
            return r.status, json.loads(raw)
        return r.status, raw
    finally:
        c.close()


class Failure(Exception):
    """An operation's outcome other than the expected one: its class and an example."""

    def __init__(self, cls, example=""):
        super().__init__(cls)
        self.cls, self.example = cls, str(example)[:300]


def expect(st, out, want, what):
    if st == want:
        return
    code = out.get("code", "") if isinstance(out, dict) else ""
    if st == 404 and code == "NOT_FOUND":
        raise Failure("unsupported:" + what, out)
    if st == 404 and code == "SANDBOX_NOT_FOUND":
        raise Failure("lost:sandbox", out)
    raise Failure("http-%d-%s" % (st, code or "?"), out)


class Worker:
    def __init__(self, d, n, rng):
        self.d, self.n, self.rng = d, n, rng
        self.sid, self.oom_sid = "soak-%d" % n, "soak-oom-%d" % n
        self.files = 0
        self.made = False

    def ensure(self):
        """Get-or-create the sandboxes; "lost" when one made before is gone (a restart
        that did not keep it: durability not in this daemon)."""
        lost = False
        if self.made:
            st, _ = request(self.d, "GET", "/v1/sandboxes/" + self.sid)
            lost = st == 404
        for sid, limits in ((self.sid, {"memoryMb": 512}), (self.oom_sid, {"memoryMb": 160})):
            st, out = request(self.d, "PUT", "/v1/sandboxes/" + sid, {"limits": limits})
            if st not in (200, 201):
                raise Failure("setup:http-%d" % st, out)
        self.made = True
        return lost

    def execute(self, code, sid=None, **kw):
        st, out = request(self.d, "POST", "/v1/sandboxes/%s/execute" % (sid or self.sid),
                          {"code": code, **kw})
        expect(st, out, 200, "execute")
        return out

    # ---- operations: return None (ok) or raise Failure ----

    def op_run(self):
        out = self.execute("x = sum(range(1000)); x")
        texts = [r.get("text") for r in out["results"] if r.get("isMainResult")]
        if out["error"] or texts != ["499500"]:
            raise Failure("wrong-result", out)

    def op_stream_run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=60)
        try:
            c.request("POST", "/v1/sandboxes/%s/execute" % self.sid,
                      json.dumps({"code": "for i in range(5): print(i)"}),
                      {"Accept": "text/event-stream", "Content-Type": "application/json"})
            r = c.getresponse()
            body = r.read().decode()
        finally:
            c.close()
        if r.status != 200:
            raise Failure("http-%d" % r.status, body)
        events = re.findall(r"^event: (\w+)$", body, re.M)
        text = "".join(json.loads(m)["text"] for e, m in re.findall(
            r"^event: (stdout)\n(?:id: \d+\n)?data: (.*)$", body, re.M))
        if not events or events[-1] != "end" or text != "0\n1\n2\n3\n4\n":
            raise Failure("wrong-stream", body[-300:])

    def op_exec(self):
        st, out = request(self.d, "POST", "/v1/sandboxes/%s/exec" % self.sid,
                          {"command": "echo soak $((6*7))"})
        expect(st, out, 200, "exec")
        if out["stdout"] != "soak 42\n" or out["exitCode"] != 0:
            raise Failure("wrong-output", out)

    def op_file_write(self):
        self.files += 1
        data = os.urandom(self.rng.randint(1, 256 << 10))
        path = "/v1/sandboxes/%s/files/soak/f%d.bin" % (self.sid, self.files % 20)
        st, out = request(self.d, "PUT", path, data,
                          {"Content-Type": "application/octet-stream"})
        if st not in (200, 201):
            expect(st, out, 201, "files")
        st, back = request(self.d, "GET", path, headers={"Accept": "*/*"})
        expect(st, back, 200, "files")
        if back != data:
            raise Failure("wrong-bytes", "%d bytes back of %d" % (len(back), len(data)))

    def op_context_kill(self):
        st, ctx = request(self.d, "POST", "/v1/sandboxes/%s/contexts" % self.sid, {})
        expect(st, ctx, 201, "contexts")
        try:
            out = self.execute("import os; os.kill(os.getpid(), 9)", context=ctx["id"])
            if not out["error"] or out["error"]["name"] != "ContextDied":
                raise Failure("wrong-error", out)
            out = self.execute("1 + 1", context=ctx["id"])
            if out["error"]:
                raise Failure("not-restarted", out)
        finally:
            request(self.d, "DELETE", "/v1/sandboxes/%s/contexts/%s" % (self.sid, ctx["id"]))

    def op_oom(self):
        out = self.execute("b = bytearray(400 << 20)", sid=self.oom_sid)
        if not out["error"] or out["error"]["name"] not in ("OutOfMemoryError", "MemoryError"):
            raise Failure("wrong-error", out)

    def op_timeout(self):
        out = self.execute("import time; time.sleep(30)", timeoutMs=300)
        if not out["error"] or out["error"]["name"] != "TimeoutError":
            raise Failure("wrong-error", out)

    def op_disconnect(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=30)
        body = json.dumps({"code": "import time\nfor i in range(40):\n print(i)\n"
                                   " time.sleep(0.02)"}).encode()
        s.sendall(b"POST /v1/sandboxes/%s/execute HTTP/1.1\r\nHost: x\r\n"
                  b"Accept: text/event-stream\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % (self.sid.encode(), len(body)) + body)
        got = s.recv(4096)
        s.close()  # gone mid-stream
        if not got.startswith(b"HTTP/1.1 "):
            raise Failure("no-answer", got)
        self.op_run()  # the sandbox goes on serving

    def op_suspend_resume(self):
        st, out = request(self.d, "POST", "/v1/sandboxes/%s/suspend" % self.sid)
        expect(st, out, 200, "suspend")
        if out.get("state") != "suspended":
            raise Failure("not-suspended", out)
        self.op_run()  # resumes it implicitly
        st, out = request(self.d, "GET", "/v1/sandboxes/" + self.sid)
        if st != 200 or out.get("state") != "running":
            raise Failure("not-resumed", out)

    def op_reattach(self):
        st, out = request(self.d, "POST", "/v1/sandboxes/%s/execute" % self.sid, {"code": "2"})
        expect(st, out, 200, "execute")
        st, ex = request(self.d, "GET", "/v1/sandboxes/%s/executions/%s" % (self.sid, out["id"]))
        expect(st, ex, 200, "executions")


# (operation, weight)
OPS = [("run", 30), ("stream_run", 12), ("exec", 15), ("file_write", 10), ("context_kill", 4),
       ("oom", 3), ("timeout", 4), ("disconnect", 6), ("suspend_resume", 8), ("reattach", 3)]


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_op = collections.defaultdict(collections.Counter)
        self.examples = {}

    def add(self, op, cls, example=""):
        with self.lock:
            self.by_op[op][cls] += 1
            key = "%s:%s" % (op, cls) if cls != "ok" else None
            if key and key not in self.examples:
                self.examples[key] = example


def worker_loop(d, n, seed, deadline, tally, restarting):
    rng = random.Random(seed * 1000 + n)
    w = Worker(d, n, rng)
    names = [o for o, _ in OPS]
    weights = [x for _, x in OPS]
    need_setup = True
    while time.time() < deadline:
        op = rng.choices(names, weights)[0]
        try:
            if need_setup:
                if w.ensure():
                    tally.add("setup", "unsupported:durability", "a sandbox made before "
                              "the restart was gone after it")
                need_setup = False
            getattr(w, "op_" + op)()
            tally.add(op, "ok")
        except Failure as f:
            if f.cls.startswith("lost:"):
                need_setup = True
            tally.add(op, f.cls, f.example)
        except (OSError, http.client.HTTPException) as e:
            cls = "restart:" + type(e).__name__ if restarting.is_set() else \
                "exception-" + type(e).__name__
            tally.add(op, cls, repr(e))
            need_setup = True
            if restarting.is_set():
                time.sleep(0.2)
        except Exception as e:  # noqa: BLE001 - a broken answer is a failure class too
            tally.add(op, "exception-" + type(e).__name__, repr(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="dir with the sandboxd binary")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--threads", type=int, default=6)
    ap.add_argument("--restarts", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the report here too")
    ap.add_argument("--flag", action="append", default=[],
                    help="extra daemon flag (repeat: --flag=--max-sandboxes --flag=64)")
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="sbx-soak-")
    d = Daemon(os.path.abspath(a.build), state, a.flag)
    d.start()
    t0 = time.time()
    deadline = t0 + a.minutes * 60
    tally, restarting = Tally(), threading.Event()
    threads = [threading.Thread(target=worker_loop, args=(d, i, a.seed, deadline, tally,
                                                          restarting)) for i in range(a.threads)]
    for t in threads:
        t.start()
    for k in range(a.restarts):
        time.sleep(max(0.0, t0 + (k + 1) * (deadline - t0) / (a.restarts + 1) - time.time()))
        restarting.set()
        d.stop()
        d.start()
        time.sleep(2)  # let the workers see the new daemon before counting errors as failures
        restarting.clear()
    for t in threads:
        t.join()
    d.stop()
    return report(a, d, tally, time.time() - t0, state)


def report(a, d, tally, seconds, state):
    total = collections.Counter()
    failures = collections.Counter()
    apart = collections.Counter()
    for op, c in tally.by_op.items():
        for cls, n in c.items():
            total[op] += n
            if cls == "ok":
                continue
            (apart if cls.startswith(("unsupported:", "restart:")) else failures)[
                "%s:%s" % (op, cls)] += n
    first, last = d.incarnations[0], d.incarnations[-1]
    out = {
        "minutes": round(seconds / 60, 2), "threads": a.threads, "restarts": a.restarts,
        "operations": sum(total.values()), "byOperation": dict(total),
        "ok": sum(c["ok"] for c in tally.by_op.values()),
        "failures": dict(failures), "notCounted": dict(apart),
        "examples": {k: v for k, v in tally.examples.items()},
        "daemon": {"rssBytes": [first["start"]["rssBytes"], last["end"]["rssBytes"]],
                   "fds": [first["start"]["fds"], last["end"]["fds"]],
                   "incarnations": d.incarnations},
        "stateDir": state,
    }
    print("soak: %.1f min, %d threads, %d restarts: %d operations, %d ok, %d failed, "
          "%d not counted (unsupported features, restarts)" % (
              seconds / 60, a.threads, a.restarts, out["operations"], out["ok"],
              sum(failures.values()), sum(apart.values())))
    for op, n in sorted(total.items()):
        print("  %-15s %6d" % (op, n))
    for title, c in (("failures by class", failures), ("not counted", apart)):
        if c:
            print(title + ":")
            for k, n in c.most_common():
                print("  %-45s %6d   e.g. %s" % (k, n, tally.examples.get(k, "")[:120]))
    print("daemon RSS %.1f MiB -> %.1f MiB, fds %d -> %d (first start -> last end)" % (
        first["start"]["rssBytes"] / 1048576, last["end"]["rssBytes"] / 1048576,
        first["start"]["fds"], last["end"]["fds"]))
    for i, inc in enumerate(d.incarnations):
        print("  incarnation %d: pid %d, RSS %.1f -> %.1f MiB, fds %d -> %d, exit %s in %ss" % (
            i, inc["pid"], inc["start"]["rssBytes"] / 1048576, inc["end"]["rssBytes"] / 1048576,
            inc["start"]["fds"], inc["end"]["fds"], inc.get("exit"), inc.get("stopSeconds")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
