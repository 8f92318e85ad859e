"""A bounded soak of a real daemon: mixed load with kills, OOMs, timeouts, disconnects, restarts.

    /usr/bin/python3 tests/soak/soak.py --build build --minutes 10 [--workers 6]
                                        [--restart-every 90] [--seed 1] [--json out.json]
                                        [--daemon-flags '--reattach-grace-ms 2000']

Several worker threads each own a sandbox and loop over a weighted table of operations (below).
Every operation checks its own outcome exactly (a counter that persists, the bytes of a file, the
lines of a stream, the error name of a kill, an OOM or a timeout) and files it under a class:
`ok`, an expected outcome (`context-died`, `oom`, `timeout`, ...), `restart-window` (the daemon
was being restarted at that moment), or `FAIL:<what>` with a sample kept. A restarter thread
kills the daemon (SIGKILL and SIGTERM alternately) every --restart-every seconds and starts it
again on the same state dir; after each restart every worker checks its sandbox and its file
are still there. At the end the report gives runs per class, and each daemon incarnation's RSS
and open fds at its start (after a warm-up) and at its end. Exit status 1 when any FAIL class
has entries, so the soak can gate a release; it is not part of `make test` (it takes minutes).
"""
import argparse
import collections
import hashlib
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (operation, weight): what a worker does, how often. Kills, OOMs, timeouts and disconnects
# are rarer than plain work, as in real use, but each appears hundreds of times in 10 minutes.
OPS = [
    ("run", 30),          # plain execute: a counter in the context persists and grows by one
    ("stream", 12),       # streamed run: 50 numbered lines, all whole, in order, then end
    ("exec", 12),         # a command: exact stdout and exit code
    ("file", 10),         # write random bytes, read them back identical
    ("mixed_output", 6),  # print + os.write + a child echo, concurrently: no line of two sources
    ("timeout", 5),       # busy loop past timeoutMs: TimeoutError
    ("kill_idle", 4),     # kill -9 the idle context: next run says ContextDied
    ("oom", 3),           # allocate past memoryMb: OutOfMemoryError
    ("disconnect", 5),    # streamed run, client leaves at the first event: context frees up
    ("suspend", 6),       # suspend, then a run resumes it implicitly with its state kept
    ("reattach", 3),      # a finished run read again by its execution id, same result
]

MEMORY_MB = 256


