"""End-to-end tests of the files API: PUT/GET/DELETE …/files/{path}, files:move, files:mkdir.
Binary safety, directory listings, paths as the sandbox sees them, the size cap, and that
files written through the API and by code in the sandbox are the same files."""
import hashlib
import json
import os
import socket

from sbxtest import Sandbox


def url(sb, path=""):
    return "/v1/sandboxes/%s/files/%s" % (sb.id, path)


def put(sb, path, data, headers=None):
    return sb.d.json("PUT", url(sb, path), data, headers or {})


def get(sb, path):
    return sb.d.request("GET", url(sb, path))


def test_roundtrip_binary(sandbox):
    data = bytes(range(256)) * 64 + b"\x00\xff\xfe" + os.urandom(3 << 20)
    status, out = put(sandbox, "bin/data.bin", data)
    assert status == 201 and out == {"path": "/workspace/bin/data.bin", "size": len(data)}
    status, hdrs, body = get(sandbox, "bin/data.bin")
    assert status == 200 and body == data
    assert hdrs["content-length"] == str(len(data))
    assert hdrs["content-type"] == "application/octet-stream"
    # the same file as code in the sandbox sees it
    out = sandbox.sh("sha256sum /workspace/bin/data.bin; stat -c '%u:%g %s' bin/data.bin")
    assert hashlib.sha256(data).hexdigest() in out
    assert "1000:1000 %d" % len(data) in out   # owned by the sandbox's user


def test_empty_file_and_content_type(sandbox):
    assert put(sandbox, "empty.txt", b"")[0] == 201
    status, hdrs, body = get(sandbox, "empty.txt")
    assert status == 200 and body == b"" and hdrs["content-type"].startswith("text/plain")
    put(sandbox, "t.csv", b"a,b\n1,2\n")
    assert get(sandbox, "t.csv")[1]["content-type"].startswith("text/csv")
    status, hdrs, body = sandbox.d.request("HEAD", url(sandbox, "t.csv"))
    assert status == 200 and body == b"" and hdrs["content-length"] == "8"


def test_path_forms(sandbox):
    put(sandbox, "p/a.txt", b"A")
    for form in ("p/a.txt", "/workspace/p/a.txt", "%2Fworkspace%2Fp%2Fa.txt", "./p//a.txt"):
        status, _, body = get(sandbox, form)
        assert (status, body) == (200, b"A"), form
    # overwriting replaces the content
    put(sandbox, "/workspace/p/a.txt", b"BB")
    assert get(sandbox, "p/a.txt")[2] == b"BB"


def test_listing(sandbox):
    put(sandbox, "d/f1", b"12345")
    sandbox.sh("mkdir -p d/sub && ln -s f1 d/link")
    status, out = sandbox.d.json("GET", url(sandbox, "d"))
    assert status == 200 and out["path"] == "/workspace/d"
    by = {e["name"]: e for e in out["entries"]}
    assert by["f1"]["type"] == "file" and by["f1"]["size"] == 5
    assert by["sub"]["type"] == "dir" and by["link"]["type"] == "symlink"
    assert all(isinstance(e["mtime"], int) for e in out["entries"])
    status, root = sandbox.d.json("GET", "/v1/sandboxes/%s/files" % sandbox.id)
    assert status == 200 and "d" in [e["name"] for e in root["entries"]]


def test_visible_both_ways(sandbox):
    put(sandbox, "from-api.txt", b"written by the API\n")
    assert sandbox.sh("cat /workspace/from-api.txt") == "written by the API\n"
    sandbox.sh("printf 'from code' > /workspace/from-exec.txt")
    assert get(sandbox, "from-exec.txt")[2] == b"from code"
    # a context of the sandbox sees it too (python code through /execute)
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/execute" % sandbox.id,
                                 {"code": "open('/workspace/from-api.txt').read()"})
    if status == 200 and not out.get("error"):
        assert "written by the API" in json.dumps(out["results"])


def test_errors(sandbox):
    assert get(sandbox, "nope.txt")[0] == 404
    assert json.loads(get(sandbox, "nope.txt")[2])["code"] == "FILE_NOT_FOUND"
    status, e = sandbox.d.json("GET", "/v1/sandboxes/no-such-sbx/files/a")
    assert status == 404 and e["code"] == "SANDBOX_NOT_FOUND"
    for bad in ("..", "a/../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "%2Fetc%2Fpasswd",
                "/etc/passwd", "a%00b", "x" * 300, "/workspace/.."):
        status, _, body = get(sandbox, bad)
        assert status == 400, (bad, body)
    status, e = put(sandbox, "", b"x")
    assert status == 400
    put(sandbox, "file", b"x")
    status, e = put(sandbox, "file/child", b"x")
    assert status == 409, e
    assert sandbox.d.json("DELETE", url(sandbox, ""))[0] == 400


def test_special_files_refused_without_blocking(sandbox):
    sandbox.sh("mkfifo /workspace/fifo; python3 -c \"import socket;"
               "s=socket.socket(socket.AF_UNIX);s.bind('/workspace/sock')\"")
    status, _, body = get(sandbox, "fifo")   # would block forever if opened blocking
    assert status == 400 and b"not a regular file" in body
    assert get(sandbox, "sock")[0] == 400
    assert put(sandbox, "fifo", b"data")[0] == 201   # replaces the name, never writes into it
    assert get(sandbox, "fifo")[2] == b"data"


