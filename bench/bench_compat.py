"""`1+1` through each compatibility surface against the native route, in the same run.

One daemon, one sandbox (`cmp`), one Python context that every surface runs in, one keep-alive
connection per surface. Each round sends `1+1` once through every surface in turn (so load on
the shared machine hits all of them alike) and times it from the send until the whole response
is read. Native: POST /v1/sandboxes/cmp/execute `{"code":"1+1","context":cid}` (plain JSON),
and the same with `Accept: text/event-stream` (the native stream). Cloudflare: POST
/api/execute/code `{"context_id":cid,"code":"1+1"}` with `X-Sandbox-Id: cmp`, an SSE stream
read to its end, as @cloudflare/sandbox's CodeInterpreter does. Target: each surface ≤ 1.2×
the native plain round trip (median).

A surface is one function `(port, cid) -> send()` returning a callable that runs `1+1` once and
checks the answer; add another surface by adding its function to SURFACES.
"""
import json
import time

from client import Http
from util import Section, bar_chart, daemon, stop

SID = "cmp"


def _raw(method, path, body, headers):
    data = json.dumps(body).encode()
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % (method, path)
    for k, v in headers.items():
        head += "%s: %s\r\n" % (k, v)
    head += "Content-Length: %d\r\n\r\n" % len(data)
    return head.encode() + data


def _sender(port, raw, check):
    h = Http(port)

    def send():
        h.send_raw(raw)
        st, body = h.read_response()
        if st != 200 or not check(body):
            raise RuntimeError(body[:300])
    send.close = h.close
    return send


def surface_native(port, cid):
    return _sender(port, _raw("POST", "/v1/sandboxes/%s/execute" % SID,
                              {"code": "1+1", "context": cid}, {}),
                   lambda b: b'"text":"2"' in b)


def surface_native_sse(port, cid):
    return _sender(port, _raw("POST", "/v1/sandboxes/%s/execute" % SID,
                              {"code": "1+1", "context": cid}, {"Accept": "text/event-stream"}),
                   lambda b: b"event: end" in b)


def surface_cloudflare(port, cid):
    return _sender(port, _raw("POST", "/api/execute/code", {"context_id": cid, "code": "1+1"},
                              {"X-Sandbox-Id": SID}),
                   lambda b: b'"text":"2"' in b and b"execution_complete" in b)


# (label, function, is the baseline). The E2B surface adds its row here.
SURFACES = [
    ("native /v1 execute (JSON)", surface_native, True),
    ("native /v1 execute (SSE)", surface_native_sse, False),
    ("Cloudflare /api/execute/code (SSE)", surface_cloudflare, False),
]


def run(opts):
    sec = Section("compat", "`1+1` through the compatibility surfaces vs native", __doc__)
    n = 200 if opts.quick else 2000
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    sends = []
    try:
        h.json("PUT", "/v1/sandboxes/" + SID)
        cid = h.json("POST", "/v1/sandboxes/%s/contexts" % SID, {"language": "python"})["id"]
        sends = [(label, fn(port, cid), base) for label, fn, base in SURFACES]
        samples = {label: [] for label, _, _ in sends}
        for i in range(n + 50):
            for label, send, _ in sends:
                t = time.perf_counter()
                send()
                if i >= 50:  # warm-up
                    samples[label].append((time.perf_counter() - t) * 1e3)
    finally:
        for _, send, _ in sends:
            send.close()
        h.close()
        stop(proc)
    from common import median as med
    base_label = next(label for label, _, base in SURFACES if base)
    base = samples[base_label]
    for label, _, is_base in SURFACES:
        if is_base:
            continue
        q = med(samples[label]) / med(base)
        sec.row("`1+1` via %s" % label, samples[label], "ms", base_label, base,
                target="≤ 1.2× native", met=q <= 1.2 if "native" not in label else None,
                headline="native" not in label)
    bar_chart(sec, "compat.png", "`1+1` round trip by surface (median)",
              [label for label, _, _ in SURFACES], [med(samples[label]) for label, _, _ in SURFACES],
              "ms")
    return sec


if __name__ == "__main__":
    import argparse
    import os
    from common import ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    o = ap.parse_args()
    s = run(o)
    for r in s.rows:
        print("%-50s median %.3f ms (p99 %.3f)  vs %s %.3f ms  ratio %.3f" % (
            r["figure"], r["value"], r["p99"], r["baseline_name"], r["bvalue"],
            r["value"] / r["bvalue"]))
