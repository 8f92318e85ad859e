"""Durability (docs/lifecycle.md, "Durability"): one daemon per state dir, sandboxes that
survive the daemon (SIGKILL, SIGTERM) with their settings, host uids and workspace files,
ids of contexts and processes that ended with the daemon answered as such, SIGTERM that
ends every stream with its terminal event within --shutdown-grace-ms, and host uids
unique across daemons."""
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

from sbxtest import BINARY, Daemon, Sandbox, sse_events

ROOT = os.geteuid() == 0


def run(d, sid, code, **kw):
    status, out = d.json("POST", "/v1/sandboxes/%s/execute" % sid, {"code": code, **kw})
    assert status == 200, out
    return out


def stdout(out):
    assert out["error"] is None, out
    return "".join(out["logs"]["stdout"])


def test_second_daemon_on_a_locked_state_dir_exits_and_touches_nothing():
    d = Daemon()
    try:
        sb = Sandbox(d, "locked")
        sb.sh("echo precious > /workspace/f")
        status, ctx = d.json("POST", "/v1/sandboxes/locked/contexts", {})
        assert status == 201, ctx
        assert stdout(run(d, "locked", "x = 41\nprint('set')", context=ctx["id"])) == "set\n"
        state = os.path.join(d.state, "state")
        r = subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--state-dir", state],
                           capture_output=True, timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 1, (r.returncode, err)
        assert "in use by another sandboxd" in err, err
        assert "pid %d" % d.proc.pid in err and "127.0.0.1:%d" % d.port in err, err
        # the first daemon's context still runs, with its state; its files are intact
        assert stdout(run(d, "locked", "print(x + 1)", context=ctx["id"])) == "42\n"
        assert sb.sh("cat /workspace/f") == "precious\n"
    finally:
        assert d.stop() == 0
        d.cleanup()


def _uid_map(sb):
    """The host uids the sandbox's user and root map to, from inside."""
    return sorted(int(line.split()[1]) for line in sb.sh("cat /proc/self/uid_map").splitlines())


def test_kill_9_then_restart_keeps_the_sandbox():
    top = tempfile.mkdtemp(prefix="sbx-e2e-dur-")
    limits = {"memoryMb": 256, "pids": 64, "cpus": 0.5, "diskMb": 8, "tmpMb": 16,
              "timeoutMs": 30000}
    d1 = Daemon(state=top)
    sb = Sandbox(d1, "durable", limits=limits, env={"GREETING": "hello"}, network="none")
    before = d1.json("GET", "/v1/sandboxes/durable")[1]
    sb.sh("mkdir -p /workspace/dir && echo one > /workspace/dir/f")
    status, ctx = d1.json("POST", "/v1/sandboxes/durable/contexts", {})
    assert status == 201, ctx
    assert stdout(run(d1, "durable", "x = 1\nprint('ok')", context=ctx["id"])) == "ok\n"
    status, proc = d1.json("POST", "/v1/sandboxes/durable/processes", {"command": "sleep 1000"})
    assert status == 201, proc
    uids = _uid_map(sb)
    host_ws = os.path.join(top, "state", "sandboxes", "durable", "workspace")
    owner = os.stat(os.path.join(host_ws, "dir", "f")).st_uid
    d1.proc.send_signal(signal.SIGKILL)
    d1.proc.wait()
    d1.log.close()

    d2 = Daemon(state=top)
    sb.d = d2
    try:
        status, after = d2.json("GET", "/v1/sandboxes/durable")
        assert status == 200, after
        for field in ("id", "createdAt", "limits", "network"):
            assert after[field] == before[field], (field, before, after)
        assert after["limits"] == limits | {"cpus": 0.5}, after
        assert after["usage"]["contexts"] == 0 and after["usage"]["processes"] == 0, after
        ids = [s["id"] for s in d2.json("GET", "/v1/sandboxes")[1]["sandboxes"]]
        assert ids == ["durable"], ids
        # env, files, host uids: as they were; the files are writable from code
        assert sb.sh("echo $GREETING; cat /workspace/dir/f") == "hello\none\n"
        assert _uid_map(sb) == uids
        assert os.stat(os.path.join(host_ws, "dir", "f")).st_uid == owner
        out = run(d2, "durable", "open('/workspace/dir/f', 'a').write('two\\n')\n"
                                 "print(open('/workspace/dir/f').read(), end='')")
        assert stdout(out) == "one\ntwo\n"
        # the disk limit still holds: writing past diskMb fails with ENOSPC
        out = sb.exec("head -c 16000000 /dev/zero > /workspace/big")
        assert out["exitCode"] != 0 and "No space left on device" in out["stderr"], out
        assert int(sb.sh("df -k --output=size /workspace | tail -1")) <= 8 * 1024
        sb.sh("rm /workspace/big")
        # contexts and processes ended with the daemon, and say so
        for path, code in (("/contexts/" + ctx["id"], "CONTEXT_NOT_FOUND"),
                           ("/processes/" + proc["id"], "PROCESS_NOT_FOUND")):
            status, e = d2.json("GET", "/v1/sandboxes/durable" + path)
            assert status == 404 and e["code"] == code, e
            assert "ended when the daemon restarted" in e["message"], e
        status, e = d2.json("POST", "/v1/sandboxes/durable/execute",
                            {"code": "x", "context": ctx["id"]})
        assert status == 404 and e["code"] == "CONTEXT_NOT_FOUND", e
        assert "ended when the daemon restarted" in e["message"], e
        # an id this daemon could have made, but did not: plain "does not exist"
        status, ctx2 = d2.json("POST", "/v1/sandboxes/durable/contexts", {})
        assert status == 201, ctx2
        assert d2.json("DELETE", "/v1/sandboxes/durable/contexts/" + ctx2["id"])[0] == 200
        status, e = d2.json("GET", "/v1/sandboxes/durable/contexts/" + ctx2["id"])
        assert status == 404 and "does not exist" in e["message"], e
        # DELETE removes it for good: the next daemon does not bring it back
        assert d2.json("DELETE", "/v1/sandboxes/durable")[0] == 200
        assert not os.path.exists(os.path.dirname(host_ws))
    finally:
        assert d2.stop() == 0
    d3 = Daemon(state=top)
    try:
        assert d3.json("GET", "/v1/sandboxes/durable")[0] == 404
    finally:
        assert d3.stop() == 0
        d3.own_state = True
        d3.cleanup()


