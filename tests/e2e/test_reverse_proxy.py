"""sandboxd behind nginx, configured as docs/reverse-proxy.md says (the page's `nginx` block,
with its ports, certificate and timeouts replaced): TLS at the proxy, the token passed
through, a streamed run's events arriving while it runs, a silent cell longer than the
proxy's read timeout kept open by the daemon's heartbeat, and re-attach through the proxy."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

import pytest

from sbxtest import Daemon

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "reverse-proxy.md")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
TOKEN = "proxy-test-token"
READ_TIMEOUT_S = 2       # nginx gives up on a silent upstream after this long
HEARTBEAT_MS = 400       # the daemon's heartbeat, well inside it


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def doc_config(daemon_port, port, cert, key):
    """The page's nginx block, pointed at the test daemon, with a test certificate."""
    text = open(DOC).read()
    block = re.search(r"```nginx\n(.*?)```", text, re.S).group(1)
    subs = [("server 127.0.0.1:7878;", "server 127.0.0.1:%d;" % daemon_port),
            ("listen 443 ssl;", "listen 127.0.0.1:%d ssl;" % port),
            ("/etc/ssl/sandboxd/fullchain.pem", cert),
            ("/etc/ssl/sandboxd/privkey.pem", key),
            ("proxy_read_timeout 3600s;", "proxy_read_timeout %ds;" % READ_TIMEOUT_S)]
    for old, new in subs:
        assert old in block, "docs/reverse-proxy.md no longer has %r" % old
        block = block.replace(old, new)
    return block


@pytest.fixture(scope="module")
def proxied():
    daemon = Daemon("--token", TOKEN, "--sse-heartbeat-ms", str(HEARTBEAT_MS))
    daemon.token = TOKEN
    prefix = tempfile.mkdtemp(prefix="sbx-nginx-")
    os.chmod(prefix, 0o755)
    cert, key = os.path.join(prefix, "cert.pem"), os.path.join(prefix, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    port = free_port()
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write("pid %s/nginx.pid;\nerror_log %s/error.log info;\nworker_processes 1;\n"
                "events {}\nhttp {\n  access_log %s/access.log;\n"
                "  client_body_temp_path %s/body;\n  proxy_temp_path %s/proxy;\n"
                "%s\n}\n" % ((prefix,) * 5 + (doc_config(daemon.port, port, cert, key),)))
    ng = subprocess.Popen([NGINX, "-p", prefix, "-c", conf, "-g", "daemon off;"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if ng.poll() is not None or time.time() > deadline:
                log = open(os.path.join(prefix, "error.log")).read() if os.path.exists(
                    os.path.join(prefix, "error.log")) else ""
                raise RuntimeError("nginx did not start: " + log)
            time.sleep(0.05)
    yield daemon, port
    ng.send_signal(signal.SIGQUIT)
    try:
        ng.wait(20)
    except subprocess.TimeoutExpired:
        ng.kill()
    shutil.rmtree(prefix, ignore_errors=True)
    assert daemon.stop() == 0, daemon.logs().decode(errors="replace")[-3000:]


def via_proxy(port, method, path, body=None, headers=None, token=TOKEN):
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=60,
                                    context=ssl._create_unverified_context())
    hdrs = {"Content-Type": "application/json"}
    if token:
        hdrs["Authorization"] = "Bearer " + token
    hdrs.update(headers or {})
    c.request(method, path, json.dumps(body) if body is not None else None, hdrs)
    return c, c.getresponse()


def read_event(r):
    fields = {}
    while True:
        line = r.readline()
        if not line:
            return None
        line = line.decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if line == "":
            if fields:
                return fields["event"], int(fields.get("id", 0)), json.loads(fields["data"])
            continue
        k, _, v = line.partition(": ")
        fields[k] = v


def read_all(r):
    out = []
    while True:
        ev = read_event(r)
        if ev is None:
            return out
        out.append(ev)


SSE = {"Accept": "text/event-stream"}


def test_the_token_passes_through(proxied):
    daemon, port = proxied
    c, r = via_proxy(port, "PUT", "/v1/sandboxes/proxied", token=None)
    assert r.status == 401 and json.loads(r.read())["code"] == "UNAUTHORIZED"
    c.close()
    c, r = via_proxy(port, "PUT", "/v1/sandboxes/proxied")
    assert r.status in (200, 201)
    c.close()


def test_events_arrive_while_the_run_runs(proxied):
    daemon, port = proxied
    daemon.json("PUT", "/v1/sandboxes/proxied")
    c, r = via_proxy(port, "POST", "/v1/sandboxes/proxied/execute",
                     {"code": "import time\nprint('first', flush=True)\ntime.sleep(3)\n"
                              "print('second')"}, SSE)
    assert r.status == 200
    eid = r.getheader("X-Execution-Id")
    ev = read_event(r)
    assert ev[0] == "stdout" and ev[2]["text"].startswith("first")
    # the first event came through while the run still runs (asked of the daemon directly)
    status, doc = daemon.json("GET", "/v1/sandboxes/proxied/executions/" + eid)
    assert status == 200 and doc["state"] == "running"
    rest = read_all(r)
    c.close()
    assert rest[-1][0] == "end"
    assert "second" in "".join(e[2]["text"] for e in rest if e[0] == "stdout")


def test_a_silent_cell_outlives_the_proxy_read_timeout(proxied):
    daemon, port = proxied
    daemon.json("PUT", "/v1/sandboxes/proxied")
    c, r = via_proxy(port, "POST", "/v1/sandboxes/proxied/execute",
                     {"code": "import time\ntime.sleep(%d)\n'awake'" % (3 * READ_TIMEOUT_S)},
                     SSE)
    events = read_all(r)
    c.close()
    assert [e[0] for e in events] == ["result", "end"], events
    assert events[0][2]["text"] == "'awake'"


def test_reattach_through_the_proxy(proxied):
    daemon, port = proxied
    daemon.json("PUT", "/v1/sandboxes/proxied")
    c, r = via_proxy(port, "POST", "/v1/sandboxes/proxied/execute",
                     {"code": "import time\nfor i in range(3):\n    print('n', i, flush=True)\n"
                              "    time.sleep(0.5)\n"}, SSE)
    eid = r.getheader("X-Execution-Id")
    first = read_event(r)
    c.close()                                     # the client (through the proxy) goes away
    c, r = via_proxy(port, "GET", "/v1/sandboxes/proxied/executions/%s/events" % eid, None,
                     dict(SSE, **{"Last-Event-ID": str(first[1])}))
    assert r.status == 200
    rest = read_all(r)
    c.close()
    assert rest[0][1] == first[1] + 1 and rest[-1][0] == "end"
    text = first[2]["text"] + "".join(e[2]["text"] for e in rest if e[0] == "stdout")
    assert text == "n 0\nn 1\nn 2\n"
