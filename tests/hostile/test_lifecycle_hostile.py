"""Hostile tests of suspend (lifecycle.h): code cannot escape the freezer.

- A suspended sandbox uses no CPU: busy loops inside it stop; the CPU time of every
  process of its cgroup (read from /proc on the host) does not grow while it is suspended.
- A fork bomb that runs when the sandbox is suspended stays frozen: the set of processes
  in its cgroup does not change until it is resumed, and the sandbox can still be deleted.
- One tenant suspending and resuming its sandbox in a tight loop does not stall another
  tenant's runs (asserted as: they all complete, not how fast).

The figures of suspend and resume latency are in bench/bench_suspend.py.
"""
import glob
import os
import threading
import time

from sbxtest import Sandbox

BURN = "for i in 1 2; do (while :; do :; done) & done; wait"
BOMB = "while :; do (sleep 60 &) ; done"


def cgroup_dir(sid):
    """The sandbox's freezer group (v1) or its group (v2) on the host."""
    for pattern in ("/sys/fs/cgroup/freezer/sandboxd-*/%s" % sid,
                    "/sys/fs/cgroup/**/sandboxd-*/%s" % sid):
        found = [p for p in glob.glob(pattern, recursive=True)
                 if os.path.exists(os.path.join(p, "cgroup.procs"))]
        if found:
            return found[0]
    raise AssertionError("no cgroup for sandbox %s" % sid)


def pids(cg):
    with open(os.path.join(cg, "cgroup.procs")) as f:
        return sorted(int(x) for x in f.read().split())


def cpu_ticks(cg):
    """utime + stime of every process in the group, in clock ticks."""
    total = 0
    for pid in pids(cg):
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat(5)
    return total


def start(d, sid, command):
    status, out = d.json("POST", "/v1/sandboxes/%s/processes" % sid, {"command": command})
    assert status == 201, out
    return out["id"]


def suspend(d, sid):
    status, info = d.json("POST", "/v1/sandboxes/%s/suspend" % sid)
    assert status == 200 and info["state"] == "suspended", info
    return info


def wait_for(cond, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_a_suspended_sandbox_uses_no_cpu(daemon):
    sb = Sandbox(daemon, "hostile-cpu", limits={"cpus": 0.5})
    try:
        start(daemon, sb.id, BURN)
        cg = cgroup_dir(sb.id)
        first = cpu_ticks(cg)
        wait_for(lambda: cpu_ticks(cg) > first + 10, "the busy loops to burn CPU")
        suspend(daemon, sb.id)
        frozen = cpu_ticks(cg)
        time.sleep(2)
        assert cpu_ticks(cg) == frozen, "a suspended sandbox used CPU"
        status, info = daemon.json("POST", "/v1/sandboxes/%s/resume" % sb.id)
        assert status == 200 and info["state"] == "running"
        wait_for(lambda: cpu_ticks(cg) > frozen + 10, "the busy loops to go on")
    finally:
        sb.delete()


def test_a_fork_bomb_stays_frozen(daemon):
    sb = Sandbox(daemon, "hostile-bomb", limits={"pids": 64})
    try:
        start(daemon, sb.id, BOMB)
        cg = cgroup_dir(sb.id)
        wait_for(lambda: len(pids(cg)) > 10, "the bomb to fork")
        suspend(daemon, sb.id)
        frozen = pids(cg)
        time.sleep(2)
        assert pids(cg) == frozen, "processes came or went while suspended"
        status, info = daemon.json("GET", "/v1/sandboxes/%s" % sb.id)
        assert status == 200 and info["state"] == "suspended"
    finally:
        status, out = sb.delete()
    assert status == 200 and out == {"deleted": True}
    assert daemon.json("GET", "/v1/sandboxes/%s" % sb.id)[0] == 404
    wait_for(lambda: not glob.glob("/sys/fs/cgroup/*/sandboxd-*/%s" % sb.id),
             "the bomb's cgroup to go")


def test_a_suspend_loop_does_not_stall_another_tenant(daemon):
    noisy = Sandbox(daemon, "hostile-toggler")
    victim = Sandbox(daemon, "hostile-victim")
    start(daemon, noisy.id, BURN)
    stop = threading.Event()
    toggles = []

    def toggle():
        while not stop.is_set():
            s1, _ = daemon.json("POST", "/v1/sandboxes/%s/suspend" % noisy.id)
            s2, _ = daemon.json("POST", "/v1/sandboxes/%s/resume" % noisy.id)
            toggles.append((s1, s2))

    t = threading.Thread(target=toggle)
    t.start()
    try:
        outs = [victim.exec("echo run %d" % i) for i in range(20)]
    finally:
        stop.set()
        t.join(60)
    assert [o["stdout"] for o in outs] == ["run %d\n" % i for i in range(20)]
    assert all(o["exitCode"] == 0 for o in outs)
    assert toggles and set(toggles) == {(200, 200)}
    noisy.delete()
    victim.delete()
