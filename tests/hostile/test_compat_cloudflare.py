"""Bad input on the Cloudflare container protocol (/api/…, api_cf*.c): each case gets the
exact status and Cloudflare's error envelope ({"code","message","error","context",
"httpStatus","timestamp"}), nothing crashes, and the daemon still answers afterwards."""
import base64
import json
import time

import pytest

SBX = {"X-Sandbox-Id": "cf-hostile"}


def cf(d, method, path, body=None, headers=None, raw=None):
    hdrs = dict(SBX)
    hdrs.update(headers or {})
    if raw is not None:
        data = raw
        hdrs.setdefault("Content-Type", "application/json")
    elif body is not None:
        data = json.dumps(body).encode()
        hdrs["Content-Type"] = "application/json"
    else:
        data = None
    status, _, out = d.request(method, path, data, hdrs)
    return status, json.loads(out) if out else None


def assert_cf_error(status, body, want_status, want_code):
    assert status == want_status, body
    assert body["code"] == want_code, body
    assert body["httpStatus"] == want_status
    assert body["message"] and body["error"] == body["message"]
    assert body["timestamp"].endswith("Z")
    assert body["context"] == {}


def assert_alive(d):
    status, body = cf(d, "GET", "/api/ping")
    assert status == 200 and body["message"] == "pong"
    assert d.alive()


@pytest.mark.parametrize("path", [
    "/api/contexts", "/api/execute/code", "/api/execute", "/api/execute/stream",
    "/api/session/create", "/api/write", "/api/read", "/api/list-files", "/api/process/start",
])
def test_malformed_json_is_validation_failed(daemon, path):
    for raw in (b"{bad", b"[1,2]", b"\"str\"", b"{\"a\":1,\"a\":2}", b"\xff\xfe{}"):
        status, body = cf(daemon, "POST", path, raw=raw)
        assert_cf_error(status, body, 400, "VALIDATION_FAILED")
    assert_alive(daemon)


@pytest.mark.parametrize("path,body,field", [
    ("/api/execute/code", {"code": 5}, "code"),
    ("/api/execute/code", {"code": "1", "context_id": 5}, "context_id"),
    ("/api/execute/code", {"code": "1", "timeout_ms": -1}, "timeout_ms"),
    ("/api/execute/code", {"code": "1", "timeout_ms": "soon"}, "timeout_ms"),
    ("/api/execute/code", {"code": "1", "env_vars": "A=1"}, "env_vars"),
    ("/api/execute/code", {"code": "1", "language": ["python"]}, "language"),
    ("/api/contexts", {"language": "python", "cwd": 7}, "cwd"),
    ("/api/contexts", {"language": "python", "env_vars": {"A": 1}}, "env_vars"),
    ("/api/execute", {"command": ["ls"]}, "command"),
    ("/api/execute", {"command": "id", "sessionId": 3}, "sessionId"),
    ("/api/execute", {"command": "id", "timeoutMs": 0}, "timeoutMs"),
    ("/api/execute", {"command": "id", "env": {"A B": "x"}}, "env"),
    ("/api/execute", {"command": "id", "sessionId": "../../etc/passwd"}, "sessionId"),
    ("/api/session/create", {"id": ".hidden"}, "sessionId"),
    ("/api/write", {"path": "/workspace/x", "content": 5}, "content"),
    ("/api/write", {"path": "/workspace/x", "content": "%%%", "encoding": "base64"}, "base64"),
    ("/api/write", {"path": "/workspace/x", "content": "", "encoding": "utf-16"}, "encoding"),
    ("/api/read", {"path": None}, "path"),
    ("/api/mkdir", {"path": "/workspace/d", "recursive": "yes"}, "recursive"),
    ("/api/list-files", {"path": "/workspace", "options": "all"}, "options"),
    ("/api/rename", {"oldPath": "/workspace/a"}, "newPath"),
    ("/api/process/start", {"command": 1}, "command"),
])
def test_wrong_types_name_the_field(daemon, path, body, field):
    status, out = cf(daemon, "POST", path, body)
    assert_cf_error(status, out, 400, "VALIDATION_FAILED")
    assert field in out["message"], out


