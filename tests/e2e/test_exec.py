"""End-to-end tests of POST /v1/sandboxes/{sid}/exec: plain and streamed output, exit
codes, cwd, env, stdin, timeouts, truncation, back-pressure, concurrency, disconnects."""
import http.client
import json
import os
import socket
import threading
import time

from sbxtest import Sandbox, sse_events


def test_plain_output_and_exit_code(sandbox):
    out = sandbox.exec("echo hello; echo oops >&2; exit 3")
    assert out["stdout"] == "hello\n" and out["stderr"] == "oops\n"
    assert out["exitCode"] == 3 and out["success"] is False
    assert out["timedOut"] is False and out["truncated"] is False
    assert out["durationMs"] >= 0
    assert sandbox.exec("true")["success"] is True


def test_killed_by_signal_reports_128_plus(sandbox):
    out = sandbox.exec("kill -TERM $$")
    assert out["exitCode"] == 143 and out["signal"] == "SIGTERM"


def test_cwd(sandbox):
    assert sandbox.sh("pwd") == "/workspace\n"
    sandbox.sh("mkdir -p sub/dir")
    assert sandbox.sh("pwd", cwd="sub/dir") == "/workspace/sub/dir\n"
    assert sandbox.sh("pwd", cwd="/tmp") == "/tmp\n"
    status, e = sandbox.d.json("POST", "/v1/sandboxes/%s/exec" % sandbox.id,
                               {"command": "pwd", "cwd": "/no/such/dir"})
    assert status == 400 and "/no/such/dir" in e["message"]


def test_env_is_an_allow_list(make_daemon):
    d = make_daemon(env={"SANDBOXD_SECRET_TEST": "leaked", "AWS_SECRET_ACCESS_KEY": "x"})
    s = Sandbox(d, "envs", env={"FROM_SANDBOX": "1"})
    env = s.sh("env", env={"FROM_REQUEST": "2", "PATH": "/usr/bin:/bin"})
    assert "FROM_SANDBOX=1" in env and "FROM_REQUEST=2" in env
    assert "PATH=/usr/bin:/bin" in env
    assert "leaked" not in env and "AWS_SECRET" not in env
    assert "HOME=/workspace" in env
    s.delete()


def test_stdin(sandbox):
    assert sandbox.sh("cat", stdin="abc\ndef") == "abc\ndef"
    assert sandbox.sh("wc -c < /dev/stdin; true") in ("0\n",)


def test_validation(sandbox):
    url = "/v1/sandboxes/%s/exec" % sandbox.id
    for body, field in (({}, "'command' is required"), ({"command": 5}, "'command' must be a string"),
                        ({"command": "x", "timeoutMs": -1}, "'timeoutMs'"),
                        ({"command": "x", "env": {"": "v"}}, "'env'"),
                        ({"command": "x", "env": {"K": 1}}, "'env'")):
        status, e = sandbox.d.json("POST", url, body)
        assert status == 400 and field in e["message"], (body, e)
    status, e = sandbox.d.json("POST", "/v1/sandboxes/nope/exec", {"command": "true"})
    assert status == 404 and e["code"] == "SANDBOX_NOT_FOUND"


def test_timeout_kills_the_process_group(sandbox):
    t = time.time()
    out = sandbox.exec("sleep 60 & sleep 61; echo never", timeoutMs=300)
    assert time.time() - t < 5
    assert out["timedOut"] is True and out["exitCode"] == 137 and "never" not in out["stdout"]
    assert "sleep 6" not in sandbox.sh("ps -eo args")


def test_timeout_ignoring_signals(sandbox):
    out = sandbox.exec("trap '' INT TERM HUP; while :; do :; done", timeoutMs=300)
    assert out["timedOut"] is True


def test_truncation(make_daemon):
    d = make_daemon("--max-output-bytes", "1024")
    s = Sandbox(d, "trunc")
    out = s.exec("head -c 100000 /dev/zero | tr '\\0' a; echo done >&2")
    assert len(out["stdout"]) == 1024 and out["truncated"] is True
    assert out["stderr"] == "done\n" and out["exitCode"] == 0
    s.delete()


