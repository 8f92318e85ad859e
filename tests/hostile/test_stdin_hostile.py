"""Hostile use of background processes' stdin (POST …/processes/{pid}/stdin): another
sandbox's process is out of reach (404, and it gets nothing), bodies past
--max-body-bytes or writes past --process-stdin-bytes are refused with 413 naming the
limit, and a process that closes its stdin under a write leaves the daemon serving and
the write path answering 409. Memory is read from the daemon's own /proc/<pid>/status
(VmHWM, the peak RSS, reset before the attack with clear_refs 5)."""
import json
import os
import time

from sbxtest import Sandbox


def start(sb, command, **kw):
    status, p = sb.d.json("POST", "/v1/sandboxes/%s/processes" % sb.id, {"command": command, **kw})
    assert status == 201, p
    return p


def stdin_url(sb, pid):
    return "/v1/sandboxes/%s/processes/%s/stdin" % (sb.id, pid)


def test_stdin_of_another_sandboxs_process_is_404(make_daemon):
    d = make_daemon()
    a, b = Sandbox(d, "stdin-a"), Sandbox(d, "stdin-b")
    p = start(a, "cat", stdin=True)
    status, e = b.d.json("POST", stdin_url(b, p["id"]), {"data": "intruder\n", "eof": True})
    assert status == 404 and e["code"] == "PROCESS_NOT_FOUND", e
    assert p["id"] in e["message"] and "stdin-b" in e["message"]
    # a's process got nothing and still runs with its stdin open
    info = a.d.json("GET", "/v1/sandboxes/%s/processes/%s" % (a.id, p["id"]))[1]
    assert info["status"] == "running" and info["stdin"] == {"open": True, "held": 0}
    logs = a.d.json("GET", "/v1/sandboxes/%s/processes/%s/logs" % (a.id, p["id"]))[1]
    assert logs["stdout"] == ""
    a.delete()
    b.delete()


def test_huge_bodies_are_413(make_daemon):
    d = make_daemon("--max-body-bytes", "65536", "--process-stdin-bytes", "4096")
    sb = Sandbox(d, "stdin-huge")
    p = start(sb, "cat > /dev/null", stdin=True)
    # past --max-body-bytes: the HTTP layer refuses it before any of it is parsed, whether
    # it is sent or only declared (1 GiB)
    body = json.dumps({"data": "x" * 70000}).encode()
    status, _, data = d.request("POST", stdin_url(sb, p["id"]), body,
                                {"Content-Type": "application/json"})
    assert status == 413 and json.loads(data)["code"] == "PAYLOAD_TOO_LARGE", data
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 1073741824\r\n\r\n{\"data\":\"" % stdin_url(sb, p["id"])).encode()
    out = d.raw(head)
    assert out.startswith(b"HTTP/1.1 413 ") and b"PAYLOAD_TOO_LARGE" in out, out[:300]
    # within the body limit but larger than --process-stdin-bytes: 413 naming it; the
    # same bytes in base64 are measured decoded
    status, e = d.json("POST", stdin_url(sb, p["id"]), {"data": "y" * 4097})
    assert status == 413 and e["code"] == "PAYLOAD_TOO_LARGE", e
    assert "4097 bytes" in e["message"] and "--process-stdin-bytes" in e["message"]
    status, e = d.json("POST", stdin_url(sb, p["id"]),
                       {"data": "QUFB" * 1366, "encoding": "base64"})   # 4098 bytes
    assert status == 413 and "4098 bytes" in e["message"], e
    # exactly the cap is fine, and the process is still served
    status, out = d.json("POST", stdin_url(sb, p["id"]), {"data": "z" * 4096, "eof": True})
    assert status == 200 and out["accepted"] == 4096, out
    sb.delete()


def test_process_closing_its_stdin_under_writes(make_daemon):
    d = make_daemon()
    sb = Sandbox(d, "stdin-closer")
    p = start(sb, "exec 0<&-; sleep 1000", stdin=True)
    deadline = time.time() + 30
    while True:
        status, out = d.json("POST", stdin_url(sb, p["id"]), {"data": "x" * 65536})
        if status == 409:
            break
        assert status == 200, out
        assert time.time() < deadline, "the write never saw the closed pipe"
        time.sleep(0.02)
    assert out["code"] == "CONFLICT" and "closed" in out["message"], out
    assert d.json("GET", "/v1/health")[0] == 200
    info = d.json("GET", "/v1/sandboxes/%s/processes/%s" % (sb.id, p["id"]))[1]
    assert info["status"] == "running" and info["stdin"] == {"open": False, "held": 0}
    sb.delete()


def status_kb(pid, field):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def test_processes_that_never_read_keep_the_daemon_bounded(make_daemon):
    """8 processes that never read are offered 8 MiB of stdin each (64 MiB in all); the
    daemon holds at most --process-stdin-bytes (1 MiB) for each and refuses the rest with
    429, so its peak RSS grows by a small multiple of 8 MiB, not by 64 MiB."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    d = make_daemon(env={"ASAN_OPTIONS": (asan + ":" if asan else "") +
                         "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"})
    sb = Sandbox(d, "stdin-bounded")
    procs = [start(sb, "sleep 1000", stdin=True)["id"] for _ in range(8)]
    pid = d.proc.pid
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")           # VmHWM := VmRSS
    base = status_kb(pid, "VmRSS")
    chunk = "x" * (64 << 10)
    conn = d.conn()
    counts = {200: 0, 429: 0}
    for _ in range(128):
        for p in procs:
            status, out = d.json("POST", stdin_url(sb, p), {"data": chunk}, conn=conn)
            counts[status] = counts.get(status, 0) + 1
            if status == 429:
                assert out["code"] == "LIMIT_REACHED" and "--process-stdin-bytes" in out["message"]
    conn.close()
    growth = (status_kb(pid, "VmHWM") - base) / 1024
    print("stdin answers %s; daemon peak RSS growth: %.1f MiB" % (counts, growth))
    assert set(counts) == {200, 429} and counts[429] > 8 * 100, counts
    for p in procs:
        info = d.json("GET", "/v1/sandboxes/%s/processes/%s" % (sb.id, p))[1]
        assert 1048576 - len(chunk) < info["stdin"]["held"] <= 1048576, info
    usage = d.json("GET", "/v1/sandboxes/" + sb.id)[1]["usage"]
    assert usage["bufferPeakBytes"] <= 8 * 2 * 1048576, usage
    # with --process-stdin-bytes 1 GiB only the sandbox's 64 MiB budget bounds it
    # (measured: 962 writes taken, peak RSS +60 MiB); with the cap: +9 MiB
    assert growth < 32, "daemon peak RSS grew by %.0f MiB" % growth
    sb.delete()