def test_unknown_language_is_validation_failed(daemon):
    status, body = cf(daemon, "POST", "/api/contexts", {"language": "ruby"})
    assert_cf_error(status, body, 400, "VALIDATION_FAILED")
    assert "ruby" in body["message"]


def test_unknown_ids_are_not_found(daemon):
    status, body = cf(daemon, "POST", "/api/execute/code", {"code": "1", "context_id": "ctx-nope"})
    assert_cf_error(status, body, 404, "CONTEXT_NOT_FOUND")
    assert "ctx-nope" in body["message"]
    status, body = cf(daemon, "DELETE", "/api/contexts/ctx-nope")
    assert_cf_error(status, body, 404, "CONTEXT_NOT_FOUND")
    for method, path in (("GET", "/api/process/proc-nope"), ("DELETE", "/api/process/proc-nope"),
                         ("GET", "/api/process/proc-nope/logs"),
                         ("GET", "/api/process/proc-nope/stream")):
        status, body = cf(daemon, method, path)
        assert_cf_error(status, body, 404, "PROCESS_NOT_FOUND")
    status, body = cf(daemon, "POST", "/api/read", {"path": "/workspace/never-written"})
    assert_cf_error(status, body, 404, "FILE_NOT_FOUND")
    assert "/workspace/never-written" in body["message"]
    # an unknown session is made on first use, as on Cloudflare
    status, body = cf(daemon, "POST", "/api/execute", {"command": "echo ok", "sessionId": "never-made"})
    assert status == 200 and body["stdout"] == "ok" and body["sessionId"] == "never-made"
    assert_alive(daemon)


@pytest.mark.parametrize("path", [
    "/etc/passwd", "/workspace/../etc/passwd", "../etc/passwd", "/tmp/../etc/passwd",
    "/workspace/a/../../etc", "/proc/self/environ", "/workspacefoo/x", "",
])
def test_path_escapes_are_refused_before_anything_runs(daemon, path):
    for route, body in (("/api/read", {"path": path}), ("/api/write", {"path": path, "content": "x"}),
                        ("/api/delete", {"path": path}), ("/api/exists", {"path": path}),
                        ("/api/list-files", {"path": path}),
                        ("/api/move", {"sourcePath": "/workspace/f", "destinationPath": path})):
        if path == "" and route == "/api/list-files":
            continue  # "" is the workspace itself: a valid listing
        status, out = cf(daemon, "POST", route, body)
        if path == "" and route in ("/api/exists",):
            assert status == 200 and out["path"] == "/workspace"
            continue
        if path == "" and route in ("/api/read",):
            assert_cf_error(status, out, 400, "IS_DIRECTORY")
            continue
        assert_cf_error(status, out, 400, "VALIDATION_FAILED")


def test_a_symlink_out_of_the_workspace_sees_only_the_sandbox(daemon):
    status, out = cf(daemon, "POST", "/api/execute",
                     {"command": "ln -sfn /etc /workspace/etc-link && cat /etc/hostname"})
    assert status == 200 and out["exitCode"] == 0
    inside = out["stdout"]
    status, out = cf(daemon, "POST", "/api/read", {"path": "/workspace/etc-link/hostname"})
    assert status == 200
    assert out["content"].rstrip("\n") == inside  # the sandbox's own /etc, as its code sees it
    with open("/etc/hostname") as f:
        host = f.read().strip()
    assert inside != host
    status, out = cf(daemon, "POST", "/api/write", {"path": "/workspace/etc-link/hostname", "content": "x"})
    assert_cf_error(status, out, 403, "PERMISSION_DENIED")


