"""`1+1` round trip and first-byte latency of streamed output.

Round trip: POST /v1/sandboxes/{sid}/execute `{"code":"1+1","context":cid}` on one keep-alive
connection, plain JSON, until the whole response is read (Python and JavaScript contexts).
Baselines in the same run: a Jupyter kernel over ZMQ (execute_request → execute_reply) and the
floor, a /usr/bin/python3 exec loop behind a Unix socket (write a line, eval, read a line).
First byte: the same request for `print('x')` with `Accept: text/event-stream`, timed from the
send until the chunk holding the `stdout` event is read (the rest of the stream is then read,
untimed). Baseline: Jupyter, execute_request → the first iopub `stream` message.
"""
import time

from client import Http
from jupyter_baseline import Floor, Kernel, available
from util import Section, bar_chart, daemon, stop


def http_rtt(h, sid, cid, code, n):
    raw = Http.encode("POST", "/v1/sandboxes/%s/execute" % sid, {"code": code, "context": cid})
    out = []
    for _ in range(n):
        t = time.perf_counter()
        h.send_raw(raw)
        st, body = h.read_response()
        out.append((time.perf_counter() - t) * 1e3)
        if st != 200:
            raise RuntimeError(body[:200])
    return out


def sse_first(h, sid, cid, n):
    raw = Http.encode("POST", "/v1/sandboxes/%s/execute" % sid,
                      {"code": "print('x')", "context": cid}, accept="text/event-stream")
    out = []
    for _ in range(n):
        t = time.perf_counter()
        seen = []

        def on_chunk(c):
            if not seen and b"event: stdout" in c:
                seen.append(time.perf_counter())
        h.send_raw(raw)
        h.read_response(on_chunk)
        if not seen:
            raise RuntimeError("no stdout event")
        out.append((seen[0] - t) * 1e3)
    return out


def run(opts):
    sec = Section("roundtrip", "Round trip of `1+1` and first byte of streamed output", __doc__)
    n = 300 if opts.quick else 3000
    nj = 200 if opts.quick else 1000
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        h.json("PUT", "/v1/sandboxes/rtt")
        py = h.json("POST", "/v1/sandboxes/rtt/contexts", {"language": "python"})["id"]
        js = h.json("POST", "/v1/sandboxes/rtt/contexts", {"language": "javascript"})["id"]
        http_rtt(h, "rtt", py, "1+1", 50)
        http_rtt(h, "rtt", js, "1+1", 50)
        py_rtt = http_rtt(h, "rtt", py, "1+1", n)
        js_rtt = http_rtt(h, "rtt", js, "1+1", n)
        sse_first(h, "rtt", py, 20)
        sse = sse_first(h, "rtt", py, n // 3)
    finally:
        h.close()
        stop(proc)
    f = Floor()
    try:
        for _ in range(200):
            f.run()
        floor = [f.run() * 1e3 for _ in range(n * 2)]
    finally:
        f.close()
    jup, jup_sse = None, None
    if available():
        k = Kernel()
        try:
            for _ in range(50):
                k.run("1+1")
            k.drain()
            jup = []
            for _ in range(nj):
                jup.append(k.run("1+1") * 1e3)
                if len(jup) % 100 == 0:
                    k.drain()
            k.drain()
            jup_sse = [k.first_stream("print('x')") * 1e3 for _ in range(max(20, nj // 10))]
        finally:
            k.close()
    sec.row("Python `1+1` over HTTP (keep-alive, plain JSON)", py_rtt, "ms",
            "Jupyter over ZMQ (execute_request → execute_reply)", jup, headline=True)
    sec.row("Python `1+1` over HTTP (keep-alive, plain JSON)", py_rtt, "ms",
            "floor: Python exec loop behind a Unix socket", floor, headline=True)
    sec.row("JavaScript `1+1` over HTTP (keep-alive, plain JSON)", js_rtt, "ms",
            "floor: Python exec loop behind a Unix socket", floor)
    sec.row("first byte: `print('x')` → `stdout` SSE event at the client", sse, "ms",
            "Jupyter: execute_request → first iopub `stream` message", jup_sse, headline=True)
    from common import median as med
    labels = ["sandboxd Python 1+1 (HTTP)", "sandboxd JavaScript 1+1 (HTTP)",
              "sandboxd print → first stdout event (SSE)", "floor: exec loop on Unix socket"]
    vals = [med(py_rtt), med(js_rtt), med(sse), med(floor)]
    if jup:
        labels += ["Jupyter 1+1 (ZMQ)", "Jupyter print → first stream msg"]
        vals += [med(jup), med(jup_sse)]
    bar_chart(sec, "roundtrip.png", "Round trip and first byte (median)", labels, vals, "ms",
              log=True)
    return sec