def test_invalid_utf8_becomes_replacement(sandbox):
    out = sandbox.exec("printf 'a\\377b\\n'")
    assert out["stdout"] == "a\ufffdb\n"


def stream(daemon, sid, body, read_delay=0):
    c = daemon.conn(timeout=60)
    c.request("POST", "/v1/sandboxes/%s/exec" % sid, json.dumps(body),
              {"Accept": "text/event-stream", "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    return c, r


def test_sse_streams_as_printed(sandbox):
    c, r = stream(sandbox.d, sandbox.id, {"command": "echo first; sleep 3; echo second >&2"})
    t = time.time()
    first = r.readline()   # "event: stdout"
    assert first == b"event: stdout\n"
    assert time.time() - t < 2, "the first event waited for the command to end"
    rest = first + r.read()
    events = sse_events(rest)
    assert [e[0] for e in events] == ["stdout", "stderr", "exit"]
    assert [e[1] for e in events] == [1, 2, 3]
    assert events[0][2] == {"text": "first\n"} and events[1][2] == {"text": "second\n"}
    assert events[2][2]["exitCode"] == 0 and events[2][2]["timedOut"] is False
    c.close()


def test_sse_back_pressure_loses_nothing(sandbox):
    total = 8 * 1024 * 1024
    c, r = stream(sandbox.d, sandbox.id,
                  {"command": "head -c %d /dev/zero | tr '\\0' x" % total})
    time.sleep(1.0)    # a slow reader: the command must wait, not the daemon drop
    events = sse_events(r.read())
    text = "".join(e[2]["text"] for e in events if e[0] == "stdout")
    assert len(text) == total and set(text) == {"x"}
    assert events[-1][0] == "exit" and events[-1][2]["exitCode"] == 0
    c.close()


def test_sse_disconnect_ends_the_command(sandbox):
    c, r = stream(sandbox.d, sandbox.id, {"command": "echo go; exec sleep 300.5"})
    assert r.readline() == b"event: stdout\n"
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        if "300.5" not in sandbox.sh("ps -eo args"):
            break
        time.sleep(0.1)
    assert "300.5" not in sandbox.sh("ps -eo args")


def test_many_commands_at_once(sandbox):
    results = []

    def run():
        results.append(sandbox.exec("sleep 0.5; echo ok"))

    t = time.time()
    threads = [threading.Thread(target=run) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(results) == 8 and all(r["stdout"] == "ok\n" for r in results)
    assert time.time() - t < 4


def test_runs_as_unprivileged_user(sandbox):
    assert sandbox.sh("id -u") == "1000\n"
    status = sandbox.sh("grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status")
    assert "CapEff:\t0000000000000000" in status
    assert "NoNewPrivs:\t1" in status and "Seccomp:\t2" in status


def test_oom_is_reported(daemon):
    s = Sandbox(daemon, "oom", limits={"memoryMb": 64})
    out = s.exec("python3 -c 'a = bytearray(512 * 1024 * 1024); print(len(a))'")
    assert out["oomKilled"] is True and out["exitCode"] == 137, out
    assert s.sh("echo alive") == "alive\n"
    s.delete()


def test_request_size_limits(make_daemon):
    d = make_daemon("--max-code-bytes", "1024", "--max-env-vars", "2")
    s = Sandbox(d, "caps")
    url = "/v1/sandboxes/caps/"
    status, e = d.json("POST", url + "exec", {"command": "echo " + "a" * 2000})
    assert status == 400 and "'command'" in e["message"] and "1024" in e["message"]
    status, e = d.json("POST", url + "execute", {"code": "#" * 2000})
    assert status == 400 and "'code'" in e["message"]
    env = {"A": "1", "B": "2", "C": "3"}
    status, e = d.json("POST", url + "exec", {"command": "true", "env": env})
    assert status == 400 and "'env'" in e["message"] and "3 entries" in e["message"]
    status, e = d.json("POST", url + "execute", {"code": "1", "envVars": env})
    assert status == 400 and "'envVars'" in e["message"]
    assert s.sh("echo ok", env={"A": "1"}) == "ok\n"
    s.delete()