class Daemon:
    """The daemon under soak; restarted in place on the same state dir."""

    def __init__(self, build, state, flags):
        self.build, self.state, self.flags = build, state, flags
        self.lock = threading.Lock()
        self.restarting = threading.Event()
        self.incarnations = []
        self.port = None
        self.proc = None
        self.start()

    def start(self):
        log = open(os.path.join(self.state, "daemon.log"), "ab")
        mark = log.tell()
        self.proc = subprocess.Popen(
            [os.path.join(self.build, "sandboxd"), "--listen", "127.0.0.1:0", "--state-dir",
             os.path.join(self.state, "state"), *self.flags],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            with open(os.path.join(self.state, "daemon.log"), "rb") as f:
                f.seek(mark)
                m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                self.incarnations.append({"pid": self.proc.pid, "start": None, "end": None})
                return
            if self.proc.poll() is not None:
                raise RuntimeError("sandboxd exited at start; see %s/daemon.log" % self.state)
            time.sleep(0.05)
        raise RuntimeError("sandboxd did not start")

    def sample(self):
        """RSS (kB) and open fds of the running daemon."""
        pid = self.proc.pid
        try:
            rss = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%d/status" % pid).read()).group(1))
            fds = len(os.listdir("/proc/%d/fd" % pid))
        except (OSError, AttributeError):
            return None
        return {"rss_kb": rss, "fds": fds}

    def restart(self, sig):
        self.restarting.set()
        try:
            self.incarnations[-1]["end"] = self.sample()
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.incarnations[-1]["exit"] = "did not exit within 30 s of %s" % sig.name
            else:
                self.incarnations[-1]["exit"] = "%s -> %s" % (sig.name, self.proc.returncode)
            self.start()
        finally:
            time.sleep(0.5)
            self.restarting.clear()

    def stop(self):
        self.incarnations[-1]["end"] = self.sample()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
            self.incarnations[-1]["exit"] = "SIGTERM -> %s" % self.proc.returncode
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.incarnations[-1]["exit"] = "did not exit within 30 s of SIGTERM"

    def request(self, method, path, body=None, timeout=60, stream=False):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        hdrs = {"Content-Type": "application/json"}
        if stream:
            hdrs["Accept"] = "text/event-stream"
        c.request(method, path, json.dumps(body) if body is not None else None, hdrs)
        r = c.getresponse()
        if stream:
            return c, r
        data = r.read()
        c.close()
        return r.status, (json.loads(data) if data else None)


class Restarting(Exception):
    """The daemon went away because the restarter took it down."""


class Worker(threading.Thread):
    def __init__(self, n, daemon, deadline, rng, tally):
        super().__init__(daemon=True)
        self.n, self.d, self.deadline, self.rng, self.tally = n, daemon, deadline, rng, tally
        self.sid = "soak-%d" % n
        self.ctx = None
        self.counter = 0
        self.kept = None  # (path, bytes) written before a restart, checked after it
        self.seen_incarnation = 1

    def api(self, method, path, body=None, timeout=60):
        try:
            return self.d.request(method, "/v1/sandboxes/%s%s" % (self.sid, path), body, timeout)
        except (OSError, http.client.HTTPException) as e:
            if self.d.restarting.is_set() or len(self.d.incarnations) != self.seen_incarnation:
                raise Restarting() from e
            raise

    def file(self, outcome, sample=None):
        with self.tally["lock"]:
            self.tally["count"][outcome] += 1
            if sample and len(self.tally["samples"][outcome]) < 5:
                self.tally["samples"][outcome].append(sample)

    def fresh_context(self):
        if self.ctx:  # the old one goes: contexts are capped per sandbox (--max-contexts)
            self.api("DELETE", "/contexts/" + self.ctx)
            self.ctx = None
        status, out = self.api("POST", "/contexts", {"language": "python"})
        if status != 201:
            raise AssertionError("context create %s %s" % (status, out))
        self.ctx, self.counter = out["id"], 0

    def execute(self, code, **kw):
        return self.api("POST", "/execute", {"code": code, "context": self.ctx, **kw}, timeout=120)

    def setup(self):
        status, out = self.d.request("PUT", "/v1/sandboxes/" + self.sid,
                                     {"limits": {"memoryMb": MEMORY_MB, "timeoutMs": 30000}})
        if status not in (200, 201):
            raise AssertionError("sandbox create %s %s" % (status, out))
        self.fresh_context()

    def after_restart(self):
        """A restart keeps the sandbox and its files, not its contexts."""
        self.seen_incarnation = len(self.d.incarnations)
        status, out = self.d.request("GET", "/v1/sandboxes/" + self.sid)
        if status != 200:
            self.file("FAIL:sandbox-lost-on-restart", "%s %s" % (status, out))
            return self.setup()  # so one loss is counted once, not again by every later step
        if self.kept:
            path, data = self.kept
            st, out = self.api("POST", "/exec", {"command": "sha256sum " + path})
            want = hashlib.sha256(data).hexdigest()
            if st != 200 or not out["stdout"].startswith(want):
                return self.file("FAIL:file-lost-on-restart", "%s %s" % (st, out))
        status, out = self.execute("1")
        if status == 404 and "restart" in json.dumps(out):
            self.file("restart-context-404")
        else:
            self.file("FAIL:old-context-after-restart", "%s %s" % (status, out))
        self.fresh_context()

    def run(self):
        ops = [o for o, w in OPS for _ in range(w)]
        try:
            self.setup()
        except Exception as e:  # noqa: BLE001
            return self.file("FAIL:setup", repr(e))
        while time.time() < self.deadline:
            if len(self.d.incarnations) != self.seen_incarnation and not self.d.restarting.is_set():
                try:
                    self.after_restart()
                except Restarting:
                    continue
                except Exception as e:  # noqa: BLE001
                    self.file("FAIL:after-restart", repr(e))
                    continue
            op = self.rng.choice(ops)
            try:
                outcome = getattr(self, "op_" + op)()
                self.file(outcome or "ok:" + op)
            except Restarting:
                self.file("restart-window")
                while self.d.restarting.is_set():
                    time.sleep(0.1)
            except AssertionError as e:
                if self.d.restarting.is_set() or len(self.d.incarnations) != self.seen_incarnation:
                    self.file("restart-window")  # in flight when the daemon was taken down
                    continue
                self.file("FAIL:" + op, str(e)[:400])
                try:
                    if self.d.request("GET", "/v1/sandboxes/" + self.sid)[0] == 404:
                        self.setup()
                    self.fresh_context()
                except Exception:  # noqa: BLE001
                    pass
            except Exception as e:  # noqa: BLE001
                if self.d.restarting.is_set() or len(self.d.incarnations) != self.seen_incarnation:
                    self.file("restart-window")
                else:
                    self.file("FAIL:%s:%s" % (op, type(e).__name__), repr(e)[:400])

    # --- the operations; each returns None for ok, an expected-class name, or raises ---

    def expect_value(self, out, want):
        mains = [r for r in out.get("results", []) if r.get("isMainResult")]
        got = mains[0].get("text") if mains else None
        assert got == want, "wanted %r, got %r (%s)" % (want, got, json.dumps(out)[:300])

    def op_run(self):
        status, out = self.execute("try:\n    n += 1\nexcept NameError:\n    n = 1\nn")
        assert status == 200, "%s %s" % (status, out)
        if self.counter is None and (out.get("error") or {}).get("name") == "ContextDied":
            self.counter = 0  # the death the unread run did not get to report
            return "context-died"
        if out.get("error"):
            raise AssertionError("run error %s" % out["error"])
        if self.counter is None:  # unknown (see op_disconnect): take the context's word
            mains = [r for r in out.get("results", []) if r.get("isMainResult")]
            self.counter = int(mains[0]["text"]) if mains else 0
            return "resync"
        self.counter += 1
        self.expect_value(out, str(self.counter))

    def op_stream(self):
        code = "import time\nfor i in range(50):\n    print('line', i)\n    time.sleep(0.002)\n"
        c, r = self.stream(code)
        events = read_sse(r)
        c.close()
        text = "".join(e[1]["text"] for e in events if e[0] == "stdout")
        want = "".join("line %d\n" % i for i in range(50))
        assert text == want, "stream text %r" % text[:200]
        assert events and events[-1][0] == "end", "last event %r" % (events[-1:],)

    def stream(self, code, **kw):
        try:
            return self.d.request("POST", "/v1/sandboxes/%s/execute" % self.sid,
                                  {"code": code, "context": self.ctx, **kw}, 120, stream=True)
        except (OSError, http.client.HTTPException) as e:
            if self.d.restarting.is_set():
                raise Restarting() from e
            raise

    def op_exec(self):
        word = "w%d" % self.rng.randrange(1 << 30)
        status, out = self.api("POST", "/exec", {"command": "echo %s; exit 3" % word})
        assert status == 200 and out["stdout"] == word + "\n" and out["exitCode"] == 3, out

    def op_file(self):
        data = os.urandom(self.rng.randrange(1, 200000))
        path = "f%d.bin" % self.rng.randrange(4)
        c = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=60)
        try:
            c.request("PUT", "/v1/sandboxes/%s/files/%s" % (self.sid, path), data)
            r = c.getresponse()
            r.read()
            assert r.status in (200, 201), "upload %s" % r.status
            c.request("GET", "/v1/sandboxes/%s/files/%s" % (self.sid, path))
            r = c.getresponse()
            back = r.read()
            assert r.status == 200, "download %s %r" % (r.status, back[:200])
        except (OSError, http.client.HTTPException) as e:
            if self.d.restarting.is_set():
                raise Restarting() from e
            raise
        finally:
            c.close()
        assert back == data, "file %s: %d bytes back, %d written" % (path, len(back), len(data))
        self.kept = ("/workspace/" + path, data)

    def op_mixed_output(self):
        code = ("import os, subprocess, threading\n"
                "def py():\n    for i in range(200): print('py-%03d-' % i + 'p' * 40)\n"
                "def raw():\n    for i in range(200): os.write(1, b'os-%03d-' % i + b'o' * 40 + b'\\n')\n"
                "t = [threading.Thread(target=py), threading.Thread(target=raw)]\n"
                "[x.start() for x in t]\n"
                "subprocess.run(['sh', '-c', 'for i in $(seq 200); do echo sh-$i-sssssssssssssssssss; done'])\n"
                "[x.join() for x in t]\n")
        status, out = self.execute(code)
        assert status == 200 and not out.get("error"), out
        lines = "".join(out["logs"]["stdout"]).split("\n")[:-1]
        bad = [ln for ln in lines if not re.fullmatch(r"py-\d{3}-p{40}|os-\d{3}-o{40}|sh-\d+-s{19}", ln)]
        assert len(lines) == 600 and not bad, "%d lines, mixed: %r" % (len(lines), bad[:3])

    def op_timeout(self):
        status, out = self.execute("while True: pass", timeoutMs=300)
        assert status == 200 and out.get("error", {}).get("name") == "TimeoutError", out
        self.fresh_context()
        return "timeout"

    def op_kill_idle(self):
        status, out = self.execute("import os; os.getpid()")
        assert status == 200, out
        pid = self.expect_pid(out)
        self.api("POST", "/exec", {"command": "kill -9 %s" % pid})
        deadline = time.time() + 20
        while time.time() < deadline:
            status, out = self.execute("1")
            err = (out or {}).get("error") or {}
            if err.get("name") == "ContextDied":
                self.counter = 0
                return "context-died"
            if status == 200 and not err:
                raise AssertionError("killed context answered as if nothing happened: %s" % out)
            time.sleep(0.2)
        raise AssertionError("no ContextDied after kill: %s %s" % (status, out))

    def expect_pid(self, out):
        mains = [r for r in out.get("results", []) if r.get("isMainResult")]
        assert mains, out
        return int(mains[0]["text"])

    def op_oom(self):
        status, out = self.execute("x = bytearray(%d)" % ((MEMORY_MB + 64) << 20))
        name = (out or {}).get("error", {}).get("name")
        assert status == 200 and name == "OutOfMemoryError", "%s %s" % (status, out)
        self.fresh_context()
        return "oom"

    def op_disconnect(self):
        c, r = self.stream("import time\nprint('start', flush=True)\ntime.sleep(60)\n")
        r.fp.readline()
        c.close()  # leave mid-run: the run is interrupted once the re-attach grace passes
        deadline = time.time() + 60
        while time.time() < deadline:
            status, out = self.api("GET", "/contexts/" + self.ctx)
            if status == 200 and out.get("state") == "idle":
                # the run nobody read may have been the one that reported an earlier death
                # of the context (ContextDied): its counter is not known any more
                self.counter = None
                return "disconnect-freed"
            time.sleep(0.25)
        raise AssertionError("context still busy 60 s after its client left: %s" % out)


    def op_suspend(self):
        status, out = self.api("POST", "/suspend")
        assert status == 200 and out.get("state") == "suspended", "suspend %s %s" % (status, out)
        self.op_run()  # resumes it: the counter kept its value
        status, out = self.api("GET", "")
        assert status == 200 and out.get("state") == "running", "after resume %s %s" % (status, out)

    def op_reattach(self):
        status, out = self.execute("6 * 7")
        assert status == 200, "%s %s" % (status, out)
        st, again = self.api("GET", "/executions/" + out["id"])
        assert st == 200 and again.get("state") == "done", "execution %s %s" % (st, again)
        self.expect_value(again, "42")


