"""Hostile input to the E2B surface (POST /execute, /contexts, envd's /files and its Connect
services): malformed JSON and Connect frames, unknown ids, wrong types, huge bodies, path
escapes, a missing token. Each gets its exact status and envelope, the output is strict NDJSON
whatever the code prints, and the daemon survives (the fixtures check a clean exit)."""
import json
import struct

import pytest

SB = {"E2b-Sandbox-Id": "e2b-hostile"}


def hdrs(**extra):
    h = dict(SB)
    h.update(extra)
    return h


def frame(payload, flags=0, length=None):
    return struct.pack(">BI", flags, len(payload) if length is None else length) + payload


def frames(data):
    """Split a Connect stream body into (flags, parsed JSON) pairs; every byte must belong."""
    out, i = [], 0
    while i < len(data):
        flags, n = struct.unpack(">BI", data[i:i + 5])
        out.append((flags, json.loads(data[i + 5:i + 5 + n])))
        i += 5 + n
    assert i == len(data)
    return out


def ndjson(data):
    lines = data.decode().split("\n")
    assert lines[-1] == "", "the stream ends with a newline"
    return [json.loads(line) for line in lines[:-1]]  # a blank line would fail here


def execute(daemon, body, **h):
    return daemon.request("POST", "/execute", body, hdrs(**h))


# ---- POST /execute and /contexts ----

def test_execute_bad_bodies_get_exact_errors(daemon):
    cases = [
        (b"{not json", 400, "INVALID_JSON"),
        (b"", 400, "VALIDATION_FAILED"),
        ({"code": 5}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "context_id": 7}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "env_vars": ["A=1"]}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "env_vars": {"A": 1}}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "language": "cobol"}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "language": "python", "context_id": "ctx-1"}, 400, "VALIDATION_FAILED"),
        ({"code": "1", "context_id": "ctx-nope"}, 404, "CONTEXT_NOT_FOUND"),
    ]
    for body, status, code in cases:
        s, _, data = execute(daemon, body, **{"Content-Type": "application/json"})
        assert (s, json.loads(data)["code"]) == (status, code), (body, s, data)
    s, _, data = execute(daemon, {"code": "1", "context_id": "ctx-nope"})
    assert json.loads(data)["message"] == "Context ctx-nope not found"


def test_execute_output_is_strict_ndjson_whatever_is_printed(daemon):
    code = ("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe bad utf8 \\n\\n\\n')\n"
            "sys.stdout.flush()\nprint('\\x00\\x1b[31m')\nprint('é' * 5000)\n'\\n'")
    s, h, data = execute(daemon, {"code": code})
    assert s == 200 and h["content-type"] == "application/x-ndjson"
    lines = ndjson(data)
    assert lines[-1] == {"type": "end_of_execution"}
    assert lines[-2]["type"] == "number_of_executions"
    out = "".join(x["text"] for x in lines if x["type"] == "stdout")
    assert "\ufffd" in out and "é" * 5000 in out
    assert [x for x in lines if x["type"] == "result"][0]["text"] == "\\n"


def test_contexts_unknown_ids_and_bad_bodies(daemon):
    for method, path in (("POST", "/contexts/ctx-nope/restart"), ("DELETE", "/contexts/ctx-nope")):
        s, _, data = daemon.request(method, path, None, hdrs())
        assert (s, json.loads(data)["code"]) == (404, "CONTEXT_NOT_FOUND"), (path, data)
    for body, status in (({"language": "cobol"}, 400), ({"language": 3}, 400),
                         ({"cwd": 5}, 400), (b"[1]", 400)):
        s, _, data = daemon.request("POST", "/contexts", body,
                                    hdrs(**{"Content-Type": "application/json"}))
        assert s == status, (body, s, data)
        assert json.loads(data)["code"] == "VALIDATION_FAILED"
    # a directory that does not exist: the context cannot start (as on /v1)
    s, _, data = daemon.request("POST", "/contexts", {"cwd": "/no/such/dir"}, hdrs())
    err = json.loads(data)
    assert (s, err["code"]) == (500, "INTERNAL_ERROR") and "No such file" in err["message"]


