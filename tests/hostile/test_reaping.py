"""Hostile code that tries to leave processes behind the sandbox's back.

A Python context's parent is the daemon (the zygote creates it with CLONE_PARENT). A
clone(CLONE_PARENT) from code in it would make a process whose parent is the daemon:
outside the sandbox's reaper, its zombie would outlive the sandbox and hold a pid of its
quota. seccomp refuses the flag (EPERM), and whatever child of the daemon no sandbox owns
is killed and reaped by the daemon (src/reaper.c; unit-tested in tests/unit/test_reaper.c).
"""
import ast
import os
import time

from sbxtest import Sandbox, main_text, run

CLONE = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pidns = os.readlink('/proc/self/ns/pid')
uids = []
for line in open('/proc/self/uid_map'):
    inside, outside, count = (int(x) for x in line.split())
    uids += range(outside, outside + min(count, 4))
results = []
for _ in range(5):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x8000 | 17), ctypes.c_long(0),
                     ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))  # clone(CLONE_PARENT|SIGCHLD)
    if r == 0:
        os._exit(0)              # a child of the daemon: exits at once, a zombie unless reaped
    results.append((r, ctypes.get_errno()))
(pidns, uids, results)
'''


def proc_status(pid):
    fields = {}
    try:
        with open("/proc/%s/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                fields[k] = v.split()
    except OSError:
        return None
    return fields


def leftovers(daemon_pid, pidns, uids):
    """Processes in the sandbox's pid namespace, children of the daemon with the
    sandbox's host uids, and zombie children of the daemon. (Other daemons on the host
    may use the same uids for their own sandboxes: only this daemon's are looked at.)"""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        st = proc_status(pid)
        if not st:
            continue
        try:
            ns = os.readlink("/proc/%s/ns/pid" % pid)
        except OSError:
            ns = None              # zombies have no namespaces left
        child = int(st["PPid"][0]) == daemon_pid
        if ns == pidns:
            out.append((int(pid), st["State"][0], "in the sandbox's pid namespace"))
        elif child and int(st["Uid"][0]) in uids:
            out.append((int(pid), st["State"][0], "child of the daemon, uid %s" % st["Uid"][0]))
        elif child and st["State"][0] == "Z":
            out.append((int(pid), "Z", "zombie child of the daemon"))
    return out


def test_clone_parent_from_a_context_is_refused_and_leaves_nothing(daemon):
    s = Sandbox(daemon, "clone-parent", limits={"pids": 32})
    out = run(daemon, s.id, CLONE)
    pidns, uids, results = ast.literal_eval(main_text(out))
    assert uids and all(u >= 1000 for u in uids), uids
    s.delete()
    deadline = time.time() + 30
    left = leftovers(daemon.proc.pid, pidns, set(uids))
    while left and time.time() < deadline:
        time.sleep(0.2)
        left = leftovers(daemon.proc.pid, pidns, set(uids))
    assert left == [] and results == [(-1, 1)] * 5, (left, results)   # EPERM, nothing left
    assert daemon.alive()
