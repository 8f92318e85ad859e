"""`run_code 1+1` through the MCP server (POST /mcp, Streamable HTTP) vs the native /v1
execute, same run.

    /usr/bin/python3 bench/bench_mcp.py --build build [--quick]

One sandbox, one MCP session (initialize, then notifications/initialized, as an SDK client
does) and its default context, warmed up; native: POST /v1/sandboxes/mcp/execute
`{"code":"1+1","context":cid}` on that same context (plain JSON). MCP: `tools/call run_code
{"code":"1+1","sandbox":"mcp"}` with `Accept: application/json, text/event-stream` (the
answer is one SSE message, as the SDK's client gets it) on its own keep-alive connection,
read to the end. The two alternate call by call so load on the shared machine hits both
alike; medians and p99 in ms, and the ratio MCP / native (goal: at most 1.2).

A second pair uses the official SDK's client (bench/bench_mcp_sdk.mjs, the pinned
@modelcontextprotocol/sdk of tests/compat/mcp): `client.callTool(run_code 1+1)` over
StreamableHTTPClientTransport vs native execute through Node's fetch, alternating, same
daemon: what an agent written against the SDK sees.
"""
import json
import os
import subprocess
import time

from client import Http
from util import Section, bar_chart, daemon, stop

SID = "mcp"


def _raw(method, path, body, headers):
    data = json.dumps(body).encode()
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" % (method, path)
    for k, v in headers.items():
        head += "%s: %s\r\n" % (k, v)
    head += "Content-Length: %d\r\n\r\n" % len(data)
    return head.encode() + data


def _session(port):
    """initialize, as a small JSON-RPC client: returns the session id."""
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/mcp", json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}),
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    r = c.getresponse()
    r.read()
    sid = r.getheader("Mcp-Session-Id")
    c.close()
    if r.status != 200 or not sid:
        raise RuntimeError("initialize failed: %s" % r.status)
    return sid


def _sender(port, raw, check):
    h = Http(port)

    def send():
        h.send_raw(raw)
        st, body = h.read_response()
        if st not in (200, 202) or not check(body):
            raise RuntimeError(body[:300])
    send.close = h.close
    return send


def _sdk_samples(opts, n):
    """The SDK pair on a daemon of its own: {"sdk": [...], "native": [...]}, or why not."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.isdir(os.path.join(here, "..", "tests", "compat", "mcp", "node_modules")):
        return "tests/compat/mcp/node_modules is missing (scripts/install-deps)"
    sec = Section("mcp-sdk", "", "")
    proc, port = daemon(opts.build, sec)
    try:
        r = subprocess.run(["node", os.path.join(here, "bench_mcp_sdk.mjs"),
                            "http://127.0.0.1:%d" % port, str(max(n // 4, 50))],
                           capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            return "bench_mcp_sdk.mjs failed: %s" % r.stderr[-500:]
        return json.loads(r.stdout)
    finally:
        stop(proc)


def run(opts):
    sec = Section("mcp", "`run_code 1+1` through MCP (/mcp) vs native", __doc__)
    n = 200 if opts.quick else 2000
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    sends = []
    try:
        h.json("PUT", "/v1/sandboxes/" + SID)
        sid = _session(port)
        hdr = {"Mcp-Session-Id": sid, "Accept": "application/json, text/event-stream"}
        _sender(port, _raw("POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                           hdr), lambda b: True)()
        mcp = _sender(port, _raw("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {"code": "1+1", "sandbox": SID}}}, hdr),
            lambda b: b'"text":"2"' in b)
        mcp()  # the session's default context is made here
        cid = h.json("GET", "/v1/sandboxes/%s/contexts" % SID)["contexts"][0]["id"]
        native = _sender(port, _raw("POST", "/v1/sandboxes/%s/execute" % SID,
                                    {"code": "1+1", "context": cid}, {}),
                         lambda b: b'"text":"2"' in b)
        sends = [("native /v1 execute (JSON)", native), ("MCP tools/call run_code (SSE)", mcp)]
        samples = {label: [] for label, _ in sends}
        for i in range(n + 50):
            for label, send in sends:
                t = time.perf_counter()
                send()
                if i >= 50:  # warm-up
                    samples[label].append((time.perf_counter() - t) * 1e3)
    finally:
        for _, send in sends:
            send.close()
        h.close()
        stop(proc)
    sdk = _sdk_samples(opts, n)
    from common import median as med
    if isinstance(sdk, dict):
        q2 = med(sdk["sdk"]) / med(sdk["native"])
        sec.row("`run_code 1+1` via the official MCP SDK client (Streamable HTTP)", sdk["sdk"], "ms",
                "native /v1 execute via Node fetch", sdk["native"], target="≤ 1.2× native",
                met=q2 <= 1.2)
    else:
        sec.note("SDK round trip not measured: %s" % sdk)
    base_label, mcp_label = sends[0][0], sends[1][0]
    q = med(samples[mcp_label]) / med(samples[base_label])
    sec.row("`run_code 1+1` via %s" % mcp_label, samples[mcp_label], "ms", base_label,
            samples[base_label], target="≤ 1.2× native", met=q <= 1.2, headline=True)
    bar_chart(sec, "mcp.png", "`1+1` round trip: native vs MCP (median)",
              [label for label, _ in sends], [med(samples[label]) for label, _ in sends], "ms")
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
