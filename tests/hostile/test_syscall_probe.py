"""Hostile tests with the static C probe (tests/hostile/probe.c): it is uploaded into a
sandbox and run once per attack; each run prints one line whose exact text is asserted.

Covers the socket rows for every call that takes a family (socketpair() reaches the same
family code as socket()), the protocol and type limits of inet sockets, modify_ldt,
clone(CLONE_PARENT) and clone3, and what the policy must keep working: AF_UNIX pairs,
inet TCP/UDP sockets, threads (glibc's pthread_create falls back from clone3 to clone)
and fork.
"""
import os

import pytest

from sbxtest import BUILD, Sandbox

# The probe of the tree under test, unless told otherwise (to run these tests against an
# older daemon with this tree's probe: SANDBOXD_PROBE=build/hostile-probe).
PROBE = os.environ.get("SANDBOXD_PROBE") or os.path.join(BUILD, "hostile-probe")

EAFNOSUPPORT = "errno EAFNOSUPPORT (97)"
EPROTONOSUPPORT = "errno EPROTONOSUPPORT (93)"
ESOCKTNOSUPPORT = "errno ESOCKTNOSUPPORT (94)"
EPERM = "errno EPERM (1)"
ENOSYS = "errno ENOSYS (38)"


@pytest.fixture(scope="module")
def box(daemon):
    s = Sandbox(daemon, "probe", limits={"pids": 64})
    with open(PROBE, "rb") as f:
        status, hdrs, body = daemon.request("PUT", "/v1/sandboxes/probe/files/probe", f.read())
    assert status == 201, body
    s.sh("chmod 755 /workspace/probe")
    yield s
    s.delete()


def probe(box, name):
    out = box.exec("/workspace/probe %s" % name)
    return out["exitCode"], out["stdout"].strip()


@pytest.mark.parametrize("name,want", [
    ("socketpair-netlink", EAFNOSUPPORT),
    ("socketpair-packet", EAFNOSUPPORT),
    ("socketpair-vsock", EAFNOSUPPORT),
    ("socketpair-alg", EAFNOSUPPORT),
    ("socketpair-sctp", EPROTONOSUPPORT),     # AF_INET pair with IPPROTO_SCTP
    ("socket-netlink", EAFNOSUPPORT),
    ("socket-vsock", EAFNOSUPPORT),
    ("socket-sctp", EPROTONOSUPPORT),         # would autoload the SCTP module
    ("socket-sctp6", ESOCKTNOSUPPORT),        # AF_INET6 SOCK_SEQPACKET (SCTP's type)
    ("socket-dccp", ESOCKTNOSUPPORT),         # SOCK_DCCP
    ("socket-l2tp", EPROTONOSUPPORT),         # IPPROTO_L2TP
    ("socket-raw", EPERM),
    ("modify-ldt", EPERM),
    ("clone-parent", EPERM),
    ("clone3", ENOSYS),
    ("clone3-plain", ENOSYS),
    ("pidfd-getfd", EPERM),
])
def test_denied(box, name, want):
    assert probe(box, name) == (0, "%s: %s" % (name, want))


@pytest.mark.parametrize("name", ["ok-socketpair-unix", "ok-inet", "ok-threads", "ok-fork"])
def test_still_works(box, name):
    assert probe(box, name) == (0, "%s: works" % name)
