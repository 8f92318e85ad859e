"""The daemon run by an ordinary user (issue 3): reduced features, reported honestly in
/v1/health, and the same namespaces, seccomp, capabilities and no_new_privs for every
process of a sandbox, Python contexts included.

Run as root (as in CI), the test starts the daemon as uid/gid 65534 with util-linux
`setpriv`, from a private copy of the binaries, the pre-built matplotlib cache and the
runtimes (the checkout's directories need not be readable by that user). The daemon finds
sandboxd-init, sandboxd-zygote and mpl-cache next to its own binary, and the runtimes
through --runtimes-dir.

Not root: nothing to switch from, so the module is skipped, unless
SANDBOXD_REQUIRE_NONROOT=1 asks for it, which turns the skip into a failure.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from sbxtest import BUILD, Daemon, Sandbox, context, main_text, run

USER = 65534
SETPRIV = ["setpriv", "--reuid=%d" % USER, "--regid=%d" % USER, "--clear-groups", "--"]
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _need_root():
    """Root: run for real (a missing setpriv is a failure). Not root: skip, or fail when
    SANDBOXD_REQUIRE_NONROOT=1."""
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.fail("test_nonroot needs util-linux setpriv to drop to uid %d" % USER,
                        pytrace=False)
        return
    why = ("test_nonroot starts the daemon as uid %d with setpriv, which needs root; "
           "running as uid %d" % (USER, os.geteuid()))
    if os.environ.get("SANDBOXD_REQUIRE_NONROOT") == "1":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def _as_user(*argv):
    """Run argv as the unprivileged user; its CompletedProcess."""
    return subprocess.run(SETPRIV + list(argv), capture_output=True, text=True, timeout=30)


class NonRootDaemon(Daemon):
    """A sandboxd run as USER from a copy under a fresh 0755 directory."""

    def __init__(self, top):
        bindir = os.path.join(top, "bin")
        os.mkdir(bindir)
        for name in ("sandboxd", "sandboxd-init", "sandboxd-zygote"):
            shutil.copy2(os.path.join(BUILD, name), bindir)
        shutil.copytree(os.path.join(BUILD, "mpl-cache"), os.path.join(bindir, "mpl-cache"))
        runtimes = os.path.join(top, "runtimes")
        shutil.copytree(os.path.join(SOURCE, "runtimes"), runtimes, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "tests", "bench"))
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                p = os.path.join(root, n)
                if not os.path.islink(p):
                    os.chmod(p, 0o755 if os.path.isdir(p) or os.access(p, os.X_OK) else 0o644)
        os.chmod(top, 0o755)
        self.state = os.path.join(top, "home")   # writable by USER only
        os.mkdir(self.state, 0o700)
        os.chown(self.state, USER, USER)
        self.log_path = os.path.join(top, "daemon.log")
        self.log = open(self.log_path, "w+b")
        self.proc = subprocess.Popen(
            SETPRIV + [os.path.join(bindir, "sandboxd"), "--listen", "127.0.0.1:0",
                       "--state-dir", os.path.join(self.state, "state"),
                       "--runtimes-dir", runtimes],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.state,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"})
        self.port = self._wait_port()
        self.token = None


@pytest.fixture(scope="module")
def d():
    _need_root()
    top = tempfile.mkdtemp(prefix="sbx-nonroot-")
    daemon = NonRootDaemon(top)
    yield daemon
    rc = daemon.stop()
    logs = daemon.logs().decode(errors="replace")
    shutil.rmtree(top, ignore_errors=True)
    assert rc == 0, logs[-3000:]
    # Nothing on the zygote's stderr (it is the daemon's log): no matplotlib warning
    # about an unwritable config dir, no traceback.
    assert "Matplotlib" not in logs and "Traceback" not in logs, logs[-3000:]


def _status(text):
    """The CapEff, NoNewPrivs, Seccomp and Uid lines of /proc/self/status, as a dict."""
    return dict(re.findall(r"^(CapEff|NoNewPrivs|Seccomp|Uid):\s*(\S+)", text, re.M))


def _cgroup_writable(pid):
    """True if USER can write to the cgroup the daemon runs in (a delegated one)."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().split()
    dirs = []
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if not ctrls:
            dirs.append("/sys/fs/cgroup" + path)
        for c in ctrls.split(","):
            if c in ("memory", "pids", "cpu"):
                dirs.append("/sys/fs/cgroup/%s%s" % (c, path))
    return any(os.path.isdir(x) and _as_user("test", "-w", x).returncode == 0 for x in dirs)


