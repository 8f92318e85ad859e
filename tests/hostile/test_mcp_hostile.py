"""Hostile input to the MCP server (/mcp, docs/mcp.md): malformed JSON-RPC, unknown
methods and tools, wrong argument types, oversized payloads, unknown and expired session
ids, a flood of sessions past --mcp-max-sessions, another sandbox's context, paths out of
the workspace. Each case asserts the exact HTTP status and JSON-RPC error code, or the
tool error's code; the daemon must stay up and keep serving."""
import json
import time

import pytest

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "0"}}}
ACCEPT = "application/json, text/event-stream"


def post(d, body, session=None, accept="application/json"):
    hdrs = {"Content-Type": "application/json", "Accept": accept}
    if session:
        hdrs["Mcp-Session-Id"] = session
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, h, data = d.request("POST", "/mcp", raw, hdrs)
    return status, h, json.loads(data) if data else None


def init(d):
    status, h, m = post(d, INIT)
    assert status == 200, m
    return h["mcp-session-id"]


def call(d, sid, name, args, id=7):
    return post(d, {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": name, "arguments": args}}, sid)


def rpc_code(resp):
    return resp[2]["error"]["code"]


def tool_error(resp):
    status, _, m = resp
    assert status == 200 and m["result"]["isError"] is True, m
    return m["result"]["content"][-1]["text"]


@pytest.fixture(scope="module")
def sid(daemon):
    return init(daemon)


def test_not_json_is_a_parse_error(daemon):
    r = post(daemon, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert r[0] == 400 and rpc_code(r) == -32700 and r[2]["id"] is None


@pytest.mark.parametrize("body", [
    b"[]", b"42", b'"x"',
    b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]',       # batches are not in 2025-06-18
    b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    b'{"id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1,"method":7}',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
])
def test_not_a_jsonrpc_message_is_an_invalid_request(daemon, sid, body):
    r = post(daemon, body, sid)
    assert r[0] == 400 and rpc_code(r) == -32600, r


def test_unknown_method(daemon, sid):
    r = post(daemon, {"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, sid)
    assert r[0] == 200 and rpc_code(r) == -32601 and r[2]["id"] == 3


def test_initialize_without_protocol_version(daemon):
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert rpc_code(r) == -32602


def test_unknown_protocol_version_gets_the_servers(daemon):
    body = dict(INIT, params=dict(INIT["params"], protocolVersion="1999-01-01"))
    status, _, m = post(daemon, body)
    assert status == 200 and m["result"]["protocolVersion"] == "2025-06-18"


def test_unsupported_protocol_header(daemon, sid):
    hdrs = {"Content-Type": "application/json", "Mcp-Session-Id": sid,
            "MCP-Protocol-Version": "1999-01-01"}
    status, _, data = daemon.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(), hdrs)
    assert status == 400 and json.loads(data)["error"]["code"] == -32600


def test_unknown_tool(daemon, sid):
    r = call(daemon, sid, "rm_rf", {})
    assert rpc_code(r) == -32602 and "rm_rf" in r[2]["error"]["message"]


@pytest.mark.parametrize("name,args,word", [
    ("run_code", {"code": 1}, "'code' must be a string"),
    ("run_code", {}, "needs the argument 'code'"),
    ("run_code", {"code": "1", "timeoutMs": -1}, "'timeoutMs' must be a non-negative integer"),
    ("run_code", {"code": "1", "timeout": 5}, "no argument 'timeout'"),
    ("exec", {"command": ["ls"]}, "'command' must be a string"),
    ("read_file", {"path": None}, "'path' must be a string"),
    ("run_code", {"code": "1", "sandbox": "../etc"}, "not a valid sandbox id"),
])
def test_wrong_arguments_are_invalid_params(daemon, sid, name, args, word):
    r = call(daemon, sid, name, args)
    assert rpc_code(r) == -32602 and word in r[2]["error"]["message"], r


def test_arguments_not_an_object(daemon, sid):
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "exec", "arguments": "ls"}}, sid)
    assert rpc_code(r) == -32602


def test_no_session_header(daemon):
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r[0] == 400 and rpc_code(r) == -32000


def test_unknown_session(daemon):
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "mcp-0000000000000000")
    assert r[0] == 404 and rpc_code(r) == -32001


def test_overlong_session_header(daemon):
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "x" * 200)
    assert r[0] == 431


def test_deleted_session_is_gone(daemon):
    s = init(daemon)
    status, _, _ = daemon.request("DELETE", "/mcp", headers={"Mcp-Session-Id": s})
    assert status == 200
    r = post(daemon, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, s)
    assert r[0] == 404 and rpc_code(r) == -32001
    status, _, _ = daemon.request("DELETE", "/mcp", headers={"Mcp-Session-Id": s})
    assert status == 404


def test_get_is_405(daemon):
    status, h, _ = daemon.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    assert status == 405 and "POST" in h["allow"]


