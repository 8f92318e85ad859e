"""Hostile tests: a sandbox's own code cannot get its init killed by the OOM killer.

A sandbox fills its /dev/shm (a tmpfs charged to its memory cgroup) past memoryMb. Those
pages belong to no process, so the kernel's OOM killer picks among the sandbox's
processes, and the sandbox's init (pid 1, a few hundred KiB) was as good a victim as
any: killing it ends the whole sandbox. Every process of a sandbox now raises its own
oom_score_adj to 500 before running sandbox code (init's children before exec, Python
contexts as they enter from the zygote); init keeps the daemon's value, or -1000 where
the outer init holds CAP_SYS_RESOURCE (root that kept it; not on every host).

Asserted: the scores as the kernel sees them (any sandbox process outranks init), that
sandbox code cannot lower itself below the daemon's floor, and the outcome of a fill
while a Python context and a background `sleep` exist: the writer is killed by SIGKILL
(exit 137, oomKilled); with the memory full, commands are refused with 507 MEMORY_LIMIT
(init forks only with --spawn-reserve-kb free: the fork is charged in init's own context,
where init would be the only process to kill); both init processes are still in the
sandbox's cgroup afterwards (read from the host). The workspace is on disk (an ext4 image,
docs/lifecycle.md): filling it costs no memory, and its writer gets ENOSPC, nothing dies.
"""
import base64
import os
import struct

from sbxtest import Sandbox, context, run

CAP_SYS_RESOURCE = 24
# Writes each value to its own oom_score_adj; prints "<value>:ok" or "<value>:<errno>".
LOWER = """
import errno, os
for v in ("0", "-1", "-1000"):
    fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
    try:
        os.write(fd, v.encode()); print(v + ":ok")
    except OSError as e:
        print(v + ":" + errno.errorcode[e.errno])
    os.close(fd)
"""


