"""End-to-end tests of the sandbox API: get-or-create, generated ids, listing, limits,
validation, the sandbox cap, and deletion that leaves nothing behind."""
import os
import subprocess
import tempfile

import pytest

from sbxtest import BINARY, Sandbox


def test_put_is_get_or_create(daemon):
    status, a = daemon.json("PUT", "/v1/sandboxes/goc")
    assert status == 201
    status, b = daemon.json("PUT", "/v1/sandboxes/goc")
    assert status == 200
    assert a["createdAt"] == b["createdAt"] and a["id"] == "goc"
    status, c = daemon.json("GET", "/v1/sandboxes/goc")
    assert status == 200 and c["id"] == "goc"
    assert c["network"] == "none"
    assert set(c["limits"]) >= {"memoryMb", "pids", "cpus", "diskMb", "timeoutMs"}
    assert set(c["usage"]) == {"memoryBytes", "processes", "contexts", "bufferBytes",
                               "bufferPeakBytes", "bufferLimitBytes", "bufferRefusals"}
    assert daemon.json("DELETE", "/v1/sandboxes/goc") == (200, {"deleted": True})
    status, e = daemon.json("GET", "/v1/sandboxes/goc")
    assert status == 404 and e["code"] == "SANDBOX_NOT_FOUND"
    status, e = daemon.json("DELETE", "/v1/sandboxes/goc")
    assert status == 404 and e["code"] == "SANDBOX_NOT_FOUND"


def test_post_generates_an_id(daemon):
    status, a = daemon.json("POST", "/v1/sandboxes", {})
    assert status == 201 and a["id"].startswith("sbx-")
    status, b = daemon.json("POST", "/v1/sandboxes")
    assert b["id"] != a["id"]
    status, lst = daemon.json("GET", "/v1/sandboxes")
    ids = [s["id"] for s in lst["sandboxes"]]
    assert a["id"] in ids and b["id"] in ids
    for x in (a, b):
        assert daemon.json("DELETE", "/v1/sandboxes/" + x["id"])[0] == 200


def test_invalid_ids_are_400(daemon):
    for bad in ("-lead", "a" * 64, "a%2Fb", "sp%20ace", "a%00b", "..", "%C3%A9"):
        status, e = daemon.json("PUT", "/v1/sandboxes/" + bad)
        assert status == 400, (bad, e)
        assert e["code"] == "VALIDATION_FAILED"
        status, e = daemon.json("GET", "/v1/sandboxes/" + bad)
        assert status == 400, bad


def test_limits_override_and_validation(daemon):
    status, s = daemon.json("PUT", "/v1/sandboxes/lim", {
        "limits": {"memoryMb": 256, "pids": 64, "cpus": 0.5, "diskMb": 32, "timeoutMs": 5000}})
    assert status == 201, s
    assert s["limits"]["memoryMb"] == 256 and s["limits"]["pids"] == 64
    assert s["limits"]["cpus"] == 0.5 and s["limits"]["timeoutMs"] == 5000
    daemon.json("DELETE", "/v1/sandboxes/lim")
    status, e = daemon.json("PUT", "/v1/sandboxes/lim2", {"limits": {"memoryMb": "lots"}})
    assert status == 400 and "'memoryMb'" in e["message"]
    status, e = daemon.json("PUT", "/v1/sandboxes/lim2", {"limits": {"pids": 1}})
    assert status == 400 and "'pids' must be an integer from 8" in e["message"]
    status, e = daemon.json("PUT", "/v1/sandboxes/lim2", {"network": "bridge"})
    assert status == 400 and "'network'" in e["message"]
    status, e = daemon.json("PUT", "/v1/sandboxes/lim2", {"env": {"A=B": "x"}})
    assert status == 400 and "A=B" in e["message"]
    status, e = daemon.request("PUT", "/v1/sandboxes/lim2", b"{not json",
                               {"Content-Type": "application/json"})[::2]
    assert status == 400 and b"INVALID_JSON" in e
    assert daemon.json("GET", "/v1/sandboxes/lim2")[0] == 404


