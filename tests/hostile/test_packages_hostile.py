"""Hostile tests of packages and host network (docs/packages.md, docs/security.md).

- The operator's site dirs (--python-site-dir) are read-only binds (src/init/init_root.c,
  site_bind): writing, creating, renaming or removing in them from a command or a context
  fails with EROFS, and nothing reaches the host directory; remounting is refused (EPERM:
  no capability in the sandbox).
- A sandbox's pip installs stay in its own workspace: a package installed in one sandbox
  cannot be planted into the system site dirs (read-only /usr) nor seen by another sandbox.
- network "host" is refused unless the operator passes --allow-host-network
  (src/api_sandbox.c, parse_settings): 400 VALIDATION_FAILED naming the setting, and no
  sandbox is made.
- A daemon refuses a site dir that the sandbox's users could not read (src/pysite.c).
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from sbxtest import BINARY, Daemon, Sandbox, context, run
from wheels import make_wheel


@pytest.fixture
def site_dir():
    d = tempfile.mkdtemp(prefix="sbx-site-h-")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "sbxguard.py"), "w") as f:
        f.write("WHO = 'operator'\n")
    os.chmod(os.path.join(d, "sbxguard.py"), 0o644)
    yield d
    shutil.rmtree(d)


def listing(d):
    return {n: open(os.path.join(d, n)).read() for n in sorted(os.listdir(d))}


WRITES = {
    "overwrite": "open('/opt/python-site/0/sbxguard.py', 'w').write('WHO = 1')",
    "create": "open('/opt/python-site/0/evil.py', 'w').write('x = 1')",
    "pth": "open('/opt/python-site/0/evil.pth', 'w').write('import os')",
    "remove": "import os; os.unlink('/opt/python-site/0/sbxguard.py')",
    "rename": "import os; os.rename('/opt/python-site/0/sbxguard.py', '/opt/python-site/0/x.py')",
    "mkdir": "import os; os.mkdir('/opt/python-site/0/pkg')",
    "chmod": "import os; os.chmod('/opt/python-site/0/sbxguard.py', 0o777)",
}


def test_operator_site_dir_is_read_only_from_contexts_and_commands(make_daemon, site_dir):
    before = listing(site_dir)
    d = make_daemon("--python-site-dir", site_dir)
    sb = Sandbox(d, "site-ro")
    cid = context(d, sb.id)
    for what, code in WRITES.items():
        out = run(d, sb.id, code, context=cid)
        assert out["error"] is not None, (what, out)
        assert out["error"]["name"] == "OSError", (what, out["error"])
        assert "[Errno 30] Read-only file system" in out["error"]["message"], (what, out["error"])
    out = sb.exec("echo x > /opt/python-site/0/sbxguard.py")
    assert out["exitCode"] == 2 and "Read-only file system" in out["stderr"], out
    out = sb.exec("touch /opt/python-site/0/t")
    assert out["exitCode"] == 1 and "Read-only file system" in out["stderr"], out
    # remounting it writable needs a capability the sandbox does not have
    out = run(d, sb.id, "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "r = libc.mount(None, b'/opt/python-site/0', None, 32 | 4096, None)\n"
              "print(r, os.strerror(ctypes.get_errno()))", context=cid)   # MS_REMOUNT|MS_BIND, no MS_RDONLY
    assert "".join(out["logs"]["stdout"]) == "-1 Operation not permitted\n", out
    # still the operator's module, in a fresh context too
    out = run(d, sb.id, "import sbxguard; print(sbxguard.WHO)", context=context(d, sb.id))
    assert "".join(out["logs"]["stdout"]) == "operator\n", out
    assert listing(site_dir) == before
    sb.delete()


def test_pip_cannot_write_the_system_site(daemon):
    sb = Sandbox(daemon, "pip-system")
    for target in ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3.11/dist-packages"):
        out = sb.exec("touch %s/sbx-planted" % target)
        assert out["exitCode"] == 1 and "Read-only file system" in out["stderr"], out
        assert not os.path.exists(os.path.join(target, "sbx-planted"))
    # pip told to install into the system, the runtimes or the operator's dirs: EROFS
    fname, data = make_wheel("sbxescape", "1.0", "X = 1\n")
    status, _, body = daemon.request("PUT", "/v1/sandboxes/%s/files/%s" % (sb.id, fname), data)
    assert status == 201, body
    # (exit 1: pip's own error; 2: --target's move out of its temporary dir raised)
    for opts, code in (("--prefix /usr", 1), ("--prefix /usr/local", 1),
                       ("--target /opt/sandboxd/python", 2)):
        out = sb.exec("pip install --no-index %s /workspace/%s" % (opts, fname),
                      timeoutMs=120000)
        assert out["exitCode"] == code, (opts, out)
        assert "[Errno 30] Read-only file system" in out["stderr"], (opts, out["stderr"])
    assert not os.path.exists("/usr/local/lib/python3.11/dist-packages/sbxescape.py")
    # a user site planted in one sandbox is its own: another sandbox's Python never sees it
    sb.sh("mkdir -p /workspace/.local/lib/python3.11/site-packages && "
          "echo 'WHO = 1' > /workspace/.local/lib/python3.11/site-packages/sbxplant.py")
    other = Sandbox(daemon, "pip-system-2")
    out = other.exec("python3 -c 'import sbxplant'")
    assert out["exitCode"] == 1 and "ModuleNotFoundError" in out["stderr"], out
    other.delete()
    sb.delete()


def test_host_network_needs_the_operator_setting(daemon):
    status, err = daemon.json("PUT", "/v1/sandboxes/net-host", {"network": "host"})
    assert status == 400 and err["code"] == "VALIDATION_FAILED", err
    assert "--allow-host-network" in err["message"] and "'network'" in err["message"], err
    status, err = daemon.json("POST", "/v1/sandboxes", {"network": "host"})
    assert status == 400 and "--allow-host-network" in err["message"], err
    assert daemon.json("GET", "/v1/sandboxes/net-host")[0] == 404
    status, listed = daemon.json("GET", "/v1/sandboxes")
    assert all(s["network"] == "none" for s in listed["sandboxes"]), listed


def test_host_network_with_the_setting_is_the_hosts(make_daemon):
    d = make_daemon("--allow-host-network")
    sb = Sandbox(d, "net-host-ok", network="host")
    assert sb.info["network"] == "host"
    # the host's interfaces, not only loopback
    links = sb.sh("cat /proc/net/dev").count(":")
    host_links = open("/proc/net/dev").read().count(":")
    assert links == host_links, (links, host_links)
    sb.delete()


def test_a_stored_host_network_sandbox_is_not_restored_without_the_setting():
    top = tempfile.mkdtemp(prefix="sbx-h-nethost-")
    d1 = Daemon("--allow-host-network", state=top)
    Sandbox(d1, "was-host", network="host")
    Sandbox(d1, "was-none")
    assert d1.stop() == 0
    d2 = Daemon(state=top)
    try:
        assert d2.json("GET", "/v1/sandboxes/was-host")[0] == 404
        assert d2.json("GET", "/v1/sandboxes/was-none")[0] == 200
        assert b"sandbox was-host: not restored: its stored settings are refused now" in \
            d2.logs() and b"--allow-host-network" in d2.logs()
    finally:
        assert d2.stop() == 0
        shutil.rmtree(top, ignore_errors=True)


def test_daemon_refuses_a_site_dir_others_cannot_read():
    d = tempfile.mkdtemp(prefix="sbx-site-priv-")
    try:
        os.chmod(d, 0o700)
        out = subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--state-dir",
                              os.path.join(d, "state"), "--python-site-dir", d],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 1, out
        if os.geteuid() == 0:
            assert "--python-site-dir %s: %s is not readable by others" % (d, d) in out.stderr, \
                out.stderr
        out = subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--state-dir",
                              os.path.join(d, "state"), "--python-site-dir", "relative/dir"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "not a list of absolute paths" in out.stderr, out
        out = subprocess.run([BINARY, "--listen", "127.0.0.1:0", "--state-dir",
                              os.path.join(d, "state"), "--python-site-dir", d + "/missing"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 1 and "not a directory" in out.stderr, out
    finally:
        shutil.rmtree(d)
