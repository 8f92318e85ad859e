"""Hostile use of background processes' stdin (POST …/processes/{pid}/stdin): another
sandbox's process is out of reach (404, and it gets nothing), bodies past
--max-body-bytes or writes past --process-stdin-bytes are refused with 413 naming the
limit, and a process that closes its stdin under a write leaves the daemon serving and
the write path answering 409."""
import json
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
