"""End-to-end tests of background processes: start, list, get, logs (JSON and SSE), kill,
ring buffers that drop and count, many followers, slow followers, the sandbox's deletion,
and a server reachable from the sandbox only."""
import errno
import json
import socket
import threading
import time

import pytest

from sbxtest import Sandbox, sse_events


def start(sb, command, **kw):
    status, p = sb.d.json("POST", "/v1/sandboxes/%s/processes" % sb.id,
                          {"command": command, **kw})
    assert status == 201, p
    return p


def proc_url(sb, pid="", tail=""):
    return "/v1/sandboxes/%s/processes%s%s" % (sb.id, "/" + pid if pid else "", tail)


def wait_exit(sb, pid, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, p = sb.d.json("GET", proc_url(sb, pid))
        assert status == 200
        if p["status"] == "exited":
            return p
        time.sleep(0.05)
    raise AssertionError("process did not exit")


def follow(sb, pid, timeout=30):
    c = sb.d.conn(timeout=timeout)
    c.request("GET", proc_url(sb, pid, "/logs"), headers={"Accept": "text/event-stream"})
    r = c.getresponse()
    assert r.status == 200
    events = sse_events(r.read())
    c.close()
    return events


def test_lifecycle(sandbox):
    p = start(sandbox, "echo hi; echo err >&2; exit 3", env={"X": "1"})
    assert set(p) == {"id", "pid", "command", "status"} and p["status"] == "running"
    assert p["id"].startswith("proc-") and p["pid"] > 1
    done = wait_exit(sandbox, p["id"])
    assert done["exitCode"] == 3 and done["startedAt"] <= done["endedAt"]
    status, logs = sandbox.d.json("GET", proc_url(sandbox, p["id"], "/logs"))
    assert status == 200 and logs["stdout"] == "hi\n" and logs["stderr"] == "err\n"
    assert logs["dropped"] == {"stdout": 0, "stderr": 0} and logs["truncated"] is False
    status, lst = sandbox.d.json("GET", proc_url(sandbox))
    assert [x["id"] for x in lst["processes"]] == [p["id"]]
    status, out = sandbox.d.json("DELETE", proc_url(sandbox, p["id"]))
    assert status == 200 and out["deleted"] is True
    assert sandbox.d.json("GET", proc_url(sandbox, p["id"]))[0] == 404
    status, e = sandbox.d.json("GET", proc_url(sandbox, "proc-nope"))
    assert status == 404 and e["code"] == "PROCESS_NOT_FOUND"


def test_cwd_env_validation(sandbox):
    sandbox.sh("mkdir -p sub")
    p = start(sandbox, "pwd; echo $FOO", cwd="sub", env={"FOO": "bar"})
    wait_exit(sandbox, p["id"])
    logs = sandbox.d.json("GET", proc_url(sandbox, p["id"], "/logs"))[1]
    assert logs["stdout"] == "/workspace/sub\nbar\n"
    for body in ({}, {"command": ""}, {"command": 1}, {"command": "x", "env": {"A": 1}},
                 {"command": "x", "cwd": "/nope"}):
        status, e = sandbox.d.json("POST", proc_url(sandbox), body)
        assert status == 400, (body, e)


def test_kill_whole_group(sandbox):
    p = start(sandbox, "sleep 1000 & sleep 1000 & wait")
    time.sleep(0.2)
    assert "sleep 1000" in sandbox.sh("ps -eo args")
    t = time.time()
    status, out = sandbox.d.json("DELETE", proc_url(sandbox, p["id"]))
    assert status == 200 and out["status"] == "exited" and out["signal"] == "SIGKILL"
    assert out["exitCode"] == 137 and time.time() - t < 5
    assert "sleep 1000" not in sandbox.sh("ps -eo args")


def test_sse_follow_replay_and_exit(sandbox):
    p = start(sandbox, "echo early; sleep 0.5; for i in 1 2 3; do echo out$i; echo err$i >&2; "
                       "sleep 0.1; done; exit 7")
    time.sleep(0.2)
    events = follow(sandbox, p["id"])
    kinds = [e[0] for e in events]
    assert kinds[-1] == "exit" and events[-1][2]["exitCode"] == 7
    assert [e[1] for e in events] == list(range(1, len(events) + 1))
    out = "".join(e[2]["text"] for e in events if e[0] == "stdout")
    err = "".join(e[2]["text"] for e in events if e[0] == "stderr")
    assert out == "early\nout1\nout2\nout3\n" and err == "err1\nerr2\nerr3\n"
    # following a finished process replays the ring and ends at once
    again = follow(sandbox, p["id"])
    assert "".join(e[2]["text"] for e in again if e[0] == "stdout") == out
    assert again[-1][0] == "exit"


def test_many_followers(sandbox):
    p = start(sandbox, "sleep 0.3; seq 1 20000")
    results = [None] * 8

    def run(i):
        results[i] = follow(sandbox, p["id"])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    want = "".join("%d\n" % i for i in range(1, 20001))
    for ev in results:
        assert ev and ev[-1][0] == "exit"
        assert "".join(e[2]["text"] for e in ev if e[0] == "stdout") == want


def test_ring_drops_and_counts(make_daemon):
    d = make_daemon("--process-log-bytes", "4096")
    sb = Sandbox(d, "ring")
    p = start(sb, "seq 1 100000")   # 588895 bytes
    wait_exit(sb, p["id"])
    logs = sb.d.json("GET", proc_url(sb, p["id"], "/logs"))[1]
    assert len(logs["stdout"]) == 4096 and logs["stdout"].endswith("99999\n100000\n")
    assert logs["dropped"]["stdout"] == 588895 - 4096 and logs["truncated"] is True
    assert sb.d.json("GET", proc_url(sb, p["id"]))[1]["outputDropped"]["stdout"] > 0
    sb.delete()


def test_slow_follower_does_not_block(make_daemon):
    d = make_daemon("--process-log-bytes", "65536")
    sb = Sandbox(d, "slow")
    p = start(sb, "sleep 0.5; head -c 50000000 /dev/zero | tr '\\0' a; echo; echo done")
    # a follower that reads nothing for a while
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
              % proc_url(sb, p["id"], "/logs").encode())
    done = wait_exit(sb, p["id"], timeout=30)   # the process is not held back
    assert done["exitCode"] == 0
    data = bytearray()
    while not data.endswith(b"0\r\n\r\n"):   # the stream's last chunk
        part = s.recv(1 << 20)
        if not part:
            break
        data += part
    s.close()
    body = bytes(data).split(b"\r\n\r\n", 1)[1]
    assert b"event: exit" in body and b"event: dropped" in body and b'"stream":"stdout"' in body
    assert b"done" in body
    sb.delete()


