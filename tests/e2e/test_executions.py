"""Executions as resources (API.md "Executions: re-attach, cancel"; src/execution.c,
src/api_execution.c): ids on every execute response, GET while running and once done,
replay with Last-Event-ID and ?after=N, cancel and interrupt, runs that outlive their
client and are interrupted when nobody re-attaches, retention, the log's byte cap, per-run
usage, and SSE heartbeats."""
import json
import threading
import time

import pytest

from sbxtest import Daemon, Sandbox, context, run, sse_events

SSE = {"Accept": "text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def d():
    daemon = Daemon("--kill-grace-ms", "2000")
    yield daemon
    assert daemon.stop() == 0, daemon.logs().decode(errors="replace")[-3000:]


@pytest.fixture(scope="module")
def sb(d):
    s = Sandbox(d, "exe", limits={"memoryMb": 1024})
    yield s
    s.delete()


@pytest.fixture
def ctx(d, sb):
    cid = context(d, sb.id)
    yield cid
    d.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sb.id, cid))


def wait_for(cond, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Stream:
    """A streamed request read event by event."""

    def __init__(self, daemon, method, path, body=None, headers=None):
        self.c = daemon.conn(timeout=120)
        hdrs = dict(SSE)
        hdrs.update(headers or {})
        self.c.request(method, path, json.dumps(body) if body is not None else None, hdrs)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.headers = {k.lower(): v for k, v in self.r.getheaders()}
        self.comments = 0

    def next(self):
        """(event, id, data) of the next event; comment lines are counted."""
        fields = {}
        while True:
            line = self.r.readline()
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line.startswith(":"):
                self.comments += 1
                continue
            if line == "":
                if fields:
                    return (fields.get("event"), int(fields.get("id", 0)),
                            json.loads(fields["data"]))
                continue
            k, _, v = line.partition(": ")
            fields[k] = v

    def rest(self):
        out = []
        while True:
            ev = self.next()
            if ev is None:
                return out
            out.append(ev)

    def close(self):
        self.c.close()


def path(sb, *parts):
    return "/v1/sandboxes/%s/%s" % (sb.id, "/".join(parts))


def state_of(d, sb, cid):
    return d.json("GET", path(sb, "contexts", cid))[1]["state"]


def test_execute_answers_carry_the_execution_id(d, sb, ctx):
    status, hdrs, body = d.request("POST", path(sb, "execute"), {"code": "1 + 1", "context": ctx})
    out = json.loads(body)
    assert status == 200 and hdrs["x-execution-id"] == out["id"]
    assert out["id"].startswith("exe-") and out["state"] == "done"
    s = Stream(d, "POST", path(sb, "execute"), {"code": "print('x')", "context": ctx})
    assert s.status == 200 and s.headers["x-execution-id"].startswith("exe-")
    events = s.rest()
    s.close()
    assert [e[0] for e in events] == ["stdout", "end"]  # print() is one chunk
    status, got = d.json("GET", path(sb, "executions", s.headers["x-execution-id"]))
    assert status == 200 and got["state"] == "done" and got["logs"]["stdout"] == ["x\n"]


def test_get_while_running_then_done(d, sb, ctx):
    s = Stream(d, "POST", path(sb, "execute"),
               {"code": "print('a', flush=True)\nimport time\ntime.sleep(1.5)\n7", "context": ctx})
    eid = s.headers["x-execution-id"]
    assert s.next()[0] == "stdout"
    status, got = d.json("GET", path(sb, "executions", eid))
    assert status == 200 and got["state"] == "running" and got["contextId"] == ctx
    assert got["id"] == eid and got["code"].startswith("print") and got["startedAt"]
    s.rest()
    s.close()
    status, got = d.json("GET", path(sb, "executions", eid))
    assert status == 200 and got["state"] == "done"
    assert got["results"][0]["text"] == "7" and got["error"] is None


def test_replay_from_last_event_id_and_after(d, sb, ctx):
    out = run(d, sb.id, "import sys\nfor i in range(5):\n    sys.stdout.write(str(i))\n"
              "    sys.stdout.flush()\n", context=ctx)
    eid = out["id"]
    status, _, body = d.request("GET", path(sb, "executions", eid, "events"), headers=SSE)
    full = sse_events(body)
    assert status == 200 and full[-1][0] == "end"
    assert [e[1] for e in full] == list(range(1, len(full) + 1))
    assert "".join(e[2]["text"] for e in full if e[0] == "stdout") == "01234"
    _, _, body = d.request("GET", path(sb, "executions", eid, "events"),
                           headers=dict(SSE, **{"Last-Event-ID": "3"}))
    assert sse_events(body) == full[3:]
    _, _, body = d.request("GET", path(sb, "executions", eid, "events") + "?after=2",
                           headers=SSE)
    assert sse_events(body) == full[2:]
    status, err = d.json("GET", path(sb, "executions", eid, "events") + "?after=x",
                         headers=SSE)
    assert status == 400 and err["code"] == "VALIDATION_FAILED"


def test_events_follow_a_running_run_live(d, sb, ctx):
    s = Stream(d, "POST", path(sb, "execute"),
               {"code": "import time\nfor i in range(3):\n    print(i, flush=True)\n"
                "    time.sleep(0.4)\n", "context": ctx})
    eid = s.headers["x-execution-id"]
    first = s.next()
    r = Stream(d, "GET", path(sb, "executions", eid, "events"))
    assert r.status == 200 and r.headers["x-execution-id"] == eid
    replayed = r.rest()
    rest = s.rest()
    s.close()
    r.close()
    assert replayed == [first] + rest and replayed[-1][0] == "end"


def test_other_ids_are_404(d, sb):
    for p in ("executions/exe-0000000000000000", "executions/exe-0000000000000000/events"):
        status, err = d.json("GET", path(sb, p))
        assert status == 404 and err["code"] == "NOT_FOUND", err
    status, err = d.json("DELETE", path(sb, "executions/nope"))
    assert status == 404 and err["code"] == "NOT_FOUND"


def test_queue_cancel_and_interrupt(d, sb, ctx):
    busy = Stream(d, "POST", path(sb, "execute"),
                  {"code": "print('busy', flush=True)\nimport time\ntime.sleep(60)",
                   "context": ctx})
    busy_id = busy.headers["x-execution-id"]
    busy.next()
    answer = {}

    def queued_run():
        answer["out"] = d.json("POST", path(sb, "execute"), {"code": "2 + 2", "context": ctx})

    t = threading.Thread(target=queued_run)
    t.start()
    q = wait_for(lambda: (lambda q: q if q["queued"] else None)(
        d.json("GET", path(sb, "contexts", ctx, "queue"))[1]), "the second run to be queued")
    assert q["running"]["id"] == busy_id and q["running"]["state"] == "running"
    queued = q["queued"][0]
    assert queued["state"] == "queued" and queued["code"] == "2 + 2"
    assert queued["queuedAt"] and queued["startedAt"] is None
    status, got = d.json("DELETE", path(sb, "executions", queued["id"]))
    assert status == 200 and got == {"id": queued["id"], "cancelled": True, "interrupted": False}
    t.join(30)
    status, out = answer["out"]
    assert status == 200 and out["error"]["name"] == "Cancelled" and out["results"] == []
    status, got = d.json("DELETE", path(sb, "executions", busy_id))
    assert got == {"id": busy_id, "cancelled": False, "interrupted": True}
    events = busy.rest()
    busy.close()
    assert [e[0] for e in events][-2:] == ["error", "end"]
    assert events[-2][2]["name"] == "KeyboardInterrupt" and events[-1][2]["statePreserved"]
    status, got = d.json("DELETE", path(sb, "executions", busy_id))
    assert got == {"id": busy_id, "cancelled": False, "interrupted": False}
    assert d.json("GET", path(sb, "contexts", ctx, "queue"))[1] == {"running": None,
                                                                    "queued": []}


def test_a_streamed_run_outlives_its_client(d, sb, ctx):
    s = Stream(d, "POST", path(sb, "execute"),
               {"code": "import time\nfor i in range(4):\n    print('line', i, flush=True)\n"
                "    time.sleep(0.3)\n'done'", "context": ctx})
    eid = s.headers["x-execution-id"]
    first = s.next()
    s.close()                                   # the client goes away
    r = Stream(d, "GET", path(sb, "executions", eid, "events") + "?after=%d" % first[1])
    events = r.rest()
    r.close()
    assert events[-1][0] == "end" and events[0][1] == first[1] + 1
    text = first[2]["text"] + "".join(e[2]["text"] for e in events if e[0] == "stdout")
    assert text == "".join("line %d\n" % i for i in range(4))
    assert [e[2]["text"] for e in events if e[0] == "result"] == ["'done'"]


def test_a_plain_run_outlives_its_client(d, sb, ctx):
    c = d.conn(timeout=60)
    c.request("POST", path(sb, "execute"),
              json.dumps({"code": "import time\ntime.sleep(1)\nprint('after')\n5",
                          "context": ctx}), {"Content-Type": "application/json"})
    q = wait_for(lambda: d.json("GET", path(sb, "contexts", ctx, "queue"))[1]["running"],
                 "the run to start")
    c.close()                                   # the client goes away
    r = Stream(d, "GET", path(sb, "executions", q["id"], "events"))
    events = r.rest()
    r.close()
    assert [e[0] for e in events if e[0] != "stdout"] == ["result", "end"]
    assert "".join(e[2]["text"] for e in events if e[0] == "stdout") == "after\n"
    status, doc = d.json("GET", path(sb, "executions", q["id"]))
    assert doc["state"] == "done" and doc["results"][0]["text"] == "5"


def test_nobody_reattaches_then_the_run_is_interrupted(make_daemon):
    dm = make_daemon("--reattach-grace-ms", "300")
    s = Sandbox(dm, "grace")
    cid = context(dm, s.id)
    st = Stream(dm, "POST", path(s, "execute"),
                {"code": "print('go', flush=True)\nimport time\ntime.sleep(600)", "context": cid})
    eid = st.headers["x-execution-id"]
    st.next()
    st.close()
    wait_for(lambda: state_of(dm, s, cid) == "idle", "the context to be idle again")
    status, doc = dm.json("GET", path(s, "executions", eid))
    assert doc["state"] == "done" and doc["error"]["name"] == "KeyboardInterrupt"
    assert doc["statePreserved"] is True
    # a plain client that goes away too
    c = dm.conn(timeout=60)
    c.request("POST", path(s, "execute"), json.dumps({"code": "import time\ntime.sleep(600)",
                                                      "context": cid}),
              {"Content-Type": "application/json"})
    wait_for(lambda: state_of(dm, s, cid) == "busy", "the context to be busy")
    c.close()
    wait_for(lambda: state_of(dm, s, cid) == "idle", "the context to be idle again")
    s.delete()


def test_retention_expiry(make_daemon):
    dm = make_daemon("--execution-retention-ms", "200")
    s = Sandbox(dm, "retention")
    out = run(dm, s.id, "1")
    wait_for(lambda: dm.json("GET", path(s, "executions", out["id"]))[0] == 404,
             "the execution to be forgotten")
    status, err = dm.json("GET", path(s, "executions", out["id"], "events"))
    assert status == 404 and "execution-retention-ms" in err["message"]
    s.delete()


def test_the_log_byte_cap_is_reported(make_daemon):
    dm = make_daemon("--execution-log-bytes", "1048576")
    s = Sandbox(dm, "logcap")
    code = "import sys\nfor i in range(64):\n    sys.stdout.write('%05d' % i + 'x' * 65531)\n" \
           "    sys.stdout.flush()\n"
    out = run(dm, s.id, code)
    assert out["truncated"] is True and out["truncatedBy"] == "execution-log-bytes"
    assert out["droppedEvents"] > 0 and out["error"] is None
    kept = "".join(out["logs"]["stdout"])
    assert len(kept) < 1048576 and kept.endswith("x" * 1000)   # the newest are kept
    _, _, body = dm.request("GET", path(s, "executions", out["id"], "events"), headers=SSE)
    events = sse_events(body)
    assert events[0][0] == "dropped" and events[0][1] == 0
    assert events[0][2]["firstId"] == 1 and events[0][2]["events"] == out["droppedEvents"]
    assert events[1][1] == events[0][2]["lastId"] + 1 and events[-1][0] == "end"
    s.delete()


def test_usage_is_per_run(d, sb, ctx):
    burn = run(d, sb.id, "import time\nt = time.process_time()\n"
               "while time.process_time() - t < 0.3:\n    pass\n", context=ctx)
    assert burn["usage"]["cpuMs"] >= 100, burn["usage"]
    # 200 MB touched and unmapped again within the run (mmap: given back whatever the
    # allocator keeps, also under ASan)
    big = run(d, sb.id, "import mmap\nm = mmap.mmap(-1, 200 << 20)\n"
              "for i in range(0, 200 << 20, 4096):\n    m[i] = 1\nm.close()", context=ctx)
    assert big["usage"]["peakMemoryBytes"] >= 150e6, big["usage"]
    after = run(d, sb.id, "1", context=ctx)
    # per run: the next run neither keeps the CPU nor the peak of the ones before
    assert after["usage"]["cpuMs"] < burn["usage"]["cpuMs"]
    assert after["usage"]["peakMemoryBytes"] < big["usage"]["peakMemoryBytes"] - 100e6
    events = run(d, sb.id, "1", stream=True, context=ctx)
    assert set(events[-1][2]["usage"]) == {"cpuMs", "peakMemoryBytes"}
    js = run(d, sb.id, "let t = Date.now(); while (Date.now() - t < 300) {}\n"
             "const a = Buffer.alloc(200e6, 1); a.length", language="javascript")
    assert js["usage"]["cpuMs"] >= 100 and js["usage"]["peakMemoryBytes"] >= 150e6, js["usage"]


def test_heartbeat_on_a_silent_stream(make_daemon):
    dm = make_daemon("--sse-heartbeat-ms", "200")
    s = Sandbox(dm, "heartbeat")
    st = Stream(dm, "POST", path(s, "execute"), {"code": "import time\ntime.sleep(1.5)\n3"})
    events = st.rest()
    st.close()
    assert st.comments >= 3 and events[-1][0] == "end"
    st = Stream(dm, "POST", path(s, "exec"), {"command": "sleep 1; echo hi"})
    events = st.rest()
    st.close()
    assert st.comments >= 2 and events[-1][0] == "exit"
    s.delete()