def test_bad_sandbox_id_header(daemon):
    for bad in ("../etc", "a" * 70, "-x"):
        s, _, data = daemon.request("GET", "/contexts", None, {"E2b-Sandbox-Id": bad})
        assert (s, json.loads(data)["code"]) == (400, "VALIDATION_FAILED"), bad
    s, _, data = daemon.request("GET", "/contexts", None, {"E2b-Sandbox-Id": "x" * 100})
    assert s == 431  # longer than the header field holds


def test_huge_bodies_are_refused(make_daemon):
    d = make_daemon("--max-body-bytes", "65536", "--max-file-bytes", "1024",
                    "--max-upload-files", "2")
    part = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f%d\"\r\n\r\n"
            b"x\r\n")
    three = b"".join(part % i for i in range(3)) + b"--B--\r\n"
    s, _, data = d.request("POST", "/files", three,
                           hdrs(**{"Content-Type": "multipart/form-data; boundary=B"}))
    err = json.loads(data)
    assert (s, err["code"]) == (400, "VALIDATION_FAILED") and "--max-upload-files" in err["message"]
    two = b"".join(part % i for i in range(2)) + b"--B--\r\n"
    s, _, data = d.request("POST", "/files", two,
                           hdrs(**{"Content-Type": "multipart/form-data; boundary=B"}))
    assert s == 200 and len(json.loads(data)) == 2
    s, _, data = d.request("POST", "/execute", {"code": "x" * 70000}, hdrs())
    assert (s, json.loads(data)["code"]) == (413, "PAYLOAD_TOO_LARGE")
    s, _, data = d.request("POST", "/files?path=big.bin", b"\0" * 2048,
                           hdrs(**{"Content-Type": "application/octet-stream"}))
    assert (s, json.loads(data)["code"]) == (413, "PAYLOAD_TOO_LARGE"), data
    s, _, data = d.request("POST", "/process.Process/List", b"{" + b" " * 70000 + b"}",
                           hdrs(**{"Content-Type": "application/json"}))
    assert s == 413
    assert d.alive()


def test_token_is_required_and_accepted_in_the_e2b_headers(make_daemon):
    d = make_daemon("--token", "s3cret")
    s, _, data = d.request("POST", "/execute", {"code": "1"}, hdrs())
    assert (s, json.loads(data)["code"]) == (401, "UNAUTHORIZED")
    s, _, _ = d.request("POST", "/execute", {"code": "1"}, hdrs(**{"X-Access-Token": "wrong"}))
    assert s == 401
    s, _, data = d.request("POST", "/execute", {"code": "1"}, hdrs(**{"X-Access-Token": "s3cret"}))
    assert s == 200 and ndjson(data)[-1]["type"] == "end_of_execution"
    s, _, _ = d.request("GET", "/contexts", None, hdrs(**{"E2B-Traffic-Access-Token": "s3cret"}))
    assert s == 200
    s, _, _ = d.request("GET", "/contexts", None, hdrs(**{"Authorization": "Bearer s3cret"}))
    assert s == 200
    s, _, _ = d.request("POST", "/filesystem.Filesystem/Stat", {"path": "/workspace"}, hdrs())
    assert s == 401
    s, _, _ = d.request("GET", "/health", None, {})
    assert s == 200  # the readiness probe is public, like /v1/health


# ---- envd: /files ----