def has_cap_sys_resource():
    """Whether this process (hence the daemon it starts, and the daemon's outer inits) may
    lower an oom_score_adj: the bit in CapEff."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


def init_score_adj():
    """What the sandbox's init must have: -1000 where the outer init may set it, else what
    it inherits from the daemon (ours)."""
    if os.geteuid() == 0 and has_cap_sys_resource():
        return "-1000"
    with open("/proc/self/oom_score_adj") as f:
        return f.read().strip()


def tiny_writer():
    """A static x86-64 ELF of 163 bytes that writes 4 KiB blocks to stdout until write
    fails, then exits with the errno. Its few pages make it smaller than the sandbox's
    init, which is what made init (or the outer init) the OOM killer's choice: it picks
    the biggest process, and coreutils happen to be a little bigger than init."""
    code = bytes.fromhex(
        "4881ec00100000"   # sub rsp, 4096
        "b801000000"       # loop: mov eax, 1 (write)
        "bf01000000"       # mov edi, 1
        "4889e6"           # mov rsi, rsp
        "ba00100000"       # mov edx, 4096
        "0f05"             # syscall
        "4885c0"           # test rax, rax
        "7fe7"             # jg loop
        "f7d8"             # neg eax
        "89c7"             # mov edi, eax
        "b83c000000"       # mov eax, 60 (exit)
        "0f05")            # syscall
    base, size = 0x400000, 64 + 56 + len(code)
    ehdr = struct.pack("<4s5B7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, b"\0" * 7, 2,
                       0x3E, 1, base + 120, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000)
    return base64.b64encode(ehdr + phdr + code).decode()


def init_start(sb):
    """Start time of the sandbox's pid 1 (field 22 of /proc/1/stat): the same number means
    the same process."""
    stat = sb.sh("cat /proc/1/stat")
    return stat.rsplit(")", 1)[1].split()[19]


def test_command_and_context_scores(daemon):
    sb = Sandbox(daemon, "oom-scores")
    try:
        out = sb.sh("cat /proc/self/oom_score_adj /proc/1/oom_score_adj")
        assert out.split() == ["500", init_score_adj()], out
        # A background process keeps it, and the kernel's own score (oom_score, against
        # the host's memory: +500 is worth a third of its 0-2000 range shown as 0-1333)
        # ranks it far above init, whose pages are a sliver of that memory.
        out = sb.sh("sleep 30 & cat /proc/$!/oom_score_adj /proc/$!/oom_score /proc/1/oom_score;"
                    " kill $!")
        adj, score, init_score = (int(x) for x in out.split())
        assert adj == 500 and score - init_score >= 300, out
        # Sandbox code may give back its own preference, never below the daemon's floor.
        out = sb.sh("python3 -c '%s'" % LOWER)
        assert out.split() == ["0:ok", "-1:EACCES", "-1000:EACCES"], out
        cid = context(daemon, sb.id)
        out = run(daemon, sb.id, "print(open('/proc/self/oom_score_adj').read().strip())",
                  context=cid)
        assert out["error"] is None and "".join(out["logs"]["stdout"]) == "500\n", out
    finally:
        sb.delete()


def _cgroup_procs(daemon, sid):
    from test_upload_accounting import sandbox_cg
    _, cg = sandbox_cg(daemon, sid)
    with open(os.path.join(cg, "cgroup.procs")) as f:
        return {int(p) for p in f.read().split()}


def test_filling_shared_memory_kills_the_writer_not_init(daemon):
    sid = "oom-fill"
    sb = Sandbox(daemon, sid, limits={"memoryMb": 64, "tmpMb": 512})
    try:
        inits = _cgroup_procs(daemon, sid)   # nothing but the outer and the inner init yet
        assert len(inits) == 2, inits
        cid = context(daemon, sid)
        out = run(daemon, sid, "x = 41", context=cid)
        assert out["error"] is None, out
        sb.sh("sleep 1000 >/dev/null 2>&1 &")
        sb.sh("echo %s | base64 -d > /workspace/w && chmod +x /workspace/w" % tiny_writer())
        # Until the 512 MB /dev/shm is full, in a 64 MiB sandbox: the writer is the exec's
        # own process, and the smallest one in the sandbox.
        out = sb.exec("exec /workspace/w > /dev/shm/big")
        assert (out["exitCode"], out.get("signal"), out.get("oomKilled")) == \
            (137, "SIGKILL", True), out
        # The memory is full of the file, and the context and the sleep went before the
        # writer (the biggest first). A command now would have to be forked by init in a
        # full cgroup, with init as the only process to kill: refused with the reason (or,
        # when the kills left more than the reserve free, run: then it removes the file).
        status, out = daemon.json("POST", "/v1/sandboxes/%s/exec" % sid,
                                  {"command": "rm /dev/shm/big"})
        if not (status == 200 and out["exitCode"] == 0):
            assert (status, out["code"]) == (507, "MEMORY_LIMIT"), out
            assert "memory is full" in out["message"], out
        assert inits <= _cgroup_procs(daemon, sid)   # both inits live on
        status, info = daemon.json("GET", "/v1/sandboxes/" + sid)
        assert status == 200, info
    finally:
        sb.delete()


def test_filling_the_workspace_is_enospc_and_kills_nothing(daemon):
    if os.geteuid() != 0:
        return   # rootless: the workspace is a tmpfs (test_nonroot.py)
    sid = "ws-fill"
    sb = Sandbox(daemon, sid, limits={"memoryMb": 64, "diskMb": 256})
    try:
        start = init_start(sb)
        cid = context(daemon, sid)
        assert run(daemon, sid, "x = 41", context=cid)["error"] is None
        sb.sh("echo %s | base64 -d > /workspace/w && chmod +x /workspace/w" % tiny_writer())
        out = sb.exec("exec /workspace/w > /workspace/big")
        # on disk: the writer meets the file system's end (ENOSPC, 28); nobody is killed
        assert (out["exitCode"], out.get("oomKilled")) == (28, None), out
        out = run(daemon, sid, "print(x + 1)", context=cid)
        assert out["error"] is None and "".join(out["logs"]["stdout"]) == "42\n", out
        assert init_start(sb) == start
        sb.sh("rm /workspace/big")
    finally:
        sb.delete()


def test_spawn_reserve_flag(make_daemon):
    """--spawn-reserve-kb reaches the init: with more than the sandbox's memory asked for,
    nothing starts, and the answer says why; 0 turns the check off."""
    d = make_daemon("--spawn-reserve-kb", str(128 << 10))
    sb = Sandbox(d, "reserve", limits={"memoryMb": 64})
    status, out = d.json("POST", "/v1/sandboxes/reserve/exec", {"command": "echo hi"})
    assert (status, out["code"]) == (507, "MEMORY_LIMIT"), out
    status, out = d.json("POST", "/v1/sandboxes/reserve/processes", {"command": "sleep 1"})
    assert (status, out["code"]) == (507, "MEMORY_LIMIT"), out
    sb.delete()
    d0 = make_daemon("--spawn-reserve-kb", "0")
    sb = Sandbox(d0, "reserve", limits={"memoryMb": 64})
    assert sb.sh("echo hi") == "hi\n"
    sb.delete()