def read_sse(r):
    events, fields = [], {}
    for raw in r:
        line = raw.decode().rstrip("\n")
        if not line:
            if "data" in fields:
                events.append((fields.get("event"), json.loads(fields["data"])))
            fields = {}
            continue
        if line.startswith(":"):
            continue
        k, _, v = line.partition(": ")
        fields[k] = v
    return events


def restarter(d, deadline, every, report):
    sigs = [signal.SIGKILL, signal.SIGTERM]
    n = 0
    while time.time() + every < deadline:
        time.sleep(every)
        sig = sigs[n % 2]
        n += 1
        try:
            d.restart(sig)
        except Exception as e:  # noqa: BLE001
            report.append("restart %d (%s) failed: %r" % (n, sig.name, e))
            return
        time.sleep(5)
        d.incarnations[-1]["start"] = d.sample()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--restart-every", type=float, default=90, help="seconds; 0 = never")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the report here")
    ap.add_argument("--daemon-flags", default="--reattach-grace-ms 2000",
                    help="extra daemon flags, one string")
    a = ap.parse_args()

    state = tempfile.mkdtemp(prefix="sbx-soak-")
    flags = a.daemon_flags.split() + ["--max-sandboxes", str(a.workers + 4)]
    d = Daemon(os.path.abspath(a.build), state, flags)
    deadline = time.time() + a.minutes * 60
    tally = {"lock": threading.Lock(), "count": collections.Counter(),
             "samples": collections.defaultdict(list)}
    rng = random.Random(a.seed)
    workers = [Worker(i, d, deadline, random.Random(rng.random()), tally) for i in range(a.workers)]
    t0 = time.time()
    for w in workers:
        w.start()
    time.sleep(5)
    d.incarnations[-1]["start"] = d.sample()
    problems = []
    if a.restart_every:
        threading.Thread(target=restarter, args=(d, deadline, a.restart_every, problems),
                         daemon=True).start()
    for w in workers:
        w.join(max(1, deadline - time.time() + 180))
    d.stop()
    report = {
        "minutes": round((time.time() - t0) / 60, 1), "workers": a.workers, "seed": a.seed,
        "operations": sum(tally["count"].values()),
        "by_class": dict(sorted(tally["count"].items())),
        "fail_samples": {k: v for k, v in tally["samples"].items() if k.startswith("FAIL")},
        "incarnations": d.incarnations, "problems": problems, "state_dir": state,
    }
    print(json.dumps(report, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)
    failed = any(k.startswith("FAIL") for k in tally["count"]) or problems
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
