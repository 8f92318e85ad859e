"""Throughput: trivial executions per second across 100 Python contexts.

100 contexts in 4 sandboxes (25 each, `--cpus 2` so a sandbox's CPU quota is not the limit),
driven by wrk on loopback with a Lua script (bench/wrk_execute.lua) that POSTs
`{"code":"1+1","context":cid}` to /v1/sandboxes/{sid}/execute, each wrk thread rotating over
its own half of the contexts; 100 keep-alive connections, so about one request in flight per
context. wrk runs on the same 2 cores as the daemon and the contexts (it is part of the cost).
Also the daemon's own CPU per execution (user+system from /proc during the run). The baseline is
the floor run as fast as one client can: the exec loop behind a Unix socket, sequential.
Target: ≥ 5,000 executions/s on 2 cores.
"""
import os
import resource
import subprocess
import tempfile

from client import Http
from common import cpu_seconds
from jupyter_baseline import Floor
from util import ROOT, Section, cgroup_procs, daemon, sandbox_cgroup, stop

LUA = os.path.join(ROOT, "bench", "wrk_execute.lua")


def wrk(port, ctx_file, seconds, conns):
    threads = min(2, conns)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % seconds,
                        "--latency", "-s", LUA, "http://127.0.0.1:%d" % port, "--", ctx_file, str(threads)],
                       capture_output=True, text=True, check=True)
    out = r.stdout
    reqs = float(next(l.split()[1] for l in out.splitlines() if l.startswith("Requests/sec")))
    total = int(next(l.split()[0] for l in out.splitlines() if "requests in" in l))
    bad = next((int(l.split()[-1]) for l in out.splitlines() if "Non-2xx" in l), 0)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrk_cpu = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) / total * 1e6
    return reqs, total, bad, out, wrk_cpu


def run(opts):
    sec = Section("throughput", "Throughput across 100 contexts", __doc__)
    seconds = 4 if opts.quick else 10
    proc, port = daemon(opts.build, sec, "--cpus", "2", "--max-contexts", "100",
                        "--max-connections", "5000")
    h = Http(port)
    try:
        lines, pids = [], set()
        for s in range(4):
            sid = "tp-%d" % s
            h.json("PUT", "/v1/sandboxes/" + sid)
            for _ in range(25):
                cid = h.json("POST", "/v1/sandboxes/%s/contexts" % sid,
                             {"language": "python"})["id"]
                h.json("POST", "/v1/sandboxes/%s/execute" % sid, {"code": "1+1", "context": cid})
                lines.append("%s %s" % (sid, cid))
            pids |= cgroup_procs(sandbox_cgroup(proc.pid, sid))
        h.close()
        fd, ctx_file = tempfile.mkstemp(prefix="sbx-wrk-")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(lines) + "\n")
        wrk(port, ctx_file, 2, 100)  # warm-up
        def ctx_cpu():
            t = 0.0
            for p in pids:
                try:
                    t += cpu_seconds(p)
                except OSError:
                    pass
            return t

        def measured(conns, secs):
            c0, x0 = cpu_seconds(proc.pid), ctx_cpu()
            rps, total, bad, out, wcpu = wrk(port, ctx_file, secs, conns)
            return (rps, (cpu_seconds(proc.pid) - c0) / total * 1e6,
                    (ctx_cpu() - x0) / total * 1e6, bad, out, wcpu)
        runs = [measured(100, seconds) for _ in range(1 if opts.quick else 3)]
        sweep = [(c, measured(c, 3 if opts.quick else 5)) for c in (1, 2, 10, 100)]
        os.unlink(ctx_file)
    finally:
        h.close()
        stop(proc)
    f = Floor()
    try:
        for _ in range(500):
            f.run()
        import time
        n, t = 0, time.perf_counter()
        while time.perf_counter() - t < 2:
            f.run()
            n += 1
        floor_rps = n / (time.perf_counter() - t)
    finally:
        f.close()
    rps = sorted(r[0] for r in runs)
    med = rps[len(rps) // 2]
    sec.row("`1+1` executions/s, 100 contexts, 100 keep-alive connections (wrk)", rps, "/s",
            "floor: one client, exec loop on a Unix socket", None, bvalue=floor_rps,
            target="≥ 5,000/s on 2 cores", met=med >= 5000, higher_better=True, show_p99=False,
            headline=True)
    cpu = sorted(r[1] for r in runs)
    sec.row("daemon CPU per execution (user+system)", cpu, "µs", None, show_p99=False)
    ccpu = sorted(r[2] for r in runs)
    sec.row("context processes' CPU per execution (user+system, summed over the 100)", ccpu,
            "µs", None, show_p99=False)
    sec.note("Non-2xx responses during the measured runs: %s." % ", ".join(str(r[3]) for r in runs))
    wcpu = sorted(r[5] for r in runs)
    sec.row("wrk's own CPU per execution (load generator, same 2 cores)", wcpu, "µs", None,
            show_p99=False)
    table = ["| connections | executions/s | wrk p50 latency | daemon CPU/exec | contexts CPU/exec "
             "| wrk CPU/exec |", "|---|---|---|---|---|---|"]
    for c, r in sweep:
        p50 = next((l.split()[1] for l in r[4].splitlines() if l.strip().startswith("50%")), "?")
        table.append("| %d | %.0f | %s | %.0f µs | %.0f µs | %.0f µs |"
                     % (c, r[0], p50, r[1], r[2], r[5]))
    sec.note("Concurrency sweep (same 100 contexts; a short run per row). CPU per execution on "
             "2 cores bounds throughput at about 2 s / (daemon + contexts + wrk CPU per "
             "execution):\n\n" + "\n".join(table))
    mid = sorted(runs)[len(runs) // 2]
    sec.raw.append(("wrk output (median run)", mid[4]))
    return sec
