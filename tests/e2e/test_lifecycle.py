"""End-to-end tests of a sandbox's lifecycle (API.md "Lifecycle and durability"): suspend
and resume with the cgroup freezer (a counting process stops and goes on, a context keeps
its variables), implicit resume by any request that needs the sandbox, state and
lastActivity, the idle timeout (suspend, delete), maxAgeMs, run timeouts that do not count
suspended time; and strict input: unknown fields on every /v1 body → 400 naming them, a PUT
of an existing sandbox with other settings → 409 naming the field."""
import json
import threading
import time

import pytest

from sbxtest import Sandbox, context, main_text, run


def base(sid):
    return "/v1/sandboxes/" + sid


def state(d, sid):
    status, info = d.json("GET", base(sid))
    assert status == 200, info
    return info


def suspend(d, sid):
    status, info = d.json("POST", base(sid) + "/suspend")
    assert status == 200, info
    assert info["state"] == "suspended"
    return info


def wait_for(cond, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def start_counter(sb):
    status, p = sb.d.json("POST", base(sb.id) + "/processes",
                          {"command": "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"})
    assert status == 201, p
    return p["id"]


def counted(sb, pid):
    """The numbers the counter printed so far (GET of logs does not resume the sandbox)."""
    status, logs = sb.d.json("GET", base(sb.id) + "/processes/%s/logs" % pid)
    assert status == 200, logs
    return [int(x) for x in logs["stdout"].split()]


def test_suspend_stops_a_counting_process_and_keeps_memory(sandbox):
    d = sandbox.d
    out = run(d, sandbox.id, "kept = 'set before suspend'; kept")
    assert main_text(out) == "'set before suspend'"
    pid = start_counter(sandbox)
    wait_for(lambda: len(counted(sandbox, pid)) >= 3, "the counter to count")
    info = suspend(d, sandbox.id)
    assert state(d, sandbox.id)["state"] == "suspended"
    time.sleep(0.5)  # output already in the pipe is read; nothing new can be written
    frozen = counted(sandbox, pid)
    time.sleep(1.5)
    assert counted(sandbox, pid) == frozen, "the count went on while suspended"
    assert state(d, sandbox.id)["state"] == "suspended"
    assert info["usage"]["processes"] >= 1
    # A run resumes the sandbox, and the context's variable is still there.
    out = run(d, sandbox.id, "kept")
    assert main_text(out) == "'set before suspend'" and out["statePreserved"] is True
    assert state(d, sandbox.id)["state"] == "running"
    after = wait_for(lambda: (lambda c: c if len(c) > len(frozen) + 3 else None)(
        counted(sandbox, pid)), "the counter to go on")
    assert after[:len(frozen)] == frozen
    assert after == list(range(1, len(after) + 1)), "the count restarted or skipped"


def test_suspend_and_resume_routes(sandbox):
    d = sandbox.d
    suspend(d, sandbox.id)
    # suspending a suspended sandbox is answered at once, the same
    assert suspend(d, sandbox.id)["state"] == "suspended"
    status, info = d.json("POST", base(sandbox.id) + "/resume")
    assert status == 200 and info["state"] == "running"
    status, info = d.json("POST", base(sandbox.id) + "/resume")
    assert status == 200 and info["state"] == "running"
    assert d.json("POST", "/v1/sandboxes/nope-xyz/suspend")[0] == 404
    assert d.json("POST", "/v1/sandboxes/nope-xyz/resume")[0] == 404
    suspend(d, sandbox.id)
    status, out = sandbox.delete()  # a suspended sandbox can be deleted
    assert status == 200 and out["deleted"] is True
    assert d.json("GET", base(sandbox.id))[0] == 404


def resumes(d, sid, method, path, body=None, want=200, raw=None):
    suspend(d, sid)
    if raw is not None:
        status, _, data = d.request(method, base(sid) + path, raw)
    else:
        status, data = d.json(method, base(sid) + path, body)
    assert status == want, data
    assert state(d, sid)["state"] == "running", (method, path)
    return data


def test_any_request_that_needs_the_sandbox_resumes_it(sandbox):
    d, sid = sandbox.d, sandbox.id
    out = resumes(d, sid, "POST", "/exec", {"command": "echo resumed"})
    assert out["stdout"] == "resumed\n" and out["exitCode"] == 0
    resumes(d, sid, "PUT", "/files/a.txt", raw=b"file body", want=201)
    _, _, data = d.request("GET", base(sid) + "/files/a.txt")
    assert data == b"file body"
    suspend(d, sid)
    status, _, data = d.request("GET", base(sid) + "/files/a.txt")
    assert status == 200 and data == b"file body"
    assert state(d, sid)["state"] == "running"
    resumes(d, sid, "POST", "/files:mkdir", {"path": "dir"}, want=201)
    out = resumes(d, sid, "POST", "/execute", {"code": "1 + 1"})
    assert main_text(out) == "2"
    resumes(d, sid, "POST", "/contexts", {"language": "python"}, want=201)
    resumes(d, sid, "POST", "/processes", {"command": "true"}, want=201)


def test_reads_of_what_the_daemon_holds_do_not_resume(sandbox):
    d, sid = sandbox.d, sandbox.id
    cid = context(d, sid)
    before = suspend(d, sid)["lastActivity"]
    time.sleep(0.05)
    for path in ("", "/contexts", "/contexts/" + cid, "/processes"):
        status, _ = d.json("GET", base(sid) + path)
        assert status == 200
    status, lst = d.json("GET", "/v1/sandboxes")
    assert status == 200
    info = state(d, sid)
    assert info["state"] == "suspended" and info["lastActivity"] == before


def test_state_and_last_activity(sandbox):
    d, sid = sandbox.d, sandbox.id
    info = state(d, sid)
    assert info["state"] == "running"
    assert info["lastActivity"] >= info["createdAt"]
    assert info["lifecycle"] == {"idleTimeoutMs": 0, "onIdle": "suspend", "maxAgeMs": 0}
    first = info["lastActivity"]
    time.sleep(0.05)
    sandbox.sh("true")
    assert state(d, sid)["lastActivity"] > first


def test_idle_timeout_suspends_then_a_request_resumes(daemon):
    sb = Sandbox(daemon, "idle-suspend",
                 lifecycle={"idleTimeoutMs": 1000, "onIdle": "suspend"})
    try:
        assert sb.info["lifecycle"] == {"idleTimeoutMs": 1000, "onIdle": "suspend",
                                        "maxAgeMs": 0}
        wait_for(lambda: state(daemon, sb.id)["state"] == "suspended", "the idle suspension")
        assert sb.sh("echo back") == "back\n"
        assert state(daemon, sb.id)["state"] == "running"
        # and it is suspended again once idle again
        wait_for(lambda: state(daemon, sb.id)["state"] == "suspended", "a second suspension")
    finally:
        sb.delete()


def test_idle_timeout_deletes(daemon):
    sb = Sandbox(daemon, "idle-delete", lifecycle={"idleTimeoutMs": 1000, "onIdle": "delete"})
    wait_for(lambda: daemon.json("GET", base(sb.id))[0] == 404, "the idle deletion")


def test_running_code_is_not_idle(daemon):
    # idle 3 s (a margin for a loaded machine between the PUT and the exec), a 6 s command
    sb = Sandbox(daemon, "idle-busy", lifecycle={"idleTimeoutMs": 3000, "onIdle": "suspend"})
    seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            seen.append(state(daemon, sb.id)["state"])
            time.sleep(0.1)

    w = threading.Thread(target=watch)
    w.start()
    try:
        out = sb.exec("sleep 6; echo slept")
        assert out["stdout"] == "slept\n" and out["exitCode"] == 0
    finally:
        done.set()
        w.join()
    assert seen and "suspended" not in seen
    wait_for(lambda: state(daemon, sb.id)["state"] == "suspended", "the idle suspension")
    sb.delete()


def test_max_age_deletes(daemon):
    sb = Sandbox(daemon, "max-age", lifecycle={"maxAgeMs": 1500})
    assert sb.info["lifecycle"]["maxAgeMs"] == 1500
    wait_for(lambda: daemon.json("GET", base(sb.id))[0] == 404, "the max-age deletion")


def test_daemon_defaults(make_daemon):
    d = make_daemon("--sandbox-idle-timeout-ms", "1000", "--sandbox-on-idle", "delete",
                    "--sandbox-max-age-ms", "600000")
    sb = Sandbox(d, "defaults")
    assert sb.info["lifecycle"] == {"idleTimeoutMs": 1000, "onIdle": "delete",
                                    "maxAgeMs": 600000}
    own = Sandbox(d, "own", lifecycle={"idleTimeoutMs": 0})
    assert own.info["lifecycle"]["idleTimeoutMs"] == 0
    wait_for(lambda: d.json("GET", base(sb.id))[0] == 404, "the default idle deletion")
    assert d.json("GET", base(own.id))[0] == 200


def test_bad_lifecycle_values(daemon):
    for body, field in (({"lifecycle": {"onIdle": "sleep"}}, "onIdle"),
                        ({"lifecycle": {"idleTimeoutMs": -1}}, "idleTimeoutMs"),
                        ({"lifecycle": {"maxAgeMs": "soon"}}, "maxAgeMs"),
                        ({"lifecycle": 5}, "lifecycle")):
        status, err = daemon.json("PUT", base("bad-life"), body)
        assert status == 400 and err["code"] == "VALIDATION_FAILED", err
        assert field in err["message"]


def test_command_timeout_does_not_count_suspended_time(sandbox):
    d, sid = sandbox.d, sandbox.id
    result = {}

    def go():
        result["out"] = d.json("POST", base(sid) + "/exec",
                               {"command": "sleep 1; echo finished", "timeoutMs": 4000})

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.3)
    suspend(d, sid)
    time.sleep(5)  # longer than the timeout: it must not fire against frozen code
    status, info = d.json("POST", base(sid) + "/resume")
    assert status == 200
    t.join(60)
    status, out = result["out"]
    assert status == 200 and out["exitCode"] == 0 and out["stdout"] == "finished\n", out
    assert out["timedOut"] is False