def test_files_bad_requests(daemon):
    cases = [
        ("GET", "/files", None, {}, 400),
        ("GET", "/files?path=%2", None, {}, 400),
        ("GET", "/files?path=/etc/passwd", None, {}, 400),
        ("GET", "/files?path=../../etc/passwd", None, {}, 400),
        ("GET", "/files?path=/workspace/none", None, {}, 404),
        ("GET", "/files?path=/workspace", None, {}, 400),
        ("POST", "/files?path=a.txt", b"x", {"Content-Type": "text/csv"}, 415),
        ("POST", "/files?path=a.txt", b"x", {"Content-Type": "multipart/form-data"}, 415),
        ("POST", "/files?path=/etc/x", b"x", {"Content-Type": "application/octet-stream"}, 400),
        ("POST", "/files?path=z.gz", b"\x1f\x8b", {"Content-Type": "application/octet-stream",
                                                   "Content-Encoding": "gzip"}, 415),
    ]
    for method, path, body, h, status in cases:
        s, _, data = daemon.request(method, path, body, hdrs(**h))
        assert s == status, (method, path, s, data)
    B = "XyZ"
    ct = {"Content-Type": "multipart/form-data; boundary=" + B}
    bad = [
        b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nno end",
        b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n",
        b"garbage without any boundary",
        b"--XyZ--\r\n",
    ]
    for body in bad:
        s, _, data = daemon.request("POST", "/files", body, hdrs(**ct))
        assert (s, json.loads(data)["code"]) == (400, "VALIDATION_FAILED"), (body, data)
    nameless = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc\r\n--XyZ--\r\n")
    s, _, data = daemon.request("POST", "/files", nameless, hdrs(**ct))
    assert (s, json.loads(data)["code"]) == (400, "VALIDATION_FAILED")
    escape = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../../x\"\r\n"
              b"\r\nabc\r\n--XyZ--\r\n")
    s, _, data = daemon.request("POST", "/files", escape, hdrs(**ct))
    assert (s, json.loads(data)["code"]) == (400, "VALIDATION_FAILED")
    good = (b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"ok.txt\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\nabc\r\n--XyZ--\r\n")
    s, _, data = daemon.request("POST", "/files", good, hdrs(**ct))
    assert s == 200 and json.loads(data) == [{"name": "ok.txt", "type": "file",
                                              "path": "/workspace/ok.txt"}]


# ---- envd: Connect ----

STREAM = {"Content-Type": "application/connect+json"}
UNARY = {"Content-Type": "application/json"}


def start(daemon, body):
    s, h, data = daemon.request("POST", "/process.Process/Start", body, hdrs(**STREAM))
    assert s == 200 and h["content-type"] == "application/connect+json", (s, data)
    return frames(data)


def test_connect_stream_frames_refused_exactly(daemon):
    ok = json.dumps({"process": {"cmd": "/bin/echo", "args": ["hi"]}}).encode()
    bad = [
        (b"\x00\x00", "not one enveloped"),
        (frame(ok, length=0xFFFFFFFF), "declares 4294967295 bytes but"),
        (frame(ok, length=len(ok) + 10), "but"),
        (frame(ok)[:-3], "but"),
        (frame(ok, flags=1), "flags"),
        (frame(b"{nope"), "not valid JSON"),
        (frame(b"[]"), "object"),
        (frame(b"{}"), "'process'"),
        (frame(json.dumps({"process": {"cmd": 3}}).encode()), "process.cmd"),
        (frame(json.dumps({"process": {"cmd": "x", "args": [1]}}).encode()), "args[0]"),
        (frame(json.dumps({"process": {"cmd": "x", "envs": {"A": 1}}}).encode()), "envs"),
        (frame(json.dumps({"process": {"cmd": "x", "cwd": 5}}).encode()), "cwd"),
    ]
    for body, words in bad:
        got = start(daemon, body)
        assert len(got) == 1 and got[0][0] == 2, got
        err = got[0][1]["error"]
        assert err["code"] == "invalid_argument" and words in err["message"], (body, err)
    pty = frame(json.dumps({"process": {"cmd": "x"}, "pty": {"size": {"cols": 1}}}).encode())
    assert start(daemon, pty)[0][1]["error"]["code"] == "unimplemented"
    got = start(daemon, frame(ok))
    assert got[0] == (0, {"event": {"start": {"pid": got[0][1]["event"]["start"]["pid"]}}})
    assert got[-1] == (2, {})
    end = [f[1]["event"]["end"] for f in got if "end" in f[1].get("event", {})]
    assert end == [{"exitCode": 0, "exited": True, "status": "exit status 0"}]