def test_sandbox_cap_is_429(make_daemon):
    d = make_daemon("--max-sandboxes", "2")
    assert d.json("PUT", "/v1/sandboxes/a")[0] == 201
    assert d.json("PUT", "/v1/sandboxes/b")[0] == 201
    status, e = d.json("PUT", "/v1/sandboxes/c")
    assert status == 429 and e["code"] == "LIMIT_REACHED"
    assert d.json("PUT", "/v1/sandboxes/a")[0] == 200      # existing ones still answer
    d.json("DELETE", "/v1/sandboxes/a")
    assert d.json("PUT", "/v1/sandboxes/c")[0] == 201


def test_usage_reports_processes(daemon):
    s = Sandbox(daemon, "usage")
    s.exec("true")
    status, info = daemon.json("GET", "/v1/sandboxes/usage")
    assert info["usage"]["processes"] >= 0
    assert info["usage"]["memoryBytes"] >= 0
    s.delete()


def test_delete_removes_workspace_and_processes(daemon):
    s = Sandbox(daemon, "gone")
    s.sh("echo data > /workspace/file && (setsid sleep 1000.4242 &) ; true")
    state = os.path.join(daemon.state, "state")
    before = [dirpath for dirpath, _, files in os.walk(state) if "file" in files]
    assert before, "the workspace should be under the state dir"
    assert s.delete() == (200, {"deleted": True})
    after = [dirpath for dirpath, _, files in os.walk(state) if "file" in files]
    assert after == []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read()
            except OSError:
                continue
            assert b"1000.4242" not in cmd, "a sandbox process survived its deletion"


def _procs_with(marker):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker in open("/proc/%s/cmdline" % pid, "rb").read():
                    found.append(int(pid))
            except OSError:
                pass
    return found


def test_restart_after_a_crash_keeps_the_sandbox_and_ends_its_processes():
    """A daemon killed with SIGKILL cleans nothing; its sandboxes' inits die with it
    (PDEATHSIG), so nothing of the sandbox runs any more; the next daemon on the same
    state dir brings the sandbox back with its files (tests/e2e/test_durability.py has
    the rest), its workspace mounted once."""
    import signal
    import time
    from sbxtest import Daemon
    d = Daemon()
    s = Sandbox(d, "crashy")
    s.sh("echo keep > /workspace/f; (setsid sleep 999.777 &) ; true")
    state = os.path.join(d.state, "state")
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    deadline = time.time() + 5
    while _procs_with(b"999.777") and time.time() < deadline:
        time.sleep(0.05)
    assert _procs_with(b"999.777") == []
    d2 = Daemon(state=d.state)
    try:
        assert d2.json("GET", "/v1/sandboxes/crashy")[0] == 200
        assert Sandbox(d2, "crashy").sh("cat /workspace/f; ps -eo args | grep -c '[9]99.777'"
                                        " || true") == "keep\n0\n"
        ws = os.path.join(state, "sandboxes", "crashy", "workspace")
        if os.geteuid() == 0:
            assert open("/proc/mounts").read().count(" %s " % ws) == 1
    finally:
        assert d2.stop() == 0
        d.cleanup()


def test_cpu_quota_is_enforced(daemon):
    """cpus 0.2: a busy loop of 1.5 s wall time gets about 0.3 s of CPU (1.5 s unlimited)."""
    s = Sandbox(daemon, "cpuq", limits={"cpus": 0.2})
    code = ("import os, time\nt = time.time()\nwhile time.time() - t < 1.5: pass\n"
            "c = os.times()\nprint(round(c.user + c.system, 2))")
    used = float(s.sh("python3 -c \"$C\"", env={"C": code}))
    assert used < 0.75, used
    s.delete()