def test_run_timeout_does_not_count_suspended_time(sandbox):
    d, sid = sandbox.d, sandbox.id
    run(d, sid, "import time")
    result = {}

    def go():
        result["out"] = d.json("POST", base(sid) + "/execute",
                               {"code": "time.sleep(1); print('finished')", "timeoutMs": 4000})

    t = threading.Thread(target=go)
    t.start()
    time.sleep(0.3)
    suspend(d, sid)
    time.sleep(5)
    assert d.json("POST", base(sid) + "/resume")[0] == 200
    t.join(60)
    status, out = result["out"]
    assert status == 200 and out["error"] is None, out
    assert "".join(out["logs"]["stdout"]) == "finished\n"


# ---- strict input ----

# (method, path below the sandbox or None for /v1/sandboxes, body, field named)
UNKNOWN = [
    ("PUT", "", {"timeout": 5}, "'timeout'"),
    ("PUT", "", {"limits": {"memMb": 5}}, "'limits.memMb'"),
    ("PUT", "", {"lifecycle": {"idleMs": 5}}, "'lifecycle.idleMs'"),
    ("POST", None, {"networking": "none"}, "'networking'"),
    ("POST", None, {"limits": {"cpu": 1}}, "'limits.cpu'"),
    ("POST", "/contexts", {"language": "python", "lang": "x"}, "'lang'"),
    ("POST", "/execute", {"code": "1", "timeout": 5}, "'timeout'"),
    ("POST", "/exec", {"command": "true", "timeout": 5}, "'timeout'"),
    ("POST", "/processes", {"command": "true", "stdin": "x"}, "'stdin'"),
    ("POST", "/files:move", {"from": "a", "to": "b", "force": True}, "'force'"),
    ("POST", "/files:mkdir", {"path": "a", "parents": True}, "'parents'"),
    ("POST", "/suspend", {"wait": True}, "'wait'"),
    ("POST", "/resume", {"now": True}, "'now'"),
]