@pytest.mark.parametrize("sid", ["../x", "a/b", "-lead", "a b", "é", "x" * 64, ".dot"])
def test_bad_sandbox_ids_are_validation_failed(daemon, sid):
    status, _, data = daemon.request("GET", "/api/contexts",
                                     headers={"X-Sandbox-Id": sid.encode("utf-8").decode("latin-1")})
    body = json.loads(data)
    assert_cf_error(status, body, 400, "VALIDATION_FAILED")
    assert "X-Sandbox-Id" in body["message"]


def test_an_overlong_sandbox_id_header_is_431(daemon):
    status, _, data = daemon.request("GET", "/api/contexts", headers={"X-Sandbox-Id": "a" * 200})
    assert status == 431
    assert json.loads(data)["code"] == "HEADERS_TOO_LARGE"


def test_huge_bodies_are_413_and_the_daemon_survives(make_daemon):
    d = make_daemon("--max-body-bytes", "65536")
    big = json.dumps({"code": "x = '" + "a" * 200000 + "'"}).encode()
    for path in ("/api/execute/code", "/api/write", "/api/execute"):
        status, _, data = d.request("POST", path, big, {**SBX, "Content-Type": "application/json"})
        assert status == 413, data
        assert json.loads(data)["code"] == "PAYLOAD_TOO_LARGE"
    assert_alive(d)


def test_a_read_past_the_output_cap_is_file_too_large(make_daemon):
    d = make_daemon("--max-output-bytes", "4096")
    status, out = cf(d, "POST", "/api/execute", {"command": "head -c 10000 /dev/zero > /workspace/big"})
    assert status == 200 and out["exitCode"] == 0
    status, out = cf(d, "POST", "/api/read", {"path": "/workspace/big"})
    assert_cf_error(status, out, 413, "FILE_TOO_LARGE")
    assert_alive(d)


def test_the_token_applies_to_the_cloudflare_routes(make_daemon):
    d = make_daemon("--token", "s3cret")
    for method, path in (("GET", "/api/ping"), ("GET", "/api/contexts"), ("POST", "/api/execute")):
        status, hdrs, data = d.request(method, path, b"{}" if method == "POST" else None,
                                       dict(SBX))
        assert_cf_error(status, json.loads(data), 401, "UNAUTHORIZED")
        assert hdrs["www-authenticate"] == "Bearer"
        status, _, data = d.request(method, path, None, {**SBX, "Authorization": "Bearer wrong"})
        assert_cf_error(status, json.loads(data), 401, "UNAUTHORIZED")
    d.token = "s3cret"
    status, body = cf(d, "POST", "/api/execute", {"command": "echo in"})
    assert status == 200 and body["stdout"] == "in"


def test_never_503_and_a_timeout_is_command_execution_error(daemon):
    status, out = cf(daemon, "POST", "/api/execute", {"command": "sleep 30", "timeoutMs": 200})
    assert_cf_error(status, out, 500, "COMMAND_EXECUTION_ERROR")
    assert out["message"] == "Command timeout after 200ms"


def test_a_run_on_a_client_that_goes_away_leaves_the_context_usable(daemon):
    status, ctx = cf(daemon, "POST", "/api/contexts", {"language": "python"})
    assert status == 200
    c = daemon.conn()
    c.request("POST", "/api/execute/code",
              body=json.dumps({"context_id": ctx["contextId"], "code": "import time\nprint('a', flush=True)\ntime.sleep(1)\nv = 7"}),
              headers={**SBX, "Content-Type": "application/json"})
    r = c.getresponse()
    assert r.status == 200
    r.fp.readline()
    c.close()  # gone mid-run
    status, _, data = daemon.request("POST", "/api/execute/code",
                                     json.dumps({"context_id": ctx["contextId"], "code": "v * 6"}).encode(),
                                     {**SBX, "Content-Type": "application/json"})
    assert status == 200
    events = [json.loads(l[6:]) for l in data.decode().split("\n") if l.startswith("data: ")]
    assert [e["type"] for e in events] == ["result", "execution_complete"]
    assert events[0]["text"] == "42"
    assert_alive(daemon)


