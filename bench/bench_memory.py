"""Memory added per idle context: Python after `import pandas`, JavaScript after `1+1`, against
a Jupyter kernel after `import pandas`.

For each language a fresh sandbox gets N contexts; the processes they add are the new pids in the
sandbox's cgroup (below the daemon's own: `<daemon memcg>/sandboxd-*/<sid>/cgroup.procs`).
Private memory = Private_Clean + Private_Dirty from /proc/PID/smaps_rollup summed over those
processes, per context (pages shared with the zygote or between Node processes are not counted:
they are paid once per machine, not per context). Also the cgroup's memory usage delta per context
(v1 memory.usage_in_bytes: includes kernel memory and page cache the contexts touched first).
Baseline in the same run: a Jupyter kernel (ipykernel process) after `import pandas`, private
memory and RSS from its smaps_rollup.
"""
import time

from client import Http
from jupyter_baseline import Kernel, available
from util import (Section, bar_chart, cgroup_procs, cgroup_usage, comm, daemon, private_kib,
                  sandbox_cgroup, smaps_rollup, stop)


def per_context(h, pid, lang, code, n):
    sid = "mem-" + lang
    h.json("PUT", "/v1/sandboxes/" + sid)
    # One context first, deleted: the runtime's files are in the page cache and the sandbox's
    # init is running, so the delta is what the N contexts add.
    c = h.json("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": lang})["id"]
    h.json("POST", "/v1/sandboxes/%s/execute" % sid, {"code": code, "context": c})
    h.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sid, c))
    time.sleep(0.5)
    cg = sandbox_cgroup(pid, sid)
    before_p, before_u = cgroup_procs(cg), cgroup_usage(cg)
    for _ in range(n):
        c = h.json("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": lang})["id"]
        r = h.json("POST", "/v1/sandboxes/%s/execute" % sid, {"code": code, "context": c})
        if r.get("error"):
            raise RuntimeError(r["error"])
    time.sleep(1.0)
    new = cgroup_procs(cg) - before_p
    priv = [private_kib(p) or 0 for p in new]
    rss = [(smaps_rollup(p) or {}).get("Rss", 0) for p in new]
    usage = (cgroup_usage(cg) - before_u) / n / 1048576
    kinds = sorted({comm(p).split()[0].rsplit("/", 1)[-1] for p in new if comm(p)})
    h.json("DELETE", "/v1/sandboxes/" + sid)
    return sum(priv) / n / 1024, usage, sum(rss) / n / 1024, len(new), kinds


def run(opts):
    sec = Section("memory", "Memory per idle context", __doc__)
    n = 4 if opts.quick else 20
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        py = per_context(h, proc.pid, "python", "import pandas", n)
        js = per_context(h, proc.pid, "javascript", "1+1", n)
    finally:
        h.close()
        stop(proc)
    jp, jr = None, None
    if available():
        ps, rs = [], []
        for _ in range(1 if opts.quick else 3):
            k = Kernel()
            try:
                k.run("import pandas")
                time.sleep(0.5)
                sm = k.smaps()
                ps.append((sm["Private_Clean"] + sm["Private_Dirty"]) / 1024)
                rs.append(sm["Rss"] / 1024)
            finally:
                k.close()
        jp, jr = sorted(ps)[len(ps) // 2], sorted(rs)[len(rs) // 2]
    sec.row("Python context after `import pandas`: private memory", None, "MiB",
            "Jupyter kernel after `import pandas`: private", value=py[0], bvalue=jp,
            target="≤ 5 MiB", met=py[0] <= 5, headline=True)
    sec.row("Python context after `import pandas`: cgroup usage delta", None, "MiB",
            "Jupyter kernel after `import pandas`: private", value=py[1], bvalue=jp)
    sec.row("Python context after `import pandas`: RSS (shared pages counted in full)", None,
            "MiB", "Jupyter kernel after `import pandas`: RSS", value=py[2], bvalue=jr)
    sec.row("JavaScript context (idle, after `1+1`): private memory", None, "MiB",
            "Jupyter kernel after `import pandas`: private", value=js[0], bvalue=jp,
            headline=True)
    sec.row("JavaScript context: cgroup usage delta", None, "MiB",
            "Jupyter kernel after `import pandas`: private", value=js[1], bvalue=jp)
    sec.note("%d Python contexts added %d processes (%s); %d JavaScript contexts added %d "
             "processes (%s). Values are per context (mean over the N contexts)."
             % (n, py[3], ", ".join(py[4]), n, js[3], ", ".join(js[4])))
    labels = ["sandboxd Python (private)", "sandboxd Python (cgroup delta)",
              "sandboxd JavaScript (private)", "sandboxd JavaScript (cgroup delta)"]
    vals = [py[0], py[1], js[0], js[1]]
    if jp:
        labels += ["Jupyter kernel (private)", "Jupyter kernel (RSS)"]
        vals += [jp, jr]
    bar_chart(sec, "memory.png", "Memory per idle context", labels, vals, "MiB")
    return sec