@pytest.mark.parametrize("method,path,body,field", UNKNOWN,
                         ids=["%s %s %s" % (m, p, f) for m, p, _, f in UNKNOWN])
def test_unknown_fields_are_refused(daemon, method, path, body, field):
    Sandbox(daemon, "strict")
    url = "/v1/sandboxes" if path is None else base("strict") + path
    status, err = daemon.json(method, url, body)
    assert status == 400, err
    assert err["code"] == "VALIDATION_FAILED" and field in err["message"], err


def test_unknown_fields_on_context_routes(daemon):
    sb = Sandbox(daemon, "strict-ctx")
    cid = context(daemon, sb.id)
    for tail in ("/interrupt", "/restart"):
        status, err = daemon.json("POST", base(sb.id) + "/contexts/" + cid + tail,
                                  {"force": True})
        assert status == 400 and err["code"] == "VALIDATION_FAILED", err
        assert "'force'" in err["message"]
        status, _ = daemon.json("POST", base(sb.id) + "/contexts/" + cid + tail, {})
        assert status == 200


def test_put_conflicts_name_the_field(make_daemon):
    daemon = make_daemon("--allow-host-network")  # "network": "host" is a conflict, not a 400
    body = {"limits": {"memoryMb": 256, "pids": 128}, "network": "none", "env": {"A": "1"},
            "lifecycle": {"idleTimeoutMs": 600000}}
    status, info = daemon.json("PUT", base("conflict"), body)
    assert status == 201, info
    for other, field in (({"limits": {"memoryMb": 512}}, "limits.memoryMb"),
                         ({"limits": {"pids": 64}}, "limits.pids"),
                         ({"network": "host"}, "network"),
                         ({"env": {"A": "2"}}, "env"),
                         ({"env": {}}, "env"),
                         ({"lifecycle": {"idleTimeoutMs": 1000}}, "lifecycle.idleTimeoutMs"),
                         ({"lifecycle": {"onIdle": "delete"}}, "lifecycle.onIdle")):
        status, err = daemon.json("PUT", base("conflict"), other)
        assert status == 409 and err["code"] == "CONFLICT", (other, err)
        assert field in err["message"], err
    assert daemon.json("PUT", base("conflict"), body)[0] == 200
    assert daemon.json("PUT", base("conflict"))[0] == 200
    assert daemon.json("PUT", base("conflict"), {})[0] == 200
    assert daemon.json("PUT", base("conflict"), {"limits": {"memoryMb": 256}})[0] == 200
    status, info = daemon.json("PUT", base("conflict"), {"env": {"A": "1"}, "network": "none"})
    assert status == 200 and info["limits"]["memoryMb"] == 256
    # an unknown field is a 400 even for a sandbox that exists
    status, err = daemon.json("PUT", base("conflict"), {"limit": {}})
    assert status == 400 and "'limit'" in err["message"]
    assert json.dumps(daemon.json("DELETE", base("conflict"))[1]) == '{"deleted": true}'
