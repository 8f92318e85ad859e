"""End-to-end tests of the HTTP core: routing, errors, keep-alive, pipelining, limits,
authentication, hostile input, metrics and shutdown."""
import json
import re
import socket
import time

import pytest


def test_health(daemon):
    status, body = daemon.json("GET", "/v1/health")
    assert status == 200
    assert body["status"] == "ok"
    assert set(body["languages"]) == {"python", "javascript", "typescript"}
    for lang in body["languages"].values():
        assert isinstance(lang["available"], bool)


def test_unknown_route_is_json_404(daemon):
    status, hdrs, data = daemon.request("GET", "/v1/nope")
    assert status == 404
    assert hdrs["content-type"] == "application/json"
    assert json.loads(data) == {"code": "NOT_FOUND", "message": "no such route: /v1/nope"}


def test_wrong_method_is_json_405_with_allow(daemon):
    status, hdrs, data = daemon.request("DELETE", "/v1/health")
    assert status == 405
    assert hdrs["allow"] == "GET"
    assert json.loads(data)["code"] == "METHOD_NOT_ALLOWED"


def test_head_has_no_body(daemon):
    status, hdrs, data = daemon.request("HEAD", "/v1/health")
    assert status == 200 and data == b""
    assert int(hdrs["content-length"]) > 0


def test_unmatched_escape_is_404(daemon):
    status, body = daemon.json("GET", "/v1/health%zz")
    assert status == 404 and body["code"] == "NOT_FOUND"


def test_keep_alive_reuses_the_connection(daemon):
    c = daemon.conn()
    for _ in range(5):
        status, _, _ = daemon.request("GET", "/v1/health", conn=c)
        assert status == 200
    sock = c.sock
    assert sock is not None   # still the same open socket after five requests
    c.close()


def test_pipelined_requests_answer_in_order(daemon):
    reqs = b"".join(b"GET /v1/%s HTTP/1.1\r\nHost: x\r\n\r\n" % p
                    for p in (b"health", b"missing1", b"health", b"missing2"))
    reqs += b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    out = daemon.raw(reqs)
    statuses = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", out)]
    assert statuses == [200, 404, 200, 404, 200]
    assert out.index(b"missing1") < out.index(b"missing2")


