"""Hostile tests of the files API: code in the sandbox plants links and races directory
swaps against the daemon; nothing outside the workspace may ever be read, written,
listed or deleted through the API."""
import json
import os
import shutil
import tempfile
import threading
import time

import pytest

from sbxtest import Sandbox

SECRET = b"HOST-SECRET-7f3a"


@pytest.fixture
def host_secret():
    """A host directory with a marker file the sandbox must never reach."""
    d = tempfile.mkdtemp(prefix="sbx-hostile-")
    os.chmod(d, 0o755)
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(SECRET)
    os.chmod(os.path.join(d, "f"), 0o644)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def files(sb, path=""):
    return "/v1/sandboxes/%s/files/%s" % (sb.id, path)


def test_planted_links_are_never_followed(sandbox, host_secret):
    sandbox.sh("ln -s %s abs; ln -s ../../../../../../../../%s rel; ln -s / root; "
               "ln -s /proc/1/root magic; mkdir d; ln -s %s/f d/file" % ((host_secret,) * 3))
    for path in ("abs/f", "rel/f", "root%s/f" % host_secret, "magic/etc/passwd", "d/file",
                 "abs", "root"):
        status, _, body = sandbox.d.request("GET", files(sandbox, path))
        assert status == 400 and SECRET not in body, (path, status, body)
    # writing through a link: refused, and nothing appears on the host
    status, _, _ = sandbox.d.request("PUT", files(sandbox, "abs/new"), b"x")
    assert status == 400 and not os.path.exists(os.path.join(host_secret, "new"))
    # writing onto a link replaces the link, never the target
    status, _, _ = sandbox.d.request("PUT", files(sandbox, "d/file"), b"replaced")
    assert status == 201
    assert open(os.path.join(host_secret, "f"), "rb").read() == SECRET
    # deleting a link removes the link only; deleting through one is refused
    assert sandbox.d.request("DELETE", files(sandbox, "abs"))[0] == 200
    assert sandbox.d.request("DELETE", files(sandbox, "root%s/f" % host_secret))[0] == 400
    assert os.path.exists(os.path.join(host_secret, "f"))
    # moving into or out of a link: refused
    status, _ = sandbox.d.json("POST", "/v1/sandboxes/%s/files:move" % sandbox.id,
                               {"from": "d/file", "to": "rel/stolen"})
    assert status == 400
    status, _ = sandbox.d.json("POST", "/v1/sandboxes/%s/files:mkdir" % sandbox.id,
                               {"path": "rel/newdir"})
    assert status == 400
    assert sorted(os.listdir(host_secret)) == ["f"]


def test_hard_link_to_host_file_impossible(sandbox):
    """The workspace is its own filesystem (a tmpfs when root): no link to a host file."""
    out = sandbox.exec("ln /etc/passwd /workspace/hl")
    assert out["exitCode"] != 0
    assert sandbox.d.request("GET", files(sandbox, "hl"))[0] == 404


def test_swap_race_never_escapes(sandbox, host_secret):
    """A loop in the sandbox swaps a directory for a symlink to the host secret dir (and to
    '/') while the test reads, lists and writes through it as fast as it can."""
    with open(os.path.join(host_secret, "g"), "wb") as f:
        f.write(SECRET)
    sandbox.sh("mkdir -p real && printf inside > real/f && printf inside > real/g")
    script = ("import os\n"
              "os.chdir('/workspace')\n"
              "targets = ['%s', '/', '../../../../../..%s']\n"
              "i = 0\n"
              "while True:\n"
              "    t = targets[i %% 3]; i += 1\n"
              "    try:\n"
              "        os.rename('real', 'hold'); os.symlink(t, 'real')\n"
              "        time.sleep(0.0005)\n"   # hold each state a moment: both get hit
              "        os.unlink('real'); os.rename('hold', 'real')\n"
              "        time.sleep(0.0005)\n"
              "    except OSError:\n"
              "        pass\n" % (host_secret, host_secret))
    sandbox.sh("cat > /workspace/swap.py <<'EOF'\n%sEOF" % script)
    status, proc = sandbox.d.json("POST", "/v1/sandboxes/%s/processes" % sandbox.id,
                                  {"command": "python3 /workspace/swap.py"})
    assert status == 201
    seen = {"ok": 0, "refused": 0}
    leaks = []
    # at least 4 s, and on until both outcomes were seen (bounded: a slow build, ASan)
    start = time.time()
    stop = start + 4

    def going():
        now = time.time()
        return now < stop or (now < start + 20 and not (seen["ok"] and seen["refused"]))


    def hammer(paths):
        c = sandbox.d.conn(timeout=10)
        while going():
            for p in paths:
                c.request("GET", files(sandbox, p))
                r = c.getresponse()
                body = r.read()
                if SECRET in body:
                    leaks.append((p, r.status, body[:200]))
                if p == "real" and r.status == 200:
                    entries = json.loads(body)["entries"]
                    names = {e["name"] for e in entries
                             if not e["name"].startswith(".sbx-upload-")}   # PUTs in flight
                    # only the writer's temp file: the real dir, between two of its PUTs
                    if not names <= {"f", "g", "w"} or not entries:
                        leaks.append((p, r.status, body[:200]))   # a host dir was listed
                if r.status == 200:
                    seen["ok"] += 1
                else:
                    seen["refused"] += 1
                    assert r.status in (400, 404), (p, r.status, body)
        c.close()

    def writer():
        c = sandbox.d.conn(timeout=10)
        while going():
            c.request("PUT", files(sandbox, "real/w"), body=b"w")
            r = c.getresponse()
            r.read()
            assert r.status in (201, 400, 404, 409), r.status
        c.close()

    threads = [threading.Thread(target=hammer, args=(["real/f", "real/g", "real"],))
               for _ in range(3)]
    threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    sandbox.d.json("DELETE", "/v1/sandboxes/%s/processes/%s" % (sandbox.id, proc["id"]))
    assert not leaks, leaks[:3]
    assert seen["ok"] > 0 and seen["refused"] > 0, seen   # the race really happened
    # nothing was written outside
    assert sorted(os.listdir(host_secret)) == ["f", "g"]
    assert not os.path.exists("/w")


def test_fifo_and_socket_never_block(sandbox):
    sandbox.sh("mkfifo p1; mkdir q; mkfifo q/p2")
    t = time.time()
    for path in ("p1", "q/p2"):
        status, _, body = sandbox.d.request("GET", files(sandbox, path))
        assert status == 400
    assert time.time() - t < 2
    # the daemon still answers other requests
    assert sandbox.d.json("GET", "/v1/health")[0] == 200