def test_sandbox_delete_ends_processes(daemon):
    sb = Sandbox(daemon, "procs-del")
    p = start(sb, "sleep 1000")
    result = {}

    def run():
        result["events"] = follow(sb, p["id"])

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.3)
    assert sb.delete()[0] == 200
    t.join(20)
    assert result["events"][-1][0] == "exit"
    assert result["events"][-1][2]["exitCode"] == 137


def test_limit(make_daemon):
    d = make_daemon("--max-processes", "2")
    sb = Sandbox(d, "lim")
    a = start(sb, "sleep 100")
    start(sb, "true")
    time.sleep(0.3)
    c = start(sb, "sleep 100")    # the exited one is forgotten to make room
    status, e = sb.d.json("POST", proc_url(sb), {"command": "sleep 1"})
    assert status == 429 and e["code"] == "LIMIT_REACHED"
    assert [x["id"] for x in sb.d.json("GET", proc_url(sb))[1]["processes"]] == [a["id"], c["id"]]
    sb.delete()


def test_server_reachable_inside_only(sandbox):
    port = 8765
    p = start(sandbox, "python3 -m http.server %d --bind 127.0.0.1" % port)
    probe = ("import time, urllib.request\n"
             "for i in range(100):\n"
             "    try:\n"
             "        print(urllib.request.urlopen('http://127.0.0.1:%d/').status); break\n"
             "    except OSError: time.sleep(0.05)\n" % port)
    assert sandbox.sh("python3 -c \"%s\"" % probe.replace('"', '\\"')) == "200\n"
    # from a code context of the same sandbox
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/execute" % sandbox.id, {
        "code": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:%d/').status"
                % port})
    if status == 200 and not out.get("error"):
        assert "200" in json.dumps(out["results"])
    # not from the host
    with pytest.raises(OSError) as exc:
        socket.create_connection(("127.0.0.1", port), timeout=2)
    assert exc.value.errno == errno.ECONNREFUSED
    # nor from another sandbox
    other = Sandbox(sandbox.d, sandbox.id + "-other")
    out = other.exec("python3 -c \"import urllib.request; "
                     "urllib.request.urlopen('http://127.0.0.1:%d/')\"" % port)
    assert out["exitCode"] != 0 and "refused" in out["stderr"]
    other.delete()
    sandbox.d.json("DELETE", proc_url(sandbox, p["id"]))


def write_stdin(sb, pid, **body):
    return sb.d.json("POST", proc_url(sb, pid, "/stdin"), body)