def test_http10_closes_after_response(daemon):
    out = daemon.raw(b"GET /v1/health HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and b"Connection: close" in out


def test_expect_100_continue(daemon):
    s = socket.create_connection(("127.0.0.1", daemon.port), timeout=5)
    s.sendall(b"POST /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
              b"Expect: 100-continue\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    s.sendall(b"{}")
    assert s.recv(4096).startswith(b"HTTP/1.1 405")
    s.close()


@pytest.mark.parametrize("garbage", [
    b"\x00\x01\x02\x03\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
    b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
    b"CONNECT x:443 HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
])
def test_garbage_gets_400_and_close(daemon, garbage):
    out = daemon.raw(garbage)
    assert out.startswith(b"HTTP/1.1 400"), out[:200]
    body = out.split(b"\r\n\r\n", 1)[1]
    assert json.loads(body)["code"] == "BAD_REQUEST"
    assert daemon.alive()


def test_header_limit_is_431(make_daemon):
    d = make_daemon("--max-header-bytes", "2048")
    out = d.raw(b"GET /v1/health HTTP/1.1\r\nX-A: " + b"a" * 4000 + b"\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 431")
    assert json.loads(out.split(b"\r\n\r\n", 1)[1])["code"] == "HEADERS_TOO_LARGE"
    # many small headers count too
    many = b"".join(b"X-%d: v\r\n" % i for i in range(400))
    out = d.raw(b"GET /v1/health HTTP/1.1\r\n" + many + b"\r\n")
    assert out.startswith(b"HTTP/1.1 431")


def test_body_limit_is_413(make_daemon):
    d = make_daemon("--max-body-bytes", "1024")
    out = d.raw(b"POST /v1/health HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 413")
    assert b"exceeds the limit of 1024 bytes" in out
    # chunked: found while reading
    chunk = b"%x\r\n%s\r\n" % (600, b"a" * 600)
    out = d.raw(b"POST /v1/health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 3
                + b"0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 413")


def test_header_timeout_is_408(make_daemon):
    d = make_daemon("--header-timeout-ms", "300")
    t = time.time()
    out = d.raw(b"GET /v1/health HTTP/1.1\r\nHost:", timeout=5)
    assert out.startswith(b"HTTP/1.1 408")
    assert time.time() - t < 3


def test_idle_timeout_closes(make_daemon):
    d = make_daemon("--idle-timeout-ms", "200")
    c = d.conn(timeout=5)
    assert d.request("GET", "/v1/health", conn=c)[0] == 200
    t = time.time()
    assert c.sock.recv(10) == b""     # the idle keep-alive is closed by the server
    assert 0.1 < time.time() - t < 3
    c.close()


def test_first_request_timeout_closes(make_daemon):
    d = make_daemon("--first-request-timeout-ms", "200")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=8)   # the default is 10 s
    assert s.recv(10) == b""          # never sent a byte: closed, nothing sent
    s.close()


def test_max_connections_is_429(make_daemon):
    d = make_daemon("--max-connections", "2")
    assert d.json("PUT", "/v1/sandboxes/held")[0] == 201
    # connections a handler holds (here: uploads whose body is still arriving) are never
    # shed for a newcomer
    # shed for a newcomer. Each is opened once the one before it is held: until the daemon
    # has seen the PUT's connection close, a second newcomer may itself be the one shed.
    def hold(i):
        deadline = time.time() + 20
        while True:
            s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
            try:
                s.sendall(b"PUT /v1/sandboxes/held/files/up%d HTTP/1.1\r\n"
                          b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n" % i)
                got = s.recv(100)
            except ConnectionResetError:
                got = b""
            if got.startswith(b"HTTP/1.1 100 Continue"):   # the handler has it
                return s
            s.close()
            assert time.time() < deadline, got
            time.sleep(0.05)
    held = [hold(i) for i in range(2)]
    out = d.raw(b"")
    assert out.startswith(b"HTTP/1.1 429")
    assert json.loads(out.split(b"\r\n\r\n", 1)[1])["code"] == "LIMIT_REACHED"
    for s in held:
        s.close()
    deadline = time.time() + 20       # until the daemon has seen the two closes

    def health():
        try:
            return d.json("GET", "/v1/health")[0]
        except ConnectionResetError:  # a 429 closes with the unread request: a reset
            return None
    status = health()
    while status != 200 and time.time() < deadline:
        time.sleep(0.05)
        status = health()
    assert status == 200


def test_token_required(make_daemon):
    d = make_daemon("--token", "s3cret")
    status, body = d.json("GET", "/metrics")
    assert status == 401 and body["code"] == "UNAUTHORIZED"
    status, body = d.json("GET", "/metrics", headers={"Authorization": "Bearer wrong"})
    assert status == 401
    status, _, data = d.request("GET", "/metrics", headers={"Authorization": "Bearer s3cret"})
    assert status == 200
    status, _ = d.json("GET", "/v1/health")          # health is public
    assert status == 200


def test_refuses_public_listen_without_token():
    import subprocess
    from sbxtest import BINARY
    p = subprocess.run([BINARY, "--listen", "0.0.0.0:0", "--state-dir", "/tmp/sbx-x"],
                       capture_output=True, timeout=10)
    assert p.returncode == 2
    assert b"without a token" in p.stderr


def test_bad_flag_is_reported():
    import subprocess
    from sbxtest import BINARY
    p = subprocess.run([BINARY, "--max-body-bytes", "lots"], capture_output=True, timeout=10)
    assert p.returncode == 2
    assert b"--max-body-bytes: 'lots'" in p.stderr


def test_env_configures(make_daemon):
    d = make_daemon(env={"SANDBOXD_MAX_BODY_BYTES": "1024"})
    out = d.raw(b"POST /v1/health HTTP/1.1\r\nContent-Length: 2000\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 413")


def test_metrics(daemon):
    daemon.request("GET", "/v1/health")
    daemon.request("GET", "/v1/nope")
    status, hdrs, data = daemon.request("GET", "/metrics")
    assert status == 200 and hdrs["content-type"].startswith("text/plain")
    text = data.decode()
    assert 'sandboxd_http_requests_total{route="/v1/health",method="GET",status="200"}' in text
    assert 'route="unmatched",method="GET",status="404"' in text
    assert "sandboxd_http_connections_open" in text
    assert "sandboxd_http_received_bytes_total" in text
    assert "sandboxd_http_sent_bytes_total" in text
    assert "sandboxd_sandboxes " in text and "sandboxd_contexts " in text
    assert "sandboxd_python_zygote_up 1" in text


def test_access_log_line(daemon):
    daemon.request("GET", "/v1/health")
    assert b"GET /v1/health 200 " in daemon.logs()


def test_client_disconnect_mid_request_keeps_daemon(daemon):
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", daemon.port))
        s.sendall(b"POST /v1/health HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc")
        s.close()
    status, _ = daemon.json("GET", "/v1/health")
    assert status == 200


def test_sigterm_exits_cleanly_with_open_connections(make_daemon):
    d = make_daemon()
    held = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(5)]
    assert d.stop() == 0
    for s in held:
        assert s.recv(10) == b""
        s.close()
