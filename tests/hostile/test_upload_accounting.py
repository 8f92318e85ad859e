"""Hostile tests of what an upload costs and who pays (issue 11, class 2).

A client uploads more than its sandbox's memory into the sandbox's /workspace. When the
daemon is root the workspace is an ext4 image on disk (docs/lifecycle.md, "Durability"):
the file lands on the sandbox's disk, is written by a process of the sandbox (its page
cache charged to the sandbox's cgroup, never the daemon's), and the daemon's cgroup holds
none of it; a second file that does not fit in what is left of diskMb is refused with 507
DISK_FULL before a byte is written. A file that fits is written to the sandbox's image.
(Rootless, the workspace is a tmpfs charged to memory: test_nonroot.py.)

Who pays is read from the cgroups: tmpfs pages count as "shmem" in memory.stat of the
cgroup they are charged to. The daemon's group is found from /proc/<pid>/cgroup; on cgroup
v1 its memory.stat "shmem" line counts only its own processes (the sandboxes are child
groups, counted in "total_shmem"); on v2 the daemon sits in a leaf of its own.
"""
import glob
import hashlib
import json
import os
import socket
import threading
import time

from sbxtest import Sandbox

MIB = 1 << 20


def memcg_dir(pid):
    """The memory cgroup directory of pid, (version, path)."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().splitlines()
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            return 1, "/sys/fs/cgroup/memory" + path
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if ctrls == "":
            return 2, "/sys/fs/cgroup" + path
    raise AssertionError("no memory cgroup for pid %d" % pid)


def stat(cg, key):
    with open(os.path.join(cg, "memory.stat")) as f:
        for line in f:
            k, v = line.split()
            if k == key:
                return int(v)
    raise AssertionError("%s has no %s in memory.stat" % (cg, key))


def sandbox_cg(daemon, sid):
    version, cg = memcg_dir(daemon.proc.pid)
    found = glob.glob(os.path.join(cg, "sandboxd-*", sid)) + \
        glob.glob(os.path.join(os.path.dirname(cg), "sandboxd-*", sid))
    assert len(found) == 1, (cg, found)
    return version, found[0]


def peak(version, cg):
    name = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
    with open(os.path.join(cg, name)) as f:
        return int(f.read())


def oom_kills(version, cg):
    name = "memory.oom_control" if version == 1 else "memory.events"
    with open(os.path.join(cg, name)) as f:
        for line in f:
            k, v = line.split()
            if k == "oom_kill":
                return int(v)
    return 0


def chunked_upload(daemon, sid, path, total, block=MIB):
    """PUT total bytes with chunked encoding (no Content-Length, so no size precheck) from
    a sending thread, while the response is read as soon as it comes (the daemon answers
    a failed upload early and then drops the rest of the body). (status, json)."""
    s = socket.create_connection(("127.0.0.1", daemon.port), timeout=120)
    s.sendall(b"PUT /v1/sandboxes/%s/files/%s HTTP/1.1\r\nHost: x\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" % (sid.encode(), path.encode()))
    piece = b"%x\r\n" % block + b"\x5a" * block + b"\r\n"

    def send():
        try:
            for _ in range(total // block):
                s.sendall(piece)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass   # the daemon answered and closed: the reader has the answer

    t = threading.Thread(target=send, daemon=True)
    t.start()
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([ln.split(b":")[1] for ln in head.split(b"\r\n")
                  if ln.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        chunk = s.recv(65536)
        assert chunk, (head, body)
        body += chunk
    s.close()
    t.join(60)
    return int(head.split()[1]), json.loads(body[:length])


def test_upload_past_memory_limit_lands_on_the_sandboxs_disk(daemon):
    if os.geteuid() != 0:
        return   # no cgroups without root: nothing is charged to anyone (see test_nonroot)
    sb = Sandbox(daemon, "charge", limits={"memoryMb": 64, "diskMb": 512})
    version, dcg = memcg_dir(daemon.proc.pid)
    # the daemon's own shmem and page cache, sampled through the upload (local counters)
    keys = ("shmem", "cache") if version == 1 else ("shmem", "file")
    before = [stat(dcg, k) for k in keys]
    samples = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append([stat(dcg, k) for k in keys])
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        status, e = chunked_upload(daemon, sb.id, "big.bin", 300 * MIB)
    finally:
        done.set()
        t.join(10)
    assert status == 201 and e["size"] == 300 * MIB, (status, e)
    # the daemon's cgroup never held the file
    for i, k in enumerate(keys):
        assert max(s[i] for s in samples) - before[i] < 32 * MIB, (k, before, samples[-1])
    # the sandbox has it, and lives on
    assert sb.sh("stat -c %s /workspace/big.bin") == "%d\n" % (300 * MIB)
    # announced with Content-Length, more than the disk has left: refused before a byte
    c = daemon.conn(timeout=30)
    c.putrequest("PUT", "/v1/sandboxes/%s/files/big2.bin" % sb.id)
    c.putheader("Content-Length", str(300 * MIB))
    c.endheaders()
    r = c.getresponse()
    e = json.loads(r.read())
    c.close()
    assert r.status == 507 and e["code"] == "DISK_FULL" and "does not fit" in e["message"], e
    assert sb.sh("ls -A /workspace") == "big.bin\n"
    sb.delete()


def test_upload_that_fits_is_written_to_the_sandboxs_image(daemon):
    if os.geteuid() != 0:
        return
    sb = Sandbox(daemon, "fits", limits={"memoryMb": 64, "diskMb": 512})
    _, dcg = memcg_dir(daemon.proc.pid)
    img = os.path.join(daemon.state, "state", "sandboxes", sb.id, "workspace.img")
    data = os.urandom(10 * MIB)
    d_before, i_before = stat(dcg, "shmem"), os.stat(img).st_blocks * 512
    status, _, body = daemon.request("PUT", "/v1/sandboxes/%s/files/ten.bin" % sb.id, data)
    assert status == 201 and json.loads(body)["size"] == len(data), body
    assert sb.sh("sha256sum /workspace/ten.bin").split()[0] == hashlib.sha256(data).hexdigest()
    sb.sh("sync /workspace/ten.bin")
    assert os.stat(img).st_blocks * 512 - i_before >= len(data), (i_before, os.stat(img))
    assert stat(dcg, "shmem") - d_before < 4 * MIB, (d_before, stat(dcg, "shmem"))
    assert sb.sh("stat -c %U /workspace/ten.bin") == "sandbox\n"
    sb.delete()


def test_writer_killed_by_sandbox_code_fails_the_upload(daemon):
    """Code in the sandbox can see and kill the writer (it runs as the sandbox's user):
    the upload then fails with 409 naming the signal, and no partial file is put in place."""
    sb = Sandbox(daemon, "killer")
    s = socket.create_connection(("127.0.0.1", daemon.port), timeout=60)
    s.sendall(b"PUT /v1/sandboxes/%s/files/victim.bin HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: %d\r\n\r\n" % (sb.id.encode(), 8 * MIB) + b"v" * MIB)
    out = sb.exec("for i in $(seq 1 600); do pkill -9 -x cat && exit 0; sleep 0.05; done; "
                  "exit 1")
    assert out["exitCode"] == 0, out
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = s.recv(65536)
        assert chunk, data
        data += chunk
    s.close()
    status = int(data.split()[1])
    e = json.loads(data.partition(b"\r\n\r\n")[2])
    assert status == 409 and e["code"] == "CONFLICT" and "signal 9" in e["message"], data
    assert sb.sh("ls -A /workspace") == ""
    sb.delete()


def test_upload_at_the_process_limit_is_429(daemon):
    """The writer is a process of the sandbox: at its pids limit it cannot start."""
    sb = Sandbox(daemon, "full-pids", limits={"pids": 8})
    for _ in range(16):
        # exec: one pid each, no shell that could fail to fork at the limit and exit,
        # freeing pids again
        status, _ = daemon.json("POST", "/v1/sandboxes/%s/processes" % sb.id,
                                {"command": "exec sleep 1000"})
        if status == 429:
            break
    assert status == 429
    status, _, body = daemon.request("PUT", "/v1/sandboxes/%s/files/x.bin" % sb.id, b"x" * 100)
    e = json.loads(body)
    assert status == 429 and e["code"] == "LIMIT_REACHED" and "process limit" in e["message"], e
    sb.delete()
