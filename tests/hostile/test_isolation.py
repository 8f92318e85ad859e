"""Hostile tests: what code in a sandbox tries, and the exact outcome we guarantee.

Each attack runs inside a sandbox through the exec API, as an LLM-written program
would. System calls are made directly (ctypes `syscall`) so the errno that comes back is
the one the kernel and our seccomp filter chose, not a library's interpretation.
"""
import json
import os
import time

import pytest

from sbxtest import Sandbox

# x86_64 system call numbers.
NR = {"ptrace": 101, "mount": 165, "umount2": 166, "pivot_root": 155, "bpf": 321,
      "keyctl": 250, "add_key": 248, "io_uring_setup": 425, "unshare": 272, "setns": 308,
      "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246, "init_module": 175,
      "reboot": 169, "open_tree": 428, "fsopen": 430, "process_vm_readv": 310, "ioctl": 16,
      "personality": 135, "socket": 41, "clone": 56, "socketpair": 53, "modify_ldt": 154}

PROBE = r'''
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
nr, args = int(sys.argv[1]), [ctypes.c_long(int(a, 0)) for a in sys.argv[2:]]
r = libc.syscall(nr, *args)
e = ctypes.get_errno()
print(json.dumps({"ret": r, "errno": errno.errorcode.get(e, str(e)) if r == -1 else None}))
'''


@pytest.fixture(scope="module")
def box(daemon):
    s = Sandbox(daemon, "hostile", limits={"pids": 128, "memoryMb": 256, "tmpMb": 16,
                                           "diskMb": 16})
    s.sh("cat > /tmp/probe.py", stdin=PROBE)
    yield s
    s.delete()


def syscall(box, name, *args):
    out = box.exec("python3 /tmp/probe.py %d %s" % (NR[name], " ".join(str(a) for a in args)))
    assert out["exitCode"] == 0, out
    return json.loads(out["stdout"])


@pytest.mark.parametrize("name,args,want", [
    ("ptrace", (16, 1), "EPERM"),              # PTRACE_ATTACH to pid 1
    ("process_vm_readv", (1, 0, 0, 0, 0, 0), "EPERM"),
    ("mount", (0, 0, 0, 0, 0), "EPERM"),
    ("umount2", (0, 0), "EPERM"),
    ("pivot_root", (0, 0), "EPERM"),
    ("open_tree", (-100, 0, 0), "EPERM"),
    ("fsopen", (0, 0), "EPERM"),
    ("bpf", (0, 0, 0), "EPERM"),
    ("keyctl", (0, 0), "EPERM"),
    ("add_key", (0, 0, 0, 0, 0), "EPERM"),
    ("perf_event_open", (0, 0, -1, -1, 0), "EPERM"),
    ("userfaultfd", (0,), "EPERM"),
    ("kexec_load", (0, 0, 0, 0), "EPERM"),
    ("init_module", (0, 0, 0), "EPERM"),
    ("reboot", (0xfee1dead, 672274793, 0x1234567, 0), "EPERM"),
    ("io_uring_setup", (1, 0), "ENOSYS"),
    ("unshare", (0x10000000,), "EPERM"),      # CLONE_NEWUSER: no nested user namespace
    ("unshare", (0x00020000,), "EPERM"),      # CLONE_NEWNS
    ("setns", (0, 0), "EPERM"),
    ("clone", (0x10000000 | 17, 0, 0, 0, 0), "EPERM"),   # clone(CLONE_NEWUSER|SIGCHLD)
    ("socket", (16, 3, 0), "EAFNOSUPPORT"),   # AF_NETLINK
    ("socket", (17, 3, 0), "EAFNOSUPPORT"),   # AF_PACKET
    ("socketpair", (16, 3, 0, 0), "EAFNOSUPPORT"),   # AF_NETLINK: same rows as socket()
    ("socketpair", (17, 2, 0, 0), "EAFNOSUPPORT"),   # AF_PACKET
    ("socketpair", (40, 1, 0, 0), "EAFNOSUPPORT"),   # AF_VSOCK
    ("socket", (2, 1, 132), "EPROTONOSUPPORT"),      # AF_INET + IPPROTO_SCTP
    ("modify_ldt", (1, 0, 16), "EPERM"),
    ("ioctl", (0, 0x5412, 0), "EPERM"),        # TIOCSTI
    ("ioctl", (0, 0x100005412, 0), "EPERM"),   # TIOCSTI with high bits set
    ("ioctl", (0, 0x541C, 0), "EPERM"),        # TIOCLINUX
])
def test_denied_syscalls(box, name, args, want):
    assert syscall(box, name, *args)["errno"] == want


def test_allowed_sockets_still_work(box):
    assert syscall(box, "socket", 1, 1, 0)["errno"] is None     # AF_UNIX
    assert syscall(box, "socket", 2, 1, 0)["errno"] is None     # AF_INET


def test_x32_syscalls_kill_the_process(box):
    out = box.exec("exec python3 /tmp/probe.py %d" % (0x40000000 | 39))   # x32 getpid
    assert out["exitCode"] == 128 + 31 and out["signal"] == "SIGSYS", out


def test_status_shows_no_privileges(box):
    st = box.sh("cat /proc/self/status")
    assert "CapEff:\t0000000000000000" in st and "CapPrm:\t0000000000000000" in st
    assert "CapBnd:\t0000000000000000" in st and "CapAmb:\t0000000000000000" in st
    assert "NoNewPrivs:\t1" in st and "Seccomp:\t2" in st
    assert box.sh("id -u; id -g") == "1000\n1000\n"