def test_delete_move_mkdir(sandbox):
    put(sandbox, "m/a.txt", b"a")
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/files:move" % sandbox.id,
                                 {"from": "m/a.txt", "to": "/workspace/n/b.txt"})
    assert status == 200 and out == {"from": "/workspace/m/a.txt", "to": "/workspace/n/b.txt"}
    assert get(sandbox, "n/b.txt")[2] == b"a" and get(sandbox, "m/a.txt")[0] == 404
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/files:move" % sandbox.id,
                                 {"from": "nope", "to": "x"})
    assert status == 404
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/files:move" % sandbox.id,
                                 {"from": "../x", "to": "x"})
    assert status == 400
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/files:mkdir" % sandbox.id,
                                 {"path": "k/l/m"})
    assert status == 201 and out == {"path": "/workspace/k/l/m", "created": True}
    status, out = sandbox.d.json("POST", "/v1/sandboxes/%s/files:mkdir" % sandbox.id,
                                 {"path": "k/l/m"})
    assert status == 200 and out["created"] is False
    assert sandbox.sh("stat -c %u k/l/m") == "1000\n"
    status, _ = sandbox.d.json("POST", "/v1/sandboxes/%s/files:mkdir" % sandbox.id,
                               {"path": "n/b.txt"})
    assert status == 409
    status, _ = sandbox.d.json("POST", "/v1/sandboxes/%s/files:mkdir" % sandbox.id, {})
    assert status == 400
    sandbox.sh("mkdir -p tree/a/b && touch tree/a/b/c tree/x && ln -s /etc tree/etc")
    status, out = sandbox.d.json("DELETE", url(sandbox, "tree"))
    assert status == 200 and out["deleted"] is True
    assert sandbox.sh("ls /workspace") .split() == ["k", "m", "n"]
    assert sandbox.sh("test -f /etc/passwd && echo ok") == "ok\n"
    status, _ = sandbox.d.json("DELETE", url(sandbox, "tree"))
    assert status == 404
    status, _ = sandbox.d.json("DELETE", url(sandbox, "n/b.txt"))
    assert status == 200 and get(sandbox, "n/b.txt")[0] == 404


def test_size_limit(make_daemon):
    d = make_daemon("--max-file-bytes", "100000")
    sb = Sandbox(d, "lim")
    status, e = put(sb, "ok.bin", b"x" * 100000)
    assert status == 201
    status, e = put(sb, "big.bin", b"x" * 100001)
    assert status == 413 and e["code"] == "PAYLOAD_TOO_LARGE" and "100000" in e["message"]
    # chunked (no Content-Length): cut off when it passes the limit
    c = d.conn(timeout=10)
    c.request("PUT", url(sb, "chunked.bin"), body=iter([b"y" * 50000] * 3),
              encode_chunked=True)
    r = c.getresponse()
    assert r.status == 413 and json.loads(r.read())["code"] == "PAYLOAD_TOO_LARGE"
    c.close()
    assert get(sb, "chunked.bin")[0] == 404
    # nothing half-written is left behind
    assert sb.sh("ls -A /workspace") == "ok.bin\n"
    sb.delete()


def test_workspace_full(make_daemon):
    if os.geteuid() != 0:
        return   # the workspace size is enforced by a tmpfs only when root
    d = make_daemon()
    sb = Sandbox(d, "full", limits={"diskMb": 1})
    # announced: refused before a byte is written
    status, e = put(sb, "big.bin", b"z" * (3 << 20))
    assert status == 507 and e["code"] == "DISK_FULL" and "diskMb is 1" in e["message"], e
    # chunked (no Content-Length): the writer in the sandbox meets ENOSPC
    c = d.conn(timeout=30)
    c.request("PUT", url(sb, "chunked.bin"), body=iter([b"z" * (256 << 10)] * 12),
              encode_chunked=True)
    r = c.getresponse()
    e = json.loads(r.read())
    c.close()
    assert r.status == 507 and e["code"] == "DISK_FULL" and "full" in e["message"], e
    assert sb.sh("ls -A /workspace") == ""
    sb.delete()


def test_aborted_upload_leaves_nothing(sandbox):
    s = socket.create_connection(("127.0.0.1", sandbox.d.port), timeout=10)
    s.sendall(b"PUT /v1/sandboxes/%s/files/partial.bin HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 10000000\r\n\r\n" % sandbox.id.encode() + b"p" * 3000000)
    s.close()
    import time
    deadline = time.time() + 30   # the writer in the sandbox is killed, then the file removed
    while sandbox.sh("ls -A /workspace") != "" and time.time() < deadline:
        time.sleep(0.05)
    assert get(sandbox, "partial.bin")[0] == 404
    assert sandbox.sh("ls -A /workspace") == ""


def test_large_streamed_file(sandbox):
    """64 MiB up and down through one connection, in pieces (the body is never buffered)."""
    block = os.urandom(1 << 20)
    n = 64
    c = sandbox.d.conn(timeout=60)
    c.putrequest("PUT", url(sandbox, "large.bin"))
    c.putheader("Content-Length", str(n * len(block)))
    c.endheaders()
    for _ in range(n):
        c.send(block)
    r = c.getresponse()
    assert r.status == 201, r.read()
    assert json.loads(r.read())["size"] == n * len(block)
    c.request("GET", url(sandbox, "large.bin"))
    r = c.getresponse()
    h = hashlib.sha256()
    total = 0
    while True:
        part = r.read(1 << 20)
        if not part:
            break
        h.update(part)
        total += len(part)
    assert total == n * len(block)
    assert h.hexdigest() == hashlib.sha256(block * n).hexdigest()
    c.close()
