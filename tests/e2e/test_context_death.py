"""Honest context death (API.md "Code contexts", last bullet; docs/api.md "Context deaths"):
a context killed while idle says so on its next run (ContextDied: when and how,
statePreserved false) and is fresh after; a kill is never called an OOM because of an
earlier OOM in the sandbox; a context whose restart or creation meets a dead zygote
recovers once the zygote is back."""
import os
import re
import signal
import threading
import time

import pytest

from sbxtest import Daemon, Sandbox, context, main_text, run

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


@pytest.fixture(scope="module")
def d():
    daemon = Daemon()
    yield daemon
    assert daemon.stop() == 0, daemon.logs().decode(errors="replace")[-3000:]


def wait_for(cond, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def pid_of(d, sid, cid):
    return int(main_text(run(d, sid, "import os\nos.getpid()", context=cid)))


def kill_from(d, sid, killer, pid, sig=9):
    """Kill pid (inside the sandbox) from the context killer, and wait until the daemon
    has reaped it (it is the context's parent: a reaped process is gone from /proc)."""
    out = run(d, sid, "import os\nos.kill(%d, %d)" % (pid, sig), context=killer)
    assert out["error"] is None, out
    wait_gone(d, sid, killer, pid)


def wait_gone(d, sid, watcher, pid):
    code = ("import os, time\nt = time.time()\n"
            "while os.path.exists('/proc/%d') and time.time() - t < 60:\n"
            "    time.sleep(0.05)\nos.path.exists('/proc/%d')" % (pid, pid))
    assert main_text(run(d, sid, code, context=watcher, timeoutMs=90000)) == "False"


def state(d, sid, cid):
    status, c = d.json("GET", "/v1/sandboxes/%s/contexts/%s" % (sid, cid))
    assert status == 200, c
    return c["state"]


def our_zygote(d):
    """The host pid of this daemon's zygote: its child running sandboxd-zygote outside
    any sandbox. (Other daemons may run on the machine, and Python contexts are the
    daemon's children too, with the zygote's command line, but in a sandbox's pid
    namespace: two pids on their NSpid line.)"""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if b"sandboxd-zygote" not in f.read():
                    continue
            with open("/proc/%s/status" % pid) as f:
                status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            ppid, nspids = int(status["PPid"]), status["NSpid"].split()
        except (OSError, ValueError, KeyError):
            continue
        if ppid == d.proc.pid and len(nspids) == 1:
            return int(pid)
    return None


def test_killed_while_idle_reports_context_died_then_is_fresh(d):
    s = Sandbox(d, "death-idle")
    a, killer = context(d, s.id), context(d, s.id)
    run(d, s.id, "kept = 42", context=a)
    kill_from(d, s.id, killer, pid_of(d, s.id, a))
    out = run(d, s.id, "kept", context=a, timeoutMs=90000)
    err = out["error"]
    assert err is not None and err["name"] == "ContextDied", out
    assert out["statePreserved"] is False
    assert "SIGKILL" in err["message"] and "idle" in err["message"], err
    assert re.search(ISO, err["message"]) and " s before this run" in err["message"], err
    assert out["results"] == [] and out["logs"]["stdout"] == []   # the code did not run
    # then it is fresh, and works
    out = run(d, s.id, "kept", context=a)
    assert out["error"]["name"] == "NameError", out
    assert main_text(run(d, s.id, "1 + 1", context=a)) == "2"
    s.delete()


def test_exit_while_idle_is_reported_with_its_status(d):
    s = Sandbox(d, "death-exit")
    a = context(d, s.id)
    # a thread ends the process with status 3 after the run has ended
    out = run(d, s.id, "import os, threading\n"
              "threading.Timer(0.5, lambda: os._exit(3)).start()", context=a)
    assert out["error"] is None
    wait_for(lambda: b"exited with status 3" in d.logs(), "the context's exit")  # only here
    out = run(d, s.id, "1", context=a, timeoutMs=90000)
    assert out["error"]["name"] == "ContextDied", out
    assert "exited with status 3" in out["error"]["message"], out["error"]
    assert main_text(run(d, s.id, "2", context=a)) == "2"
    s.delete()


def test_an_earlier_oom_does_not_name_a_later_kill(d):
    s = Sandbox(d, "death-oom", limits={"memoryMb": 256})
    a, b = context(d, s.id), context(d, s.id)
    pid_a = pid_of(d, s.id, a)        # a's process began before the OOM below
    out = run(d, s.id, "x = [bytearray(1 << 20) for _ in range(2048)]", context=b,
              timeoutMs=120000)
    assert out["error"]["name"] == "OutOfMemoryError", out["error"]
    # now a is busy, and killed by someone: that is no OOM
    answer = {}

    def busy():
        answer["out"] = run(d, s.id, "import time\ntime.sleep(600)", context=a,
                            timeoutMs=0)

    t = threading.Thread(target=busy)
    t.start()
    wait_for(lambda: state(d, s.id, a) == "busy", "a to be busy")
    out = run(d, s.id, "import os\nos.kill(%d, 9)" % pid_a, context=b)
    assert out["error"] is None, out
    t.join(120)
    assert not t.is_alive()
    err = answer["out"]["error"]
    assert err["name"] == "ContextDied", err
    assert "SIGKILL" in err["message"] and answer["out"]["statePreserved"] is False
    assert main_text(run(d, s.id, "1 + 1", context=a)) == "2"
    s.delete()


def test_a_restart_while_the_zygote_is_down_recovers(d):
    s = Sandbox(d, "death-zygote")
    a, killer = context(d, s.id), context(d, s.id)
    pid_a = pid_of(d, s.id, a)
    zyg = our_zygote(d)
    assert zyg
    os.kill(zyg, signal.SIGSTOP)      # the restart's fork request waits in its socket
    try:
        kill_from(d, s.id, killer, pid_a)
    finally:
        os.kill(zyg, signal.SIGKILL)  # ... and the zygote dies with it
    wait_for(lambda: our_zygote(d) not in (None, zyg), "a new zygote")
    # a was restarting when the zygote died: it waits for the new one, then reports
    # the death (it was idle) and runs code again
    out = run(d, s.id, "1", context=a, timeoutMs=90000)
    assert out["error"]["name"] == "ContextDied", out
    assert "SIGKILL" in out["error"]["message"]
    assert main_text(run(d, s.id, "40 + 2", context=a)) == "42"
    assert state(d, s.id, a) == "idle"
    s.delete()


def test_a_creation_when_the_zygote_dies_recovers(d):
    s = Sandbox(d, "death-create")
    zyg = our_zygote(d)
    assert zyg
    os.kill(zyg, signal.SIGSTOP)
    answer = {}

    def create():
        answer["r"] = d.json("POST", "/v1/sandboxes/%s/contexts" % s.id, {})

    t = threading.Thread(target=create)
    try:
        t.start()
        time.sleep(1)                 # let the request reach the stopped zygote
    finally:
        os.kill(zyg, signal.SIGKILL)
    t.join(120)
    assert not t.is_alive()
    status, body = answer["r"]
    assert status == 201, body        # not a 500: the context waited for the new zygote
    assert main_text(run(d, s.id, "6 * 7", context=body["id"])) == "42"
    s.delete()


def test_a_creation_while_the_zygote_restarts_waits_for_it(d):
    s = Sandbox(d, "death-create-restart")
    zyg = our_zygote(d)
    assert zyg
    os.kill(zyg, signal.SIGKILL)
    wait_for(lambda: our_zygote(d) != zyg, "the daemon to see the zygote die")
    # the zygote is restarting: not "unavailable" (501), the context waits for it
    status, body = d.json("POST", "/v1/sandboxes/%s/contexts" % s.id, {})
    assert status == 201, body
    assert main_text(run(d, s.id, "6 * 7", context=body["id"])) == "42"
    s.delete()


def test_a_javascript_context_killed_while_idle_reports_it(d):
    s = Sandbox(d, "death-js")
    js, killer = context(d, s.id, language="javascript"), context(d, s.id)
    run(d, s.id, "globalThis.kept = 1", context=js)
    pid = int(main_text(run(d, s.id, "process.pid", context=js)))
    kill_from(d, s.id, killer, pid)
    out = run(d, s.id, "kept", context=js, timeoutMs=90000)
    assert out["error"]["name"] == "ContextDied" and out["statePreserved"] is False, out
    assert "SIGKILL" in out["error"]["message"]
    out = run(d, s.id, "typeof kept", context=js)
    assert out["error"] is None and main_text(out) == "'undefined'", out
    s.delete()


def test_an_oom_while_idle_is_reported_as_out_of_memory(d):
    s = Sandbox(d, "death-idle-oom", limits={"memoryMb": 256})
    a, watcher = context(d, s.id), context(d, s.id)
    pid = pid_of(d, s.id, a)
    # the hog volunteers as the OOM killer's victim (raising one's own oom_score_adj needs no
    # privilege), so that the watcher, in the same cgroup, is never the one taken
    out = run(d, s.id, "open('/proc/self/oom_score_adj', 'w').write('1000')\n"
              "import threading\ndef hog():\n"
              "    global h\n    h = [bytearray(1 << 20) for _ in range(2048)]\n"
              "threading.Timer(0.5, hog).start()", context=a)
    assert out["error"] is None
    wait_gone(d, s.id, watcher, pid)
    out = run(d, s.id, "1", context=a, timeoutMs=90000)
    assert out["error"]["name"] == "ContextDied", out
    assert "ran out of memory (sandbox limit 256 MiB)" in out["error"]["message"], out["error"]
    s.delete()


def test_a_zygote_that_stays_down_is_a_clear_transient_error(make_daemon):
    d = make_daemon("--context-start-timeout-ms", "1500")
    s = Sandbox(d, "death-zygote-down")
    stop = threading.Event()
    kills = []

    def keep_killing():             # every new zygote dies long before it could be ready
        while not stop.is_set():
            z = our_zygote(d)
            if z:
                os.kill(z, signal.SIGKILL)
                kills.append(z)
            time.sleep(0.002)

    t = threading.Thread(target=keep_killing)
    t.start()
    try:
        wait_for(lambda: kills, "the first kill")
        status, body = d.json("POST", "/v1/sandboxes/%s/contexts" % s.id, {})
    finally:
        stop.set()
        t.join()
    assert status == 429 and body["code"] == "LIMIT_REACHED", body
    assert "the Python runtime (the zygote) restarted" in body["message"], body
    # once it is back, creating works again
    wait_for(lambda: b"zygote: ready" in d.logs().rsplit(b"zygote: lost", 1)[-1],
             "the zygote back", timeout=120)
    status, body = d.json("POST", "/v1/sandboxes/%s/contexts" % s.id, {})
    assert status == 201, body
    assert main_text(run(d, s.id, "1 + 1", context=body["id"])) == "2"
    s.delete()