def wait_stdout(sb, pid, want, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        logs = sb.d.json("GET", proc_url(sb, pid, "/logs"))[1]
        if logs["stdout"] == want:
            return
        time.sleep(0.05)
    raise AssertionError("stdout is %r, not %r" % (logs["stdout"], want))


def test_stdin_cat_round_trip(sandbox):
    p = start(sandbox, "cat", stdin=True)
    status, out = write_stdin(sandbox, p["id"], data="hello\n")
    assert status == 200, out
    assert out["id"] == p["id"] and out["accepted"] == 6 and out["open"] is True
    wait_stdout(sandbox, p["id"], "hello\n")
    # binary through base64, then EOF with the last bytes: cat ends with 0
    status, out = write_stdin(sandbox, p["id"], data="AAH/Cg==", encoding="base64")
    assert status == 200 and out["accepted"] == 4, out
    status, out = write_stdin(sandbox, p["id"], data="bye\n", eof=True)
    assert status == 200 and out["accepted"] == 4 and out["open"] is False, out
    done = wait_exit(sandbox, p["id"])
    assert done["exitCode"] == 0 and done["stdin"] == {"open": False, "held": 0}
    status, hdrs, raw = sandbox.d.request("GET", proc_url(sandbox, p["id"], "/logs"))
    assert json.loads(raw)["stdout"] == "hello\n\u0000\u0001\ufffd\nbye\n"
    # closed: every later write is refused, EOF or not
    for body in ({"data": "x"}, {"eof": True}):
        status, e = write_stdin(sandbox, p["id"], **body)
        assert status == 409 and e["code"] == "CONFLICT" and "closed" in e["message"], e


def test_stdin_eof_alone_and_refusals(sandbox):
    p = start(sandbox, "wc -c", stdin=True)
    assert write_stdin(sandbox, p["id"], data="12345")[0] == 200
    status, out = write_stdin(sandbox, p["id"], eof=True)
    assert status == 200 and out["accepted"] == 0
    assert wait_exit(sandbox, p["id"])["exitCode"] == 0
    wait_stdout(sandbox, p["id"], "5\n")
    # started without stdin: 409 saying how to get one; its stdin is /dev/null
    q = start(sandbox, "cat; echo done")
    status, e = write_stdin(sandbox, q["id"], data="x")
    assert status == 409 and "without stdin" in e["message"], e
    wait_stdout(sandbox, q["id"], "done\n")
    assert "stdin" not in sandbox.d.json("GET", proc_url(sandbox, q["id"]))[1]
    # strict input
    r = start(sandbox, "cat", stdin=True)
    for body, word in (({"data": "x", "eof": "yes"}, "eof"), ({"data": 1}, "data"),
                       ({"datta": "x"}, "datta"), ({"data": "x", "encoding": "hex"}, "encoding"),
                       ({"data": "!!", "encoding": "base64"}, "base64")):
        status, e = write_stdin(sandbox, r["id"], **body)
        assert status == 400 and e["code"] == "VALIDATION_FAILED" and word in e["message"], e
    status, e = sandbox.d.json("POST", proc_url(sandbox), {"command": "cat", "stdin": 1})
    assert status == 400 and "stdin" in e["message"]
    status, e = write_stdin(sandbox, "proc-nope", data="x")
    assert status == 404 and e["code"] == "PROCESS_NOT_FOUND"
    assert sandbox.d.json("DELETE", proc_url(sandbox, r["id"]))[0] == 200


def test_stdin_never_read_is_bounded(make_daemon):
    """A process that never reads: the pipe fills, then the daemon holds at most
    --process-stdin-bytes for it; every write past that is refused whole with 429, and
    the sandbox's buffer budget shows no more than that held."""
    cap = 65536
    d = make_daemon("--process-stdin-bytes", str(cap))
    sb = Sandbox(d, "stdin-cap")
    p = start(sb, "sleep 1000", stdin=True)
    chunk = "x" * 16384
    accepted, refused = 0, 0
    for _ in range(200):
        status, out = write_stdin(sb, p["id"], data=chunk)
        if status == 200:
            accepted += out["accepted"]
            assert out["held"] <= cap
            continue
        assert status == 429 and out["code"] == "LIMIT_REACHED", out
        assert "--process-stdin-bytes (65536)" in out["message"]
        refused += 1
    assert refused > 100 and accepted <= cap + (1 << 20)   # the pipe, then the cap
    info = sb.d.json("GET", proc_url(sb, p["id"]))[1]
    assert cap - len(chunk) < info["stdin"]["held"] <= cap and info["stdin"]["open"] is True
    usage = sb.d.json("GET", "/v1/sandboxes/" + sb.id)[1]["usage"]
    assert usage["bufferPeakBytes"] <= cap + 65536, usage
    # one write larger than the cap can never fit: 413
    status, e = write_stdin(sb, p["id"], data="y" * (cap + 1))
    assert status == 413 and e["code"] == "PAYLOAD_TOO_LARGE", e
    # killing it drops what it never read and gives the bytes back
    assert sb.d.json("DELETE", proc_url(sb, p["id"]))[0] == 200
    deadline = time.time() + 20
    while sb.d.json("GET", "/v1/sandboxes/" + sb.id)[1]["usage"]["bufferBytes"] > 0:
        assert time.time() < deadline, "the held stdin was not given back"
        time.sleep(0.05)
    sb.delete()