CEILINGS = ("--memory-mb", "128", "--max-memory-mb", "512", "--pids", "64", "--max-pids", "256",
            "--cpus", "0.5", "--max-cpus", "1.5", "--disk-mb", "16", "--max-disk-mb", "256",
            "--tmp-mb", "16", "--max-tmp-mb", "128", "--exec-timeout-ms", "5000",
            "--max-timeout-ms", "10000", "--max-env-vars", "3")


@pytest.mark.parametrize("field,ceiling,flag", [
    ("memoryMb", 512, "--max-memory-mb"), ("pids", 256, "--max-pids"),
    ("cpus", 1.5, "--max-cpus"), ("diskMb", 256, "--max-disk-mb"),
    ("tmpMb", 128, "--max-tmp-mb"), ("timeoutMs", 10000, "--max-timeout-ms")])
def test_limit_ceilings(make_daemon, field, ceiling, flag):
    """Every limit a client asks for is checked against the operator's ceiling: above it is
    400 naming the field, the ceiling and its flag; at it the sandbox is made."""
    d = make_daemon(*CEILINGS)
    over = ceiling + 0.25 if isinstance(ceiling, float) else ceiling + 1
    status, e = d.json("PUT", "/v1/sandboxes/over", {"limits": {field: over}})
    assert status == 400 and e["code"] == "VALIDATION_FAILED", e
    assert "'%s'" % field in e["message"] and flag in e["message"], e
    assert ("%g" % ceiling) in e["message"], e
    assert d.json("GET", "/v1/sandboxes/over")[0] == 404
    status, s = d.json("PUT", "/v1/sandboxes/at", {"limits": {field: ceiling}})
    assert status == 201 and s["limits"][field] == ceiling, s
    d.json("DELETE", "/v1/sandboxes/at")


def test_default_ceilings(daemon):
    """The shipped ceilings: 16 TiB of workspace (RAM when root) is refused."""
    for field, value, flag in (("diskMb", 1 << 24, "--max-disk-mb"),
                               ("memoryMb", 1 << 24, "--max-memory-mb"),
                               ("tmpMb", 1 << 24, "--max-tmp-mb"),
                               ("cpus", 1024, "--max-cpus"), ("pids", 1 << 22, "--max-pids")):
        status, e = daemon.json("PUT", "/v1/sandboxes/huge", {"limits": {field: value}})
        assert status == 400 and flag in e["message"], (field, e)
    assert daemon.json("GET", "/v1/sandboxes/huge")[0] == 404


def test_request_timeout_and_env_ceilings(make_daemon):
    d = make_daemon(*CEILINGS)
    sb = Sandbox(d, "req")
    status, e = d.json("POST", "/v1/sandboxes/req/exec", {"command": "true", "timeoutMs": 10001})
    assert status == 400 and "'timeoutMs'" in e["message"] and "--max-timeout-ms" in e["message"]
    status, e = d.json("POST", "/v1/sandboxes/req/execute", {"code": "1", "timeoutMs": 10001})
    assert status == 400 and "'timeoutMs'" in e["message"] and "--max-timeout-ms" in e["message"]
    assert sb.exec("true", timeoutMs=10000)["exitCode"] == 0
    status, e = d.json("PUT", "/v1/sandboxes/env4",
                       {"env": {"A": "1", "B": "2", "C": "3", "D": "4"}})
    assert status == 400 and "'env'" in e["message"], e
    assert d.json("PUT", "/v1/sandboxes/env3", {"env": {"A": "1", "B": "2", "C": "3"}})[0] == 201
    sb.delete()


def test_default_above_its_ceiling_stops_the_daemon():
    with tempfile.TemporaryDirectory() as state:
        r = subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--state-dir", state,
                            "--disk-mb", "2048", "--max-disk-mb", "1024"],
                           capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "--disk-mb 2048 is above its ceiling --max-disk-mb 1024" in r.stderr, r.stderr
