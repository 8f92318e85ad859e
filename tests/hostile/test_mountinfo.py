"""Hostile tests: the sandbox's mount table names no host path (issue 11, class 11).

/proc/self/mountinfo shows each mount's source and its "root" (the path inside the source
filesystem). A bind of a host directory shows that directory's host path there, e.g. the
checkout the daemon runs from. Read from a command and from a Python context, the table
must name neither the checkout, nor the build dir, nor the daemon's state dir, and
/opt/sandboxd must be the daemon's private tmpfs (source "sandboxd", root "/").
"""
import os

from sbxtest import BUILD, Sandbox, context, run

CHECKOUT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def host_paths(daemon):
    build = os.path.realpath(BUILD)
    return {"checkout": CHECKOUT, "checkout of the build": os.path.dirname(build),
            "build dir": build, "state dir": os.path.realpath(daemon.state)}


def fields(line):
    """(root, mount point, source) of a mountinfo line."""
    pre, _, post = line.partition(" - ")
    f = pre.split()
    return f[3], f[4], post.split()[1]


def check(daemon, text):
    assert text.strip(), "empty mountinfo"
    for what, path in host_paths(daemon).items():
        assert path not in text, "mountinfo shows the %s, %s:\n%s" % (what, path, text)
    mounts = [fields(ln) for ln in text.splitlines() if ln.strip()]
    opt = {m for m in mounts if m[1] == "/opt/sandboxd"}
    assert opt == {("/", "/opt/sandboxd", "sandboxd")}, opt


def test_mountinfo_from_a_command(daemon):
    sb = Sandbox(daemon, "mounts-cmd")
    check(daemon, sb.sh("cat /proc/self/mountinfo /proc/1/mountinfo"))
    sb.delete()


def test_mountinfo_from_a_python_context(daemon):
    sb = Sandbox(daemon, "mounts-py")
    cid = context(daemon, sb.id)
    out = run(daemon, sb.id, "print(open('/proc/self/mountinfo').read())", context=cid)
    assert out["error"] is None, out
    check(daemon, "".join(out["logs"]["stdout"]))
    sb.delete()
