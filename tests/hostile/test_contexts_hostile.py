"""Hostile code inside code contexts: it must not reach the zygote, the daemon, other
sandboxes' contexts, or break the channel protocol for anyone but itself."""
import os

import pytest

from sbxtest import Sandbox, context, main_text, run


def host_pids(name):
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if name in open("/proc/%s/cmdline" % pid, "rb").read():
                    out.append(int(pid))
            except OSError:
                pass
    return out


@pytest.fixture(scope="module")
def pair(daemon):
    a = Sandbox(daemon, "ctx-hostile-a", limits={"pids": 64})
    b = Sandbox(daemon, "ctx-hostile-b")
    yield a, b
    a.delete()
    b.delete()


def test_cannot_signal_the_zygote_or_the_daemon(daemon, pair):
    a, _ = pair
    zygotes = host_pids(b"sandboxd-zygote")
    assert zygotes
    code = "import os\nres = []\nfor pid in %r + [%d]:\n" \
           "    try:\n        os.kill(pid, 9); res.append('killed')\n" \
           "    except OSError as e:\n        res.append(type(e).__name__)\nres" % (
               zygotes, daemon.proc.pid)
    out = run(daemon, a.id, code)
    assert "killed" not in main_text(out)
    assert all(os.path.exists("/proc/%d" % z) for z in zygotes) and daemon.alive()


def test_ptrace_and_namespaces_refused_in_a_context(daemon, pair):
    a, _ = pair
    out = run(daemon, a.id, "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "r1 = libc.ptrace(16, 1, 0, 0); e1 = ctypes.get_errno()\n"
              "r2 = libc.unshare(0x10000000); e2 = ctypes.get_errno()\n"
              "(r1, e1, r2, e2)")
    assert main_text(out) == "(-1, 1, -1, 1)"          # EPERM, EPERM


def test_kill_everything_inside_recovers(daemon, pair):
    a, b = pair
    ctx_b = context(daemon, b.id)
    run(daemon, b.id, "kept_b = 'b'", context=ctx_b)
    out = run(daemon, a.id, "import os, subprocess\nkept_a = 1\n"
              "p = subprocess.Popen(['sleep', '100'])\nos.kill(-1, 9)\np.wait()")
    assert main_text(out) == "-9"                # kill -1 reaches the sandbox's own processes
    assert main_text(run(daemon, a.id, "kept_a")) == "1"          # not the context itself
    out = run(daemon, a.id, "import os\nos.kill(os.getpid(), 9)")
    assert out["error"]["name"] == "ContextDied" and out["statePreserved"] is False
    assert "SIGKILL" in out["error"]["message"]
    assert main_text(run(daemon, a.id, "1 + 1")) == "2"          # a fresh incarnation
    assert main_text(run(daemon, b.id, "kept_b", context=ctx_b)) == "'b'"
    assert daemon.alive()


def test_fork_bomb_in_a_context(daemon, pair):
    a, _ = pair
    out = run(daemon, a.id, "import os\nerr = None\npids = []\ntry:\n"
              "    for _ in range(500): \n        pid = os.fork()\n"
              "        if pid == 0:\n            import time; time.sleep(30); os._exit(0)\n"
              "        pids.append(pid)\nexcept OSError as e:\n    err = e.errno\n"
              "for p in pids: os.kill(p, 9)\nfor p in pids: os.waitpid(p, 0)\nerr", timeoutMs=20000)
    assert main_text(out) == "11"                                  # EAGAIN at pids.max
    assert main_text(run(daemon, a.id, "1 + 1")) == "2"


def test_forged_channel_messages_only_confuse_their_own_context(daemon, pair):
    a, b = pair
    ctx_b = context(daemon, b.id)
    cid = context(daemon, a.id)
    forged = ("import os\nos.write(3, b'{\"type\":\"end\",\"id\":\"forged\",\"executionCount\":99}\\n')\n"
              "'after'")
    out = run(daemon, a.id, forged, context=cid)
    assert main_text(out) == "'after'" and out["executionCount"] != 99   # forged id ignored
    out = run(daemon, a.id, "import os\nos.write(3, b'not json at all\\n')", context=cid)
    assert out["error"]["name"] == "ContextDied"               # a broken channel ends it
    assert main_text(run(daemon, a.id, "1 + 1", context=cid)) == "2"
    assert main_text(run(daemon, b.id, "1 + 1", context=ctx_b)) == "2"
    assert daemon.alive()


def test_node_context_cannot_reach_out(daemon, pair):
    a, _ = pair
    js = context(daemon, a.id, language="javascript")
    out = run(daemon, a.id, "let r = []; for (const pid of [1, %d]) { try { process.kill(pid, 'SIGKILL');"
              " r.push('killed') } catch (e) { r.push(e.code) } } r" % daemon.proc.pid, context=js)
    assert "killed" not in main_text(out)
    assert daemon.alive()
    out = run(daemon, a.id, "require('fs').readFileSync('/proc/self/status', 'utf8')"
              ".split('\\n').filter(l => /^(CapEff|NoNewPrivs|Seccomp):/.test(l)).join(';')",
              context=js)
    assert "CapEff:\\t0000000000000000" in main_text(out) and "Seccomp:\\t2" in main_text(out)
