"""Context creation: Python (numpy/pandas/matplotlib importable), JavaScript, TypeScript, against
a Jupyter kernel (start → ready → the same imports) and a bare interpreter start.

sandboxd: POST /v1/sandboxes/{sid}/contexts until its 201 ("create"), and until the first run in
the new context answered ("create → first run": for Python that run is
`import numpy, pandas, matplotlib; 1+1`, so the modules are known importable; for JS/TS `1+1`).
Each context is deleted after (not timed). JS/TS creations are spaced 0.2 s apart so a warm
spare, if the daemon keeps one, has the time a real client would give it.
Baselines in the same run: Jupyter kernel start to ready + the same imports; posix_spawn of
`/usr/bin/python3 -c pass`, of `/usr/bin/python3 -c 'import numpy, pandas, matplotlib'`, of
`node -e 0`.
"""
import shutil
import time

from client import Http
from jupyter_baseline import Kernel, available
from util import PY, THREAD_ENV, Section, bar_chart, daemon, spawn_time, stop

IMPORTS = "import numpy, pandas, matplotlib"


def create_samples(h, sid, language, n, first_code, spacing):
    create, first = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        ctx = h.json("POST", "/v1/sandboxes/%s/contexts" % sid, {"language": language})
        t1 = time.perf_counter()
        r = h.json("POST", "/v1/sandboxes/%s/execute" % sid,
                   {"code": first_code, "context": ctx["id"]})
        t2 = time.perf_counter()
        if r.get("error"):
            raise RuntimeError("%s first run failed: %s" % (language, r["error"]))
        create.append((t1 - t0) * 1e3)
        first.append((t2 - t0) * 1e3)
        h.json("DELETE", "/v1/sandboxes/%s/contexts/%s" % (sid, ctx["id"]))
        if spacing:
            time.sleep(spacing)
    return create, first


def run(opts):
    sec = Section("contexts", "Context creation", __doc__)
    n = 8 if opts.quick else 40
    nj = 2 if opts.quick else 6
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        h.json("PUT", "/v1/sandboxes/ctx-bench")
        res = {}
        for lang, code, spacing in (("python", IMPORTS + "; 1+1", 0),
                                    ("javascript", "1+1", 0.2), ("typescript", "1+1", 0.2)):
            create_samples(h, "ctx-bench", lang, 1, code, spacing)  # warm-up
            res[lang] = create_samples(h, "ctx-bench", lang, n, code, spacing)
    finally:
        h.close()
        stop(proc)

    env = dict(__import__("os").environ, **THREAD_ENV)
    bare_py = [spawn_time([PY, "-c", "pass"], env) * 1e3 for _ in range(n)]
    cold_py = [spawn_time([PY, "-c", IMPORTS], env) * 1e3 for _ in range(max(3, n // 4))]
    node = shutil.which("node")
    bare_node = [spawn_time([node, "-e", "0"]) * 1e3 for _ in range(n)]

    jup = []
    if available():
        for _ in range(nj):
            k = Kernel()
            try:
                imp = k.run(IMPORTS)
                jup.append((k.ready_s + imp) * 1e3)
            finally:
                k.close()
    else:
        sec.note("Jupyter not installed: run `scripts/install-deps --bench`.")

    pc, pf = res["python"]
    sec.row("Python context: create → first run (`%s`)" % IMPORTS, pf, "ms",
            "Jupyter kernel: start → ready → same imports", jup or None, headline=True)
    sec.row("Python context: create → first run", pf, "ms",
            "cold `python3 -c '%s'`" % IMPORTS, cold_py)
    sec.row("Python context: create → first run", pf, "ms", "bare `python3 -c pass`", bare_py)
    sec.row("Python context: create (201, ready)", pc, "ms", "bare `python3 -c pass`", bare_py,
            target="≤ 10 ms", met=sorted(pc)[len(pc) // 2] <= 10, headline=True)
    for lang in ("javascript", "typescript"):
        c, f = res[lang]
        sec.row("%s context: create → first `1+1`" % lang.capitalize().replace("script", "Script"),
                f, "ms", "bare `node -e 0`", bare_node, headline=True)
        sec.row("%s context: create (201)" % lang.capitalize().replace("script", "Script"),
                c, "ms", "bare `node -e 0`", bare_node)
    from common import median as med
    labels = ["sandboxd Python context (+imports)", "sandboxd JavaScript context",
              "sandboxd TypeScript context", "bare python3 -c pass", "cold python3 + imports",
              "bare node -e 0"]
    vals = [med(pf), med(res["javascript"][1]), med(res["typescript"][1]), med(bare_py),
            med(cold_py), med(bare_node)]
    if jup:
        labels.append("Jupyter kernel ready + imports")
        vals.append(med(jup))
    bar_chart(sec, "contexts.png", "Context creation to first result (median)", labels, vals,
              "ms", log=True)
    return sec