def _stream(d, sid, body, events, started):
    c = d.conn(timeout=120)
    c.request("POST", "/v1/sandboxes/%s/execute" % sid, json.dumps(body),
              {"Accept": "text/event-stream", "Content-Type": "application/json"})
    r = c.getresponse()
    data = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        data += chunk
        if b"started" in data:
            started.set()
    events.extend(sse_events(data))
    c.close()


def test_sigterm_ends_streams_and_exits_within_the_grace():
    top = tempfile.mkdtemp(prefix="sbx-e2e-dur-")
    d = Daemon("--shutdown-grace-ms", "1000", state=top)
    Sandbox(d, "term").sh("echo kept > /workspace/f")
    events, started = [], threading.Event()
    body = {"code": "import time\nprint('started', flush=True)\ntime.sleep(60)",
            "timeoutMs": 60000}
    t = threading.Thread(target=_stream, args=(d, "term", body, events, started), daemon=True)
    t.start()
    assert started.wait(60), d.logs().decode(errors="replace")[-2000:]
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(50)   # far below the run's 60 s: the run does not hold the exit
    elapsed = time.monotonic() - t0
    d.log.close()
    t.join(30)
    assert d.proc.returncode == 0, d.logs().decode(errors="replace")[-2000:]
    assert elapsed < 45, elapsed
    names = [e[0] for e in events]
    assert names[-1] == "end" and names[-2] == "error", events
    err = events[-2][2]
    assert err["name"] == "ContextDied" and "the daemon is shutting down" in err["message"], err
    assert events[-1][2]["statePreserved"] is False, events
    d2 = Daemon(state=top)
    try:
        assert Sandbox(d2, "term").sh("cat /workspace/f") == "kept\n"
    finally:
        assert d2.stop() == 0
        d2.own_state = True
        d2.cleanup()


def test_two_daemons_never_share_host_uids():
    if not ROOT:
        return   # without root every sandbox runs as the daemon's own uid
    a, b = Daemon(), Daemon()
    try:
        ua = _uid_map(Sandbox(a, "uids"))
        ub = _uid_map(Sandbox(b, "uids"))
        assert len(ua) == 2 and len(ub) == 2, (ua, ub)
        assert not set(ua) & set(ub), (ua, ub)
        # each state dir holds its range, and the registry names both
        ra = open(os.path.join(a.state, "state", "uid-range")).read().split()
        rb = open(os.path.join(b.state, "state", "uid-range")).read().split()
        assert int(ra[0]) <= ua[0] < int(ra[0]) + int(ra[1]), (ra, ua)
        assert int(rb[0]) <= ub[0] < int(rb[0]) + int(rb[1]), (rb, ub)
        reg = open("/var/lib/sandboxd-uid-ranges").read()
        for d in (a, b):
            assert re.search(r"^\d+ \d+ %s$" % re.escape(os.path.realpath(
                os.path.join(d.state, "state"))), reg, re.M), reg
    finally:
        for d in (a, b):
            assert d.stop() == 0
            d.cleanup()


def test_an_image_still_mounted_elsewhere_is_not_mounted_twice():
    """A workspace image that is still attached to a loop device (a mount of it alive in
    some namespace) is not restored: two mounts of one ext4 would corrupt it. Once it is
    free, the next start restores it with its files."""
    if not ROOT:
        return   # rootless workspaces are tmpfs
    top = tempfile.mkdtemp(prefix="sbx-e2e-dur-")
    d1 = Daemon(state=top)
    Sandbox(d1, "twice").sh("echo mine > /workspace/f")
    assert d1.stop() == 0
    img = os.path.join(top, "state", "sandboxes", "twice", "workspace.img")
    dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True,
                         check=True).stdout.strip()
    mnt = tempfile.mkdtemp(prefix="sbx-e2e-dur-mnt-")
    try:
        subprocess.run(["mount", dev, mnt], check=True)
        d2 = Daemon(state=top)
        try:
            assert d2.json("GET", "/v1/sandboxes/twice")[0] == 404
            assert b"still attached to %s" % dev.encode() in d2.logs(), d2.logs()[-2000:]
        finally:
            assert d2.stop() == 0
    finally:
        subprocess.run(["umount", mnt], check=False)
        subprocess.run(["losetup", "-d", dev], check=False)
        os.rmdir(mnt)
    d3 = Daemon(state=top)
    try:
        assert Sandbox(d3, "twice").sh("cat /workspace/f") == "mine\n"
    finally:
        assert d3.stop() == 0
        d3.own_state = True
        d3.cleanup()
