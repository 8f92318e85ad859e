"""Re-attach latency: from sending `GET /v1/sandboxes/{sid}/executions/{eid}/events` to the
first replayed event at the client.

Three cases, each on one keep-alive connection: a finished run of 10 events replayed from the
start; a finished run of 2000 events replayed from after its 1990th (`?after=1990`: the
events before are skipped, not sent); and a run still going (a 60 s sleep after one print),
re-attached from the start — the stdout event it already logged comes back at once. The
rest of each stream is read untimed (the live run's stream is left by closing the
connection; it is then cancelled). Baseline in the same run: `GET /v1/health` on the same
kind of connection (the daemon's floor for an answered request).
"""
import socket
import time

from client import Http
from util import Section, bar_chart, daemon, stop


def first_event(h, path, n):
    raw = Http.encode("GET", path, accept="text/event-stream")
    out = []
    for _ in range(n):
        t = time.perf_counter()
        seen = []

        def on_chunk(c):
            if not seen and b"\nid: " in c:
                seen.append(time.perf_counter())
        h.send_raw(raw)
        st, body = h.read_response(on_chunk)
        if st != 200 or not seen:
            raise RuntimeError("no replayed event: %s %s" % (st, body[:200]))
        out.append((seen[0] - t) * 1e3)
    return out


def live_first_event(port, path, n):
    """Re-attach to a run that is still going: the first event, then leave."""
    req = ("GET %s HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n" % path).encode()
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        t = time.perf_counter()
        s.sendall(req)
        got = b""
        while b"\nid: " not in got:
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("stream closed: %r" % got[:200])
            got += chunk
        out.append((time.perf_counter() - t) * 1e3)
        s.close()
    return out


def health(h, n):
    raw = Http.encode("GET", "/v1/health")
    out = []
    for _ in range(n):
        t = time.perf_counter()
        h.send_raw(raw)
        h.read_response()
        out.append((time.perf_counter() - t) * 1e3)
    return out


def run(opts):
    sec = Section("reattach", "Re-attach to an execution: first replayed event", __doc__)
    n = 200 if opts.quick else 2000
    proc, port = daemon(opts.build, sec, "--reattach-grace-ms", "600000")
    h = Http(port)
    try:
        h.json("PUT", "/v1/sandboxes/ra")
        cid = h.json("POST", "/v1/sandboxes/ra/contexts", {"language": "python"})["id"]
        small = h.json("POST", "/v1/sandboxes/ra/execute", {
            "code": "import sys\nfor i in range(9):\n    sys.stdout.write(str(i))\n"
                    "    sys.stdout.flush()", "context": cid})["id"]
        big = h.json("POST", "/v1/sandboxes/ra/execute", {
            "code": "import sys\nfor i in range(1999):\n    sys.stdout.write(str(i))\n"
                    "    sys.stdout.flush()", "context": cid})["id"]
        base = "/v1/sandboxes/ra/executions/"
        first_event(h, base + small + "/events", 50)
        from_start = first_event(h, base + small + "/events", n)
        tail = first_event(h, base + big + "/events?after=1990", n)
        floor = health(h, n)
        # the live run: started on a connection of its own, left running
        s = socket.create_connection(("127.0.0.1", port))
        body = b'{"code":"print(\'x\', flush=True)\\nimport time\\ntime.sleep(60)","context":"%s"}' \
            % cid.encode()
        s.sendall(b"POST /v1/sandboxes/ra/execute HTTP/1.1\r\nHost: x\r\n"
                  b"Accept: text/event-stream\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        head = b""
        while b"event: stdout" not in head:
            head += s.recv(65536)
        eid = head.split(b"X-Execution-Id: ", 1)[1].split(b"\r\n", 1)[0].decode()
        live = live_first_event(port, base + eid + "/events", max(20, n // 10))
        s.close()
        h.json("DELETE", base + eid)
    finally:
        h.close()
        stop(proc)
    sec.row("re-attach to a finished run (10 events, from the start)", from_start, "ms",
            "GET /v1/health on a keep-alive connection", floor, headline=True)
    sec.row("re-attach to a finished run (2000 events, ?after=1990)", tail, "ms",
            "GET /v1/health on a keep-alive connection", floor)
    sec.row("re-attach to a running run (new connection, from the start)", live, "ms",
            "GET /v1/health on a keep-alive connection", floor)
    from common import median as med
    bar_chart(sec, "reattach.png", "Re-attach: first replayed event (median)",
              ["finished, 10 events", "finished, after=1990 of 2000", "running (new conn)",
               "GET /v1/health"], [med(from_start), med(tail), med(live), med(floor)], "ms")
    return sec
