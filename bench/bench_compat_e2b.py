"""`1+1` round trip through E2B's POST /execute (NDJSON) vs the native /v1 execute, same run.

    /usr/bin/python3 bench/bench_compat_e2b.py --build build [-n 2000]

Both requests go to the same sandbox and its same default Python context, each on its own
keep-alive connection, and are read until the whole response is in: native
`POST /v1/sandboxes/{sid}/execute {"code":"1+1"}` (plain JSON) and E2B
`POST /execute {"code":"1+1"}` with `E2b-Sandbox-Id` (chunked NDJSON up to end_of_execution).
The two alternate in blocks of 50 so that load on a shared machine hits both alike; the
figures are medians and p99 in ms and the ratio E2B / native (goal: at most 1.2).
`measure(build, n)` returns the figures for bench/bench_compat.py to merge.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from client import Http  # noqa: E402
from common import median, p99, start_daemon  # noqa: E402

SID = "bench-e2b"


def request(method, path, body, headers=()):
    data = json.dumps(body).encode() if body is not None else b""
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % (method,
                                                                                      path)
    for h in headers:
        head += h + "\r\n"
    head += "Content-Length: %d\r\n\r\n" % len(data)
    return head.encode() + data


NATIVE = request("POST", "/v1/sandboxes/%s/execute" % SID, {"code": "1+1"})
E2B = request("POST", "/execute", {"code": "1+1"}, ["E2b-Sandbox-Id: " + SID])


def timed(h, raw, check):
    t = time.perf_counter()
    h.send_raw(raw)
    st, body = h.read_response()
    ms = (time.perf_counter() - t) * 1e3
    if st != 200 or check not in body:
        raise RuntimeError("unexpected answer %s: %r" % (st, body[:300]))
    return ms


def measure(build, n=2000):
    proc, port = start_daemon(os.path.abspath(build), "--log-level", "warn")
    native, e2b = Http(port), Http(port)
    try:
        native.send_raw(request("PUT", "/v1/sandboxes/" + SID, None))
        native.read_response()
        out = {"native": [], "e2b": []}
        for _ in range(50):  # warm up: the default context, both connections
            timed(native, NATIVE, b'"text":"2"')
            timed(e2b, E2B, b'"end_of_execution"')
        while len(out["native"]) < n:
            for _ in range(50):
                out["native"].append(timed(native, NATIVE, b'"text":"2"'))
            for _ in range(50):
                out["e2b"].append(timed(e2b, E2B, b'"end_of_execution"'))
    finally:
        native.close()
        e2b.close()
        proc.terminate()
        proc.wait(20)
    res = {k: {"median_ms": median(v), "p99_ms": p99(v), "n": len(v)} for k, v in out.items()}
    res["ratio"] = res["e2b"]["median_ms"] / res["native"]["median_ms"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("-n", type=int, default=2000, help="round trips per surface")
    a = ap.parse_args()
    r = measure(a.build, a.n)
    for k in ("native", "e2b"):
        print("%-7s median %.3f ms  p99 %.3f ms  (n=%d)" % (k, r[k]["median_ms"], r[k]["p99_ms"],
                                                           r[k]["n"]))
    print("ratio e2b/native %.3f (goal <= 1.2): %s" % (r["ratio"],
                                                      "met" if r["ratio"] <= 1.2 else "NOT met"))


if __name__ == "__main__":
    main()