def test_a_write_that_does_not_fit_leaves_the_old_file_and_nothing_else(daemon):
    status, _ = daemon.json("PUT", "/v1/sandboxes/cf-small", {"limits": {"diskMb": 1}})
    assert status in (200, 201)
    small = {"X-Sandbox-Id": "cf-small"}
    status, out = cf(daemon, "POST", "/api/write", {"path": "/workspace/f.txt", "content": "old"}, small)
    assert status == 200
    big = base64.b64encode(b"x" * 3000000).decode()
    status, out = cf(daemon, "POST", "/api/write",
                     {"path": "/workspace/f.txt", "content": big, "encoding": "base64"}, small)
    assert_cf_error(status, out, 507, "NO_SPACE")
    assert "/workspace/f.txt" in out["message"]
    status, out = cf(daemon, "POST", "/api/read", {"path": "/workspace/f.txt"}, small)
    assert status == 200 and out["content"] == "old"
    status, out = cf(daemon, "POST", "/api/list-files",
                     {"path": "/workspace", "options": {"includeHidden": True}}, small)
    assert [f["name"] for f in out["files"]] == ["f.txt"]
    assert_alive(daemon)


BUDGET = 64 << 20  # the default --sandbox-buffer-bytes
SLACK = 64 << 10


def usage(d, sid):
    status, info = d.json("GET", "/v1/sandboxes/" + sid)
    assert status == 200, info
    return info["usage"]


@pytest.mark.parametrize("route", ["/api/execute/code", "/api/execute/stream"])
def test_a_client_that_does_not_read_holds_no_more_than_the_budget(daemon, route):
    """200 MB of output to a client that reads nothing for a while: the daemon holds at most
    the sandbox's budget (the context or command blocks instead), another sandbox is served,
    and once read the stream is complete."""
    sid = "cf-flood" + route.replace("/", "-")
    hdr = {"X-Sandbox-Id": sid, "Content-Type": "application/json"}
    if route == "/api/execute/code":
        body = {"code": "import sys\nfor _ in range(200):\n    sys.stdout.write('y' * 1000000)\n",
                "timeout_ms": 600000}
        key = "text"
    else:
        body = {"command": "head -c 200000000 /dev/zero | tr '\\0' y", "timeoutMs": 600000}
        key = "data"
    c = daemon.conn(timeout=600)
    c.request("POST", route, json.dumps(body), hdr)
    r = c.getresponse()
    assert r.status == 200
    deadline = time.time() + 120
    while usage(daemon, sid)["bufferPeakBytes"] < 1 << 20 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1)  # a while unread
    assert usage(daemon, sid)["bufferPeakBytes"] <= BUDGET + SLACK
    status, out = cf(daemon, "POST", "/api/execute", {"command": "echo other"},
                     {"X-Sandbox-Id": "cf-flood-other"})
    assert status == 200 and out["stdout"] == "other"
    total, last = 0, None
    for line in r.read().decode().split("\n"):
        if line.startswith("data: "):
            ev = json.loads(line[6:])
            last = ev["type"]
            if ev["type"] == "stdout":
                total += len(ev[key])
    c.close()
    assert total == 200000000
    assert last == ("execution_complete" if route == "/api/execute/code" else "complete")
    assert usage(daemon, sid)["bufferPeakBytes"] <= BUDGET + SLACK


def test_an_unknown_api_route_is_not_found_in_the_envelope(daemon):
    for method, path in (("POST", "/api/git/checkout"), ("GET", "/api"), ("POST", "/api/ws")):
        status, out = cf(daemon, method, path, {})
        assert_cf_error(status, out, 404, "NOT_FOUND")
        assert path in out["message"]
    # outside /api the native envelope stays
    status, _, data = daemon.request("GET", "/nope")
    assert status == 404 and json.loads(data) == {"code": "NOT_FOUND",
                                                   "message": "no such route: /nope"}
