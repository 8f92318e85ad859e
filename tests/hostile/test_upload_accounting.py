"""Hostile tests of what an upload costs and who pays (issue 11, class 2).

A client uploads more than its sandbox's memory into the sandbox's /workspace (a tmpfs when
the daemon is root). The bytes must be charged to the sandbox, never to the daemon: the
upload fails with 507 MEMORY_LIMIT once the sandbox's own cgroup is full, the daemon's
cgroup holds none of the file, and the sandbox's cgroup shows the bytes that were written.
A file that fits is written and charged to the sandbox.

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


def test_upload_past_memory_limit_is_charged_to_the_sandbox(daemon):
    if os.geteuid() != 0:
        return   # no cgroups without root: nothing is charged to anyone (see test_nonroot)
    sb = Sandbox(daemon, "charge", limits={"memoryMb": 64, "diskMb": 512})
    version, dcg = memcg_dir(daemon.proc.pid)
    _, scg = sandbox_cg(daemon, sb.id)
    # the daemon's own shmem, sampled through the upload (local counter: not the sandboxes)
    key = "shmem"
    before = stat(dcg, key)
    samples = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            samples.append(stat(dcg, key))
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        status, e = chunked_upload(daemon, sb.id, "big.bin", 300 * MIB)
    finally:
        done.set()
        t.join(10)
    after = stat(dcg, key)
    assert status == 507 and e["code"] == "MEMORY_LIMIT", (status, e)
    assert "memoryMb 64" in e["message"], e
    # the daemon's cgroup never held the file
    assert max(samples) - before < 16 * MIB, (before, max(samples))
    assert after - before < 16 * MIB, (before, after)
    # the sandbox's cgroup did: it ran up to its limit, and its OOM killer ended the writer
    assert peak(version, scg) >= 48 * MIB, peak(version, scg)
    assert oom_kills(version, scg) >= 1
    # ... not the sandbox: it still runs commands, and no partial file is left
    assert sb.sh("ls -A /workspace") == ""
    # announced with Content-Length: refused before a byte is written
    c = daemon.conn(timeout=30)
    c.putrequest("PUT", "/v1/sandboxes/%s/files/big.bin" % sb.id)
    c.putheader("Content-Length", str(300 * MIB))
    c.endheaders()
    r = c.getresponse()
    e = json.loads(r.read())
    c.close()
    assert r.status == 507 and e["code"] == "MEMORY_LIMIT" and "does not fit" in e["message"], e
    sb.delete()


def test_upload_that_fits_is_charged_to_the_sandbox(daemon):
    if os.geteuid() != 0:
        return
    sb = Sandbox(daemon, "fits", limits={"memoryMb": 64, "diskMb": 512})
    _, dcg = memcg_dir(daemon.proc.pid)
    _, scg = sandbox_cg(daemon, sb.id)
    data = os.urandom(10 * MIB)
    d_before, s_before = stat(dcg, "shmem"), stat(scg, "shmem")
    status, _, body = daemon.request("PUT", "/v1/sandboxes/%s/files/ten.bin" % sb.id, data)
    assert status == 201 and json.loads(body)["size"] == len(data), body
    assert stat(scg, "shmem") - s_before >= len(data), (s_before, stat(scg, "shmem"))
    assert stat(dcg, "shmem") - d_before < 4 * MIB, (d_before, stat(dcg, "shmem"))
    assert sb.sh("sha256sum /workspace/ten.bin").split()[0] == hashlib.sha256(data).hexdigest()
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