def test_no_controlling_tty(box):
    out = box.exec("exec 3</dev/tty")
    assert out["exitCode"] != 0


def test_cannot_read_secrets(box):
    out = box.exec("cat /etc/shadow")
    assert out["exitCode"] != 0
    out = box.exec("cat /proc/1/environ")
    assert out["exitCode"] != 0 and ("Permission denied" in out["stderr"]
                                     or "No such" in out["stderr"]), out
    assert box.sh("ls -A /root 2>/dev/null; true") == ""     # nothing of the host's /root


def test_cannot_see_host_processes_or_daemon_files(box, daemon):
    pids = [p for p in box.sh("ls /proc").split() if p.isdigit()]
    assert len(pids) < 10, pids           # only the sandbox's own processes
    assert box.exec("ls %s" % daemon.state)["exitCode"] != 0
    assert box.exec("ls /proc/%d" % daemon.proc.pid)["exitCode"] != 0 or \
        str(daemon.proc.pid) not in pids


def test_devices(box):
    assert set(box.sh("ls /dev").split()) <= {"null", "zero", "full", "random", "urandom",
                                               "shm", "fd", "stdin", "stdout", "stderr", "pts",
                                               "ptmx", "tty", "console", "mqueue", "core"}
    for dev in ("/dev/mem", "/dev/kmsg", "/dev/sda", "/dev/vda"):
        out = box.exec("head -c1 %s" % dev)
        assert out["exitCode"] != 0, dev


def test_system_dirs_are_read_only(box):
    for path in ("/usr/x", "/etc/x", "/bin/x", "/x"):
        out = box.exec("touch %s" % path)
        assert out["exitCode"] != 0 and ("Read-only" in out["stderr"] or
                                          "Permission denied" in out["stderr"]), out


def test_network_none(box, daemon):
    nets = box.sh("ls /sys/class/net 2>/dev/null || cat /proc/net/dev")
    assert "eth" not in nets and "ens" not in nets
    assert box.sh("cat /proc/net/route").count("\n") <= 1      # header only: no route out
    code = ("import socket\ntry:\n socket.create_connection(('127.0.0.1', %d), timeout=2)\n"
            " print('connected')\nexcept OSError as e:\n print(type(e).__name__)\n" % daemon.port)
    assert box.sh("python3 -c \"$C\"", env={"C": code}).strip() == "ConnectionRefusedError"
    # loopback inside the sandbox works
    srv = ("import socket\ns=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
           "c=socket.create_connection(s.getsockname()); print('ok')\n")
    assert box.sh("python3 -c \"$C\"", env={"C": srv}).strip() == "ok"


def test_fork_bomb_hits_pids_limit(daemon, box):
    other = Sandbox(daemon, "bystander")
    out = box.exec("bomb() { bomb | bomb & }; bomb; sleep 2; echo done", timeoutMs=8000)
    # dash reports EAGAIN from fork() at pids.max as "Cannot fork"
    assert "Cannot fork" in out["stderr"] or "Resource temporarily unavailable" in out["stderr"], out
    assert other.sh("echo fine") == "fine\n"
    status, _ = daemon.json("GET", "/v1/health")
    assert status == 200
    box.exec("kill -9 -1; true")
    other.delete()


def test_memory_bomb_is_oom(box):
    out = box.exec("python3 -c 'x = [bytearray(1 << 20) for _ in range(4096)]'")
    assert out.get("oomKilled") is True and out["exitCode"] == 137, out


def test_filling_tmp_and_workspace(box):
    out = box.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=64")
    assert out["exitCode"] != 0 and "No space left" in out["stderr"], out
    box.sh("rm -f /tmp/fill")
    out = box.exec("dd if=/dev/zero of=/workspace/fill bs=1M count=64")
    assert out["exitCode"] != 0 and "No space left" in out["stderr"], out
    box.sh("rm -f /workspace/fill")


def test_output_flood_is_bounded(daemon, box):
    out = box.exec("yes flood | head -c 200000000")
    assert out["truncated"] is True and out["exitCode"] == 0
    with open("/proc/%d/status" % daemon.proc.pid) as f:
        rss_kb = int([l for l in f if l.startswith("VmRSS")][0].split()[1])
    assert rss_kb < 200 * 1024, rss_kb


def test_kill_all_inside_does_not_reach_out(daemon, box):
    out = box.exec("kill -9 -1; echo after")
    assert daemon.alive()
    assert box.sh("echo still") == "still\n"


def test_double_fork_survivor_dies_with_sandbox(daemon):
    s = Sandbox(daemon, "survivor")
    s.sh("(setsid sh -c 'exec sleep 777.123' &) ; true")
    assert "777.123" in s.sh("ps -eo args")
    s.delete()
    time.sleep(0.2)
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read()
            except OSError:
                continue
            assert b"777.123" not in cmd


def test_sandboxes_do_not_see_each_other(daemon, box):
    a = Sandbox(daemon, "iso-a")
    b = Sandbox(daemon, "iso-b")
    a.sh("echo secret-a > /workspace/secret")
    assert b.exec("cat /workspace/secret")["exitCode"] != 0
    assert "secret-a" not in b.sh("grep -rs secret-a /workspace /tmp /dev/shm /opt /run 2>/dev/null; true", timeoutMs=20000)
    a.delete()
    b.delete()
