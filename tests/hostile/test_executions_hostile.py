"""Executions under attack (src/execution.c, src/api_execution.c).

- An execution id is looked up in the sandbox of the path only: another sandbox's id is
  404 there, for GET, the events and DELETE (exe_find walks the sandbox's own list).
- A run that floods output while nobody is attached cannot make the daemon hold more than
  --execution-log-bytes for it (the oldest events are dropped and counted) nor more than
  the sandbox's buffer budget; the replay and the document say what was dropped.
- Runs queued by clients that go away at once are bounded by --max-executions: past it a
  new run gets 429 LIMIT_REACHED naming the setting, and nothing accepted is lost.
"""
import json
import time

from sbxtest import Sandbox, context, sse_events

MIB = 1 << 20
SSE = {"Accept": "text/event-stream", "Content-Type": "application/json"}


def wait_for(cond, what, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def usage(d, sid):
    status, info = d.json("GET", "/v1/sandboxes/" + sid)
    assert status == 200, info
    return info["usage"]


def start_stream(d, sid, body):
    """A streamed execute whose client goes away after the headers: (status, headers, body
    of a refusal)."""
    c = d.conn(timeout=60)
    c.request("POST", "/v1/sandboxes/%s/execute" % sid, json.dumps(body), SSE)
    r = c.getresponse()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    data = r.read() if r.status != 200 else b""
    c.close()
    return r.status, hdrs, data


def test_another_sandboxs_execution_is_404(daemon):
    a, b = Sandbox(daemon, "exe-owner"), Sandbox(daemon, "exe-thief")
    try:
        status, out = daemon.json("POST", "/v1/sandboxes/%s/execute" % a.id, {"code": "41 + 1"})
        assert status == 200
        eid = out["id"]
        for method, suffix in (("GET", ""), ("GET", "/events"), ("DELETE", "")):
            status, err = daemon.json(method, "/v1/sandboxes/%s/executions/%s%s" % (b.id, eid,
                                                                                   suffix))
            assert status == 404 and err["code"] == "NOT_FOUND", err
            assert err["message"].startswith("execution '%s' does not exist in sandbox "
                                             "'exe-thief'" % eid)
        status, doc = daemon.json("GET", "/v1/sandboxes/%s/executions/%s" % (a.id, eid))
        assert status == 200 and doc["results"][0]["text"] == "42"
    finally:
        a.delete()
        b.delete()


def test_a_flood_nobody_reads_stays_within_the_log_cap(make_daemon):
    d = make_daemon("--execution-log-bytes", str(MIB), "--reattach-grace-ms", "600000")
    sb = Sandbox(d, "exe-flood")
    try:
        # 64 MiB of output, escaped to 6 times as much: far past the cap and the budget
        code = ("import os\nchunk = b'\\0' * 65536\nfor _ in range(1024):\n"
                "    os.write(1, chunk)\n'over'")
        status, hdrs, _ = start_stream(d, sb.id, {"code": code})
        assert status == 200
        eid = hdrs["x-execution-id"]
        doc = wait_for(lambda: (lambda r: r[1] if r[1].get("state") == "done" else None)(
            d.json("GET", "/v1/sandboxes/%s/executions/%s" % (sb.id, eid))), "the run to end")
        assert doc["error"] is None and doc["results"][0]["text"] == "'over'"
        assert doc["truncated"] is True and doc["truncatedBy"] == "execution-log-bytes"
        assert doc["droppedEvents"] > 0
        u = usage(d, sb.id)
        assert u["bufferPeakBytes"] <= u["bufferLimitBytes"]
        # what is kept: at most the cap, plus the code and the end
        assert u["bufferBytes"] <= MIB + 64 * 1024, u
        status, _, body = d.request("GET", "/v1/sandboxes/%s/executions/%s/events" % (sb.id, eid),
                                    headers=SSE)
        events = sse_events(body)
        assert events[0][0] == "dropped" and events[0][2]["events"] == doc["droppedEvents"]
        assert [e[0] for e in events[-2:]] == ["result", "end"]
        assert sum(len(e[2].get("text", "")) for e in events if e[0] == "stdout") < MIB
    finally:
        sb.delete()


def test_queued_runs_are_bounded_by_max_executions(make_daemon):
    d = make_daemon("--max-executions", "20", "--reattach-grace-ms", "600000")
    sb = Sandbox(d, "exe-queue")
    try:
        ctx = context(d, sb.id)
        accepted, refused = [], []
        for i in range(25):
            code = "import time\ntime.sleep(600)" if i == 0 else "%d" % i
            status, hdrs, body = start_stream(d, sb.id, {"code": code, "context": ctx})
            if status == 200:
                accepted.append(hdrs["x-execution-id"])
            else:
                refused.append((status, json.loads(body)))
        assert len(accepted) == 20 and len(refused) == 5
        for status, err in refused:
            assert status == 429 and err["code"] == "LIMIT_REACHED"
            assert err["message"] == ("sandbox 'exe-queue' has 20 executions queued, running "
                                      "or being read, the limit (--max-executions)")
        status, q = d.json("GET", "/v1/sandboxes/%s/contexts/%s/queue" % (sb.id, ctx))
        assert q["running"]["id"] == accepted[0]
        assert [x["id"] for x in q["queued"]] == accepted[1:]
        # nothing accepted is lost: interrupt the sleeper, every queued run then runs
        status, got = d.json("DELETE", "/v1/sandboxes/%s/executions/%s" % (sb.id, accepted[0]))
        assert got["interrupted"] is True
        for i, eid in enumerate(accepted[1:], 1):
            doc = wait_for(lambda: (lambda r: r[1] if r[1].get("state") == "done" else None)(
                d.json("GET", "/v1/sandboxes/%s/executions/%s" % (sb.id, eid))),
                "run %d to end" % i)
            assert doc["results"][0]["text"] == str(i)
        # finished ones nobody reads make room for new runs, oldest first
        status, hdrs, _ = start_stream(d, sb.id, {"code": "1", "context": ctx})
        assert status == 200
        status, _ = d.json("GET", "/v1/sandboxes/%s/executions/%s" % (sb.id, accepted[0]))
        assert status == 404
    finally:
        sb.delete()