def test_notification_is_accepted(daemon, sid):
    status, _, m = post(daemon, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    assert status == 202 and m is None


def test_another_sandboxs_context(daemon, sid):
    status, _, m = call(daemon, sid, "create_context", {"sandbox": "mcp-a"})
    cid = m["result"]["structuredContent"]["id"]
    text = tool_error(call(daemon, sid, "run_code", {"code": "1", "context": cid, "sandbox": "mcp-b"}))
    assert text.startswith("CONTEXT_NOT_FOUND")


def test_paths_out_of_the_workspace(daemon, sid):
    assert tool_error(call(daemon, sid, "read_file", {"path": "../etc/passwd"})).startswith("VALIDATION_FAILED")
    assert tool_error(call(daemon, sid, "read_file", {"path": "/etc/passwd"})).startswith("VALIDATION_FAILED")
    call(daemon, sid, "exec", {"command": "ln -sf /etc/passwd /workspace/link"})
    assert tool_error(call(daemon, sid, "read_file", {"path": "link"})).startswith("VALIDATION_FAILED")
    r = call(daemon, sid, "write_file", {"path": "a\u0000b", "content": "x"})
    assert rpc_code(r) == -32602 and "NUL" in r[2]["error"]["message"]


def test_raising_cell_in_sse(daemon, sid):
    status, h, data = daemon.request("POST", "/mcp", json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "run_code", "arguments": {"code": "raise KeyError('k')"}}}).encode(),
        {"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": sid})
    assert status == 200 and h["content-type"].startswith("text/event-stream")
    msg = json.loads([l for l in data.decode().splitlines() if l.startswith("data: ")][0][6:])
    assert msg["id"] == 9 and msg["result"]["isError"] is True
    assert msg["result"]["content"][-1]["text"].startswith("KeyError")


def test_oversized(make_daemon):
    d = make_daemon("--max-body-bytes", "65536", "--max-code-bytes", "1024",
                    "--mcp-max-read-bytes", "1024")
    s = init(d)
    status, _, _ = d.request("POST", "/mcp", b'{"x":"' + b"a" * 70000 + b'"}',
                             {"Content-Type": "application/json", "Mcp-Session-Id": s})
    assert status == 413
    assert tool_error(call(d, s, "run_code", {"code": "#" * 2000})).startswith("PAYLOAD_TOO_LARGE")
    call(d, s, "write_file", {"path": "big.txt", "content": "b" * 4096})
    assert tool_error(call(d, s, "read_file", {"path": "big.txt"})).startswith("PAYLOAD_TOO_LARGE")
    assert post(d, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, s)[0] == 200


def test_session_flood_and_expiry(make_daemon):
    d = make_daemon("--mcp-max-sessions", "3", "--mcp-session-idle-ms", "1000")
    ids = [init(d) for _ in range(3)]
    r = post(d, INIT)
    assert r[0] == 429 and rpc_code(r) == -32000
    d.request("DELETE", "/mcp", headers={"Mcp-Session-Id": ids[0]})
    ids[0] = init(d)
    time.sleep(2.0)  # past --mcp-session-idle-ms: every session has expired
    r = post(d, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, ids[1])
    assert r[0] == 404 and rpc_code(r) == -32001
    assert len([init(d) for _ in range(3)]) == 3


# ---- sbx mcp: stdio forwarded to /mcp ----

def sbx_mcp(url, lines, token=None):
    """Run `sbx mcp` with lines on stdin; returns (exit status, the JSON lines it wrote)."""
    import os
    import subprocess
    from sbxtest import BUILD
    env = dict(os.environ, SANDBOXD_URL=url)
    env.pop("SANDBOXD_TOKEN", None)
    if token:
        env["SANDBOXD_TOKEN"] = token
    p = subprocess.run([os.path.join(BUILD, "sbx"), "mcp"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines()]


def test_sbx_mcp_forwards_in_order_and_passes_errors_on(daemon):
    rc, out = sbx_mcp("http://127.0.0.1:%d" % daemon.port, [
        "this is not json",
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "",
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "run_code", "arguments": {"code": "1+1"}}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "nope"}),
    ])
    assert rc == 0
    # the notification gets no line; a tools/call (its own thread) may be overtaken
    assert [m.get("id") for m in out][:2] == [None, 1]
    by_id = {m.get("id"): m for m in out}
    assert sorted(by_id, key=str) == sorted([None, 1, 2, 3], key=str)
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[2]["result"]["content"] == [{"type": "text", "text": "2"}]
    assert by_id[3]["error"]["code"] == -32601


def test_sbx_mcp_a_long_call_does_not_hold_up_the_next_messages(daemon):
    """The run waits for a file that only the last message makes: the ping after it must be
    answered while it runs, or the run would never end."""
    wait = ("import os, time\nwhile not os.path.exists('/workspace/go-sbx'):\n"
            "    time.sleep(0.02)\n'released'")
    rc, out = sbx_mcp("http://127.0.0.1:%d" % daemon.port, [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "run_code", "arguments": {"code": wait}}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                    "params": {"name": "exec", "arguments": {"command": "touch /workspace/go-sbx"}}}),
    ])
    ids = [m["id"] for m in out]
    assert rc == 0 and sorted(ids) == [1, 2, 3, 4]
    assert ids.index(3) < ids.index(2)
    assert {m["id"]: m for m in out}[2]["result"]["content"][0]["text"] == "'released'"


def test_sbx_mcp_unreachable_daemon_is_a_jsonrpc_error():
    rc, out = sbx_mcp("http://127.0.0.1:1", [json.dumps(INIT)])
    assert rc == 0 and out[0]["id"] == 1 and out[0]["error"]["code"] == -32603
    assert "unreachable" in out[0]["error"]["message"]


def test_sbx_mcp_without_the_token(make_daemon):
    d = make_daemon("--token", "s3cret")
    url = "http://127.0.0.1:%d" % d.port
    rc, out = sbx_mcp(url, [json.dumps(INIT)])
    assert out[0]["error"]["code"] == -32603 and "HTTP 401" in out[0]["error"]["message"]
    rc, out = sbx_mcp(url, [json.dumps(INIT)], token="s3cret")
    assert out[0]["result"]["serverInfo"]["name"] == "sandboxd"
