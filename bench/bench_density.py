"""Density: how many live Python contexts one machine holds, each still answering `1+1`.

Contexts are created in batches of 100, one sandbox per batch (daemon flags below: enough
--max-sandboxes, --max-contexts, --memory-mb and --pids that no limit of sandboxd stops the run
before the machine does). Each context runs `1+1` once when created. After each batch, `1+1` is
run on a random sample of the contexts alive so far (each sampled context twice, one keep-alive
connection, sequentially) and the machine's MemAvailable (/proc/meminfo) and the sandboxes' cgroup
memory usage are read. The run stops at --density-max contexts, or when the next batch would leave
less than 2 GiB available (safety margin), or when the sample's p99 exceeds 100 ms, or when the
daemon refuses a context, or when the test's time budget (330 s) runs out. Target: ≥ 1,000 contexts on 24 GiB with `1+1` p99 ≤ 10 ms.
"""
import json
import random
import time

from client import Http
from util import (Section, cgroup_usage, chart_path, daemon, mem_available_kib, plt,
                  sandbox_cgroup, stop)

BATCH = 100
SAFETY_KIB = 2 * 1024 * 1024


def run(opts):
    sec = Section("density", "Density: live Python contexts on one machine", __doc__)
    limit = opts.density_max or (300 if opts.quick else 4000)
    budget_s = 120 if opts.quick else 330
    sample_n = 50 if opts.quick else 150
    proc, port = daemon(opts.build, sec, "--max-sandboxes", "256", "--max-contexts", str(BATCH),
                        "--memory-mb", "16384", "--max-memory-mb", "16384", "--pids", "4096",
                        "--max-connections", "5000")
    h = Http(port)
    ctxs, points, stop_reason = [], [], None
    avail0 = mem_available_kib()
    t_start = time.time()
    try:
        while len(ctxs) < limit:
            sid = "dens-%03d" % (len(ctxs) // BATCH)
            h.json("PUT", "/v1/sandboxes/" + sid)
            created, create_ms = 0, []
            for _ in range(BATCH):
                t = time.perf_counter()
                st, body = h.request("POST", "/v1/sandboxes/%s/contexts" % sid,
                                     {"language": "python"})
                if st != 201:
                    stop_reason = "the daemon refused context %d: %d %s" % (
                        len(ctxs) + 1, st, body[:200].decode(errors="replace"))
                    break
                cid = json.loads(body)["id"]
                st, body = h.request("POST", "/v1/sandboxes/%s/execute" % sid,
                                     {"code": "1+1", "context": cid})
                create_ms.append((time.perf_counter() - t) * 1e3)
                if st != 200 or b'"error":null' not in body:
                    stop_reason = "context %d did not answer: %s" % (len(ctxs) + 1, body[:200])
                    break
                ctxs.append((sid, cid))
                created += 1
            time.sleep(0.5)
            sample = random.sample(ctxs, min(sample_n, len(ctxs)))
            lat = []
            for sid_, cid in sample * 2:
                t = time.perf_counter()
                st, body = h.request("POST", "/v1/sandboxes/%s/execute" % sid_,
                                     {"code": "1+1", "context": cid})
                lat.append((time.perf_counter() - t) * 1e3)
                if st != 200:
                    stop_reason = stop_reason or "a sampled context failed: %s" % body[:200]
            lat.sort()
            avail = mem_available_kib()
            used = 0
            for i in range(len(ctxs) // BATCH + 1):
                cg = sandbox_cgroup(proc.pid, "dens-%03d" % i)
                if cg:
                    used += cgroup_usage(cg) or 0
            pt = {"contexts": len(ctxs), "p50": lat[len(lat) // 2],
                  "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
                  "avail_gib": avail / 1048576, "drop_gib": (avail0 - avail) / 1048576,
                  "cgroups_gib": used / 2 ** 30,
                  "create_ms": sorted(create_ms)[len(create_ms) // 2] if create_ms else None}
            points.append(pt)
            print("density: %(contexts)d contexts, 1+1 p50 %(p50).2f ms p99 %(p99).2f ms, "
                  "available %(avail_gib).1f GiB, create %(create_ms).1f ms" % pt, flush=True)
            if stop_reason:
                break
            per_ctx = (avail0 - avail) / max(1, len(ctxs))
            if avail - 1.5 * per_ctx * BATCH < SAFETY_KIB:
                stop_reason = ("the next batch would leave less than 2 GiB available "
                               "(%.1f GiB now)" % (avail / 1048576))
                break
            if time.time() - t_start > budget_s:
                stop_reason = "this run's time budget for the density test (%d s) ran out" % budget_s
                break
            if pt["p99"] > 100:
                stop_reason = "`1+1` p99 above 100 ms (%.1f ms)" % pt["p99"]
                break
        if not stop_reason:
            stop_reason = "reached this run's cap of %d contexts (--density-max)" % limit
    finally:
        h.close()
        stop(proc)
    took = time.time() - t_start
    last = points[-1]
    at1000 = next((p for p in points if p["contexts"] >= 1000), None)
    sec.row("live Python contexts held, each answering `1+1`", None, "contexts",
            None, value=last["contexts"], target="≥ 1,000 on 24 GiB",
            met=last["contexts"] >= 1000, headline=True)
    ref = at1000 or last
    sec.row("`1+1` latency with %d contexts alive (sampled)" % ref["contexts"], None, "ms",
            "`1+1` with %d contexts alive" % points[0]["contexts"], value=ref["p50"],
            bvalue=points[0]["p50"], target="p99 ≤ 10 ms", met=ref["p99"] <= 10, headline=True)
    sec.rows[-1]["p99"] = ref["p99"]
    sec.rows[-1]["bp99"] = points[0]["p99"]
    sec.row("memory per context at %d contexts (machine MemAvailable drop / contexts)"
            % ref["contexts"], None, "MiB", None, value=ref["drop_gib"] * 1024 / ref["contexts"])
    sec.row("memory per context at %d contexts (sandbox cgroups' usage / contexts)"
            % ref["contexts"], None, "MiB", None,
            value=ref["cgroups_gib"] * 1024 / ref["contexts"])
    sec.note("Stopped: %s. MemAvailable went from %.1f GiB to %.1f GiB; %.0f s for the whole "
             "run." % (stop_reason, avail0 / 1048576, last["avail_gib"], took))
    table = ["| contexts | `1+1` p50 | p99 | create+first run (median) | MemAvailable | "
             "drop since start | sandbox cgroups |", "|---|---|---|---|---|---|---|"]
    for p in points:
        table.append("| %d | %.2f ms | %.2f ms | %.1f ms | %.1f GiB | %.2f GiB | %.2f GiB |" % (
            p["contexts"], p["p50"], p["p99"], p["create_ms"] or 0, p["avail_gib"],
            p["drop_gib"], p["cgroups_gib"]))
    sec.note("Per batch:\n\n" + "\n".join(table))
    p_ = plt()
    fig, (a1, a2) = p_.subplots(1, 2, figsize=(9, 3.4))
    xs = [p["contexts"] for p in points]
    a1.plot(xs, [p["p50"] for p in points], "o-", label="p50")
    a1.plot(xs, [p["p99"] for p in points], "s-", label="p99")
    a1.axhline(10, color="red", ls="--", lw=1, label="target p99 10 ms")
    a1.set_xlabel("live Python contexts")
    a1.set_ylabel("`1+1` round trip, ms")
    a1.set_ylim(bottom=0)
    a1.legend()
    a1.set_title("latency vs contexts")
    a2.plot(xs, [p["drop_gib"] for p in points], "o-", label="machine: MemAvailable drop")
    a2.plot(xs, [p["cgroups_gib"] for p in points], "s-", label="sandbox cgroups usage")
    a2.set_xlabel("live Python contexts")
    a2.set_ylabel("GiB")
    a2.set_ylim(bottom=0)
    a2.legend()
    a2.set_title("memory vs contexts")
    fig.tight_layout()
    path = chart_path("density.png")
    fig.savefig(path)
    p_.close(fig)
    sec.charts.append(("Density: latency and memory vs live contexts", path))
    return sec