def _procs_with_ns(kind, ident):
    """Host pids whose namespace `kind` is ident ("pid:[…]"), or that hold it as a
    descriptor (the outer init's anchors)."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if os.readlink("/proc/%s/ns/%s" % (p, kind)) == ident:
                found.append(int(p))
                continue
            for fd in os.listdir("/proc/%s/fd" % p):
                if os.readlink("/proc/%s/fd/%s" % (p, fd)) == ident:
                    found.append(int(p))
                    break
        except OSError:
            pass   # gone meanwhile
    return found


def test_health_reports_reduced_features(d):
    status, h = d.json("GET", "/v1/health")
    assert status == 200, h
    sb = h["sandbox"]
    assert sb["root"] is False
    assert sb["userNamespaces"] is True and sb["seccomp"] is True
    assert sb["diskLimit"] is True    # the init mounts the workspace tmpfs in its user namespace
    if not _cgroup_writable(d.proc.pid):
        assert sb["cgroupVersion"] == 0
        assert (sb["memoryLimit"], sb["pidsLimit"], sb["cpuLimit"]) == (False, False, False)
    assert h["languages"]["python"]["available"] is True
    assert h["languages"]["javascript"]["available"] is True


def test_exec_is_isolated(d):
    s = Sandbox(d, "iso")
    try:
        out = s.sh("cat /proc/self/status; id -u; ls /proc | grep -c '^[0-9]'")
        st = _status(out)
        assert st == {"Uid": "1000", "CapEff": "0000000000000000", "NoNewPrivs": "1",
                      "Seccomp": "2"}, out
        # Own pid namespace: init, the shell, ls, grep (and nothing of the host).
        assert int(out.split()[-1]) <= 6, out
    finally:
        s.delete()


def test_python_context(d):
    s = Sandbox(d, "py")
    try:
        cid = context(d, s.id)   # python is the default language
        out = run(d, s.id, "x = 1+1\nx", context=cid)
        assert out["error"] is None and main_text(out) == "2", out
        out = run(d, s.id, "x + 1", context=cid)
        assert main_text(out) == "3", out   # state kept
        # The same isolation as any other process of the sandbox.
        out = run(d, s.id, "import os\nprint(open('/proc/self/status').read())\n"
                           "print(os.readlink('/proc/self/ns/pid'), os.readlink('/proc/self/ns/user'))",
                  context=cid)
        text = "".join(out["logs"]["stdout"])
        assert _status(text) == {"Uid": "1000", "CapEff": "0000000000000000",
                                 "NoNewPrivs": "1", "Seccomp": "2"}, text
        ns = s.sh("readlink /proc/self/ns/pid /proc/self/ns/user").split()
        assert text.split()[-2:] == ns, (text, ns)
        # The default run (no context given) works too, and matplotlib uses its cache.
        out = run(d, s.id, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\n1+1")
        assert out["error"] is None and main_text(out) == "2", out
        assert any("png" in r for r in out["results"]), out
    finally:
        s.delete()


def test_python_context_shows_no_host_path(d):
    """Class 11 of docs/security.md, non-root: the same rewrite of host paths (the
    daemon's copy of the binaries and runtimes, its state dir, the checkout) as in root
    mode, for what a context reads about its processes and its interpreter."""
    needles = [os.path.dirname(d.state), os.path.realpath(SOURCE)]
    code = ("import os, sys, IPython, matplotlib, traceback\n"
            "import sandboxd_runtime, sandboxd_runtime.fontcache as fc\n"
            "texts = [open('/proc/%%s/cmdline' %% p, 'rb').read().decode('latin1')\n"
            "         for p in os.listdir('/proc') if p.isdigit()]\n"
            "texts += [repr(sys.path), sandboxd_runtime.__file__, fc.__file__,\n"
            "          repr(sandboxd_runtime.__path__), sandboxd_runtime.serve.__code__.co_filename,\n"
            "          ''.join(traceback.format_stack()), IPython.get_ipython().ipython_dir,\n"
            "          matplotlib.get_configdir(), repr(dict(os.environ))]\n"
            "(len(texts) > 8, [t[:200] for t in texts if any(n in t for n in %r)])" % needles)
    s = Sandbox(d, "paths")
    try:
        out = run(d, s.id, code, context=context(d, s.id))
        assert out["error"] is None and main_text(out) == "(True, [])", out
    finally:
        s.delete()


def test_oom_score_adj(d):
    """Every process of the sandbox, Python contexts included, raises its oom_score_adj to
    500 so that the init is never the OOM killer's choice; the init keeps the daemon's
    (lowering it would need CAP_SYS_RESOURCE, which the daemon's user has not)."""
    with open("/proc/self/oom_score_adj") as f:
        ours = f.read().strip()   # the daemon inherits it through setpriv
    s = Sandbox(d, "oom")
    try:
        out = s.sh("cat /proc/self/oom_score_adj /proc/1/oom_score_adj")
        assert out.split() == ["500", ours], out
        cid = context(d, s.id)
        out = run(d, s.id, "print(open('/proc/self/oom_score_adj').read().strip())", context=cid)
        assert out["error"] is None and "".join(out["logs"]["stdout"]) == "500\n", out
    finally:
        s.delete()


def test_javascript_context(d):
    s = Sandbox(d, "js")
    try:
        cid = context(d, s.id, language="javascript")
        out = run(d, s.id, "const a = 20; a + 1", context=cid)
        assert out["error"] is None and main_text(out) == "21", out
        assert main_text(run(d, s.id, "a * 2", context=cid)) == "40"
    finally:
        s.delete()


def test_sandboxes_do_not_see_each_other(d):
    a, b = Sandbox(d, "one"), Sandbox(d, "two")
    try:
        a.sh("echo secret > /workspace/mine.txt")
        assert "mine.txt" not in b.sh("ls -a /workspace")
        out = b.exec("find / -name mine.txt -not -path '/proc/*' 2>/dev/null; true")
        assert "mine.txt" not in out["stdout"], out
        cid = context(d, b.id)
        out = run(d, b.id, "import os\nos.path.exists('/workspace/mine.txt')", context=cid)
        assert main_text(out) == "False", out
        pa, pb = (x.sh("readlink /proc/self/ns/pid /proc/self/ns/net") for x in (a, b))
        assert pa.split()[0] != pb.split()[0] and pa.split()[1] != pb.split()[1]
    finally:
        a.delete()
        b.delete()


def test_delete_leaves_no_process(d):
    s = Sandbox(d, "gone")
    deleted = False
    try:
        pidns, userns = s.sh("readlink /proc/self/ns/pid /proc/self/ns/user").split()
        py = context(d, s.id)
        run(d, s.id, "import subprocess\nsubprocess.Popen(['sleep', '1000'], "
                     "start_new_session=True)\n1", context=py)
        js = context(d, s.id, language="javascript")
        assert main_text(run(d, s.id, "1", context=js)) == "1"
        inside = _procs_with_ns("pid", pidns)
        assert len(inside) >= 4, inside   # init, the Python and Node contexts, sleep
        assert _procs_with_ns("user", userns), "the outer init should hold the namespaces"
        status, _ = s.delete()
        deleted = True
        assert status == 200
        deadline = time.time() + 10
        left = None
        while time.time() < deadline:
            left = _procs_with_ns("pid", pidns) + _procs_with_ns("user", userns)
            if not left:
                break
            time.sleep(0.05)
        assert not left, [open("/proc/%d/cmdline" % p).read() for p in left
                          if os.path.exists("/proc/%d" % p)]
    finally:
        if not deleted:
            s.delete()


def test_upload_is_written_in_the_sandbox(d):
    """Uploads go through the writer in the sandbox here too (no cgroups: nothing is
    charged to a memory group; the bytes fill the sandbox's workspace tmpfs)."""
    s = Sandbox(d, "up")
    try:
        data = os.urandom(3 << 20)
        status, _, body = d.request("PUT", "/v1/sandboxes/up/files/sub/x.bin", data)
        assert status == 201, body
        assert s.sh("sha256sum sub/x.bin").split()[0] == hashlib.sha256(data).hexdigest()
        assert s.sh("stat -c %u sub/x.bin") == "1000\n"
        status, _, got = d.request("GET", "/v1/sandboxes/up/files/sub/x.bin")
        assert status == 200 and got == data
    finally:
        s.delete()


def test_mountinfo_names_no_host_path(d):
    """Without root too, mountinfo names no host path: /opt/sandboxd is a private tmpfs
    made in a user namespace of the daemon's own, and /workspace a tmpfs the sandbox's
    init made in its user namespace (binds would show the runtimes copy and the state
    dir). The workspace tmpfs is capped by diskMb: an upload past it is 507 DISK_FULL."""
    s = Sandbox(d, "mnt", limits={"diskMb": 2})
    try:
        text = s.sh("cat /proc/self/mountinfo")
        top = os.path.dirname(d.log_path)
        assert top not in text, text
        mounts = {}
        for line in text.splitlines():
            pre, _, post = line.partition(" - ")
            mounts[pre.split()[4]] = (pre.split()[3], post.split()[1])
        assert mounts["/opt/sandboxd"] == ("/", "sandboxd"), text
        assert mounts["/workspace"] == ("/", "sandboxd-ws"), text
        assert s.sh("ls /opt/sandboxd") == "mpl-cache\nnode\npython\n"
        status, _, body = d.request("PUT", "/v1/sandboxes/mnt/files/big.bin", b"b" * (3 << 20))
        assert status == 507 and json.loads(body)["code"] == "DISK_FULL", body
        out = s.exec("head -c 3000000 /dev/zero > /workspace/own.bin")
        assert out["exitCode"] != 0 and "No space left on device" in out["stderr"], out
    finally:
        s.delete()


def test_suspend_needs_a_freezer(d):
    """Without root there are no cgroups, so no freezer: suspend says so (409), the
    sandbox keeps running, and every other request works as before."""
    s = Sandbox(d, "nofreeze")
    try:
        status, err = d.json("POST", "/v1/sandboxes/nofreeze/suspend")
        assert status == 409 and err["code"] == "CONFLICT", err
        assert "freezer" in err["message"]
        status, info = d.json("GET", "/v1/sandboxes/nofreeze")
        assert status == 200 and info["state"] == "running"
        status, info = d.json("POST", "/v1/sandboxes/nofreeze/resume")
        assert status == 200 and info["state"] == "running"
        assert s.sh("echo still") == "still\n"
    finally:
        s.delete()