def test_connect_unary_errors(daemon):
    cases = [
        ("/process.Process/List", b"{bad", 400, "invalid_argument"),
        ("/process.Process/SendSignal", {"signal": "SIGNAL_SIGKILL"}, 400, "invalid_argument"),
        ("/process.Process/SendSignal", {"process": {"pid": 99999}, "signal": "SIGNAL_SIGKILL"},
         404, "not_found"),
        ("/process.Process/SendSignal", {"process": {"pid": 1}, "signal": "SIGNAL_SIGHUP"},
         400, "invalid_argument"),
        ("/process.Process/SendInput", {"input": {"stdin": "eA=="}}, 400, "invalid_argument"),
        ("/process.Process/SendInput", {"process": {"pid": 99999}, "input": {"stdin": "eA=="}},
         404, "not_found"),
        ("/process.Process/CloseStdin", {"process": {"pid": 99999}}, 404, "not_found"),
        ("/process.Process/StreamInput", {}, 501, "unimplemented"),
        ("/filesystem.Filesystem/Stat", {"path": "/etc/passwd"}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/Stat", {"path": "../../../etc"}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/Stat", {"path": 7}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/Stat", {}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/Stat", {"path": "/workspace/none"}, 404, "not_found"),
        ("/filesystem.Filesystem/ListDir", {"path": "/workspace", "depth": 1000}, 400,
         "invalid_argument"),
        ("/filesystem.Filesystem/ListDir", {"path": "/workspace/none"}, 404, "not_found"),
        ("/filesystem.Filesystem/Remove", {"path": "/workspace"}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/Remove", {"path": "/workspace/none"}, 404, "not_found"),
        ("/filesystem.Filesystem/Move", {"source": "/workspace/none", "destination": "x"}, 404,
         "not_found"),
        ("/filesystem.Filesystem/Move", {"source": "a"}, 400, "invalid_argument"),
        ("/filesystem.Filesystem/MakeDir", {"path": "/workspace"}, 409, "already_exists"),
        ("/filesystem.Filesystem/WatchDir", {"path": "/workspace"}, 501, "unimplemented"),
    ]
    for path, body, status, code in cases:
        s, _, data = daemon.request("POST", path, body, hdrs(**UNARY))
        assert (s, json.loads(data)["code"]) == (status, code), (path, body, s, data)
    s, _, data = daemon.request("POST", "/process.Process/Connect",
                                frame(json.dumps({"process": {"pid": 99999}}).encode()),
                                hdrs(**STREAM))
    assert s == 200 and frames(data)[0][1]["error"]["code"] == "not_found"


def test_symlinks_planted_by_code_are_not_followed(daemon):
    s, _, data = execute(daemon, {"code": "import os\nos.symlink('/etc', '/workspace/out')"})
    assert s == 200 and not [x for x in ndjson(data) if x["type"] == "error"]
    s, _, data = daemon.request("POST", "/filesystem.Filesystem/ListDir",
                                {"path": "/workspace/out"}, hdrs(**UNARY))
    assert (s, json.loads(data)["code"]) == (400, "invalid_argument"), data
    s, _, data = daemon.request("POST", "/filesystem.Filesystem/Stat",
                                {"path": "/workspace/out"}, hdrs(**UNARY))
    entry = json.loads(data)["entry"]
    assert entry["type"] == "FILE_TYPE_SYMLINK" and entry["symlinkTarget"] == "/etc"
    s, _, _ = daemon.request("GET", "/files?path=/workspace/out/passwd", None, hdrs())
    assert s == 400
    assert daemon.alive()
