"""Rich results: a matplotlib plot and a 100×10 DataFrame as results, against the library's own
rendering time measured inside the same context in the same run.

sandboxd: POST /execute (keep-alive, plain JSON) of
  plot: `fig, ax = plt.subplots(); ax.plot(range(100)); fig` → a result with `png`;
  DataFrame: `df` (100×10 of floats, made once) → a result with `text`, `html` (and `data`);
timed at the client, whole response read.
Baselines, inside the context: the same figure's `fig.savefig(BytesIO(), format="png")` (+
`plt.close`), and `df._repr_html_()` (+ `repr(df)`), each timed with time.perf_counter in a loop
in one execution; the samples come back as the result.
"""
import json
import time

from client import Http
from util import Section, bar_chart, daemon, stop

SETUP = """import io, time, statistics
import numpy as np, pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame(np.random.rand(100, 10), columns=list("abcdefghij"))
"""
PLOT = "fig, ax = plt.subplots(); ax.plot(range(100)); fig"
FRAME = "df"
INSIDE = """def _t(f, n):
    xs = []
    for _ in range(n):
        t = time.perf_counter(); f(); xs.append((time.perf_counter() - t) * 1e3)
    return xs
def _plot():
    fig, ax = plt.subplots(); ax.plot(range(100)); fig.savefig(io.BytesIO(), format="png"); plt.close(fig)
def _frame():
    df._repr_html_(); repr(df)
[_t(_plot, %d), _t(_frame, %d)]
"""


def run(opts):
    sec = Section("results", "Rich results: plot and DataFrame", __doc__)
    n = 10 if opts.quick else 60
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        h.json("PUT", "/v1/sandboxes/res")
        cid = h.json("POST", "/v1/sandboxes/res/contexts", {"language": "python"})["id"]

        def ex(code):
            t = time.perf_counter()
            r = h.json("POST", "/v1/sandboxes/res/execute", {"code": code, "context": cid})
            dt = (time.perf_counter() - t) * 1e3
            if r.get("error"):
                raise RuntimeError(r["error"])
            return dt, r
        ex(SETUP)
        _, r = ex(PLOT)
        kinds_plot = sorted(k for k in r["results"][0] if k != "isMainResult")
        _, r = ex(FRAME)
        kinds_frame = sorted(k for k in r["results"][0] if k != "isMainResult")
        png_kib = None
        plot, frame = [], []
        for _ in range(n):
            dt, r = ex(PLOT)
            plot.append(dt)
            png_kib = len(r["results"][0].get("png", "")) * 3 / 4 / 1024
            ex("plt.close('all')")
            frame.append(ex(FRAME)[0])
        _, r = ex(INSIDE % (n, n))
        base_plot, base_frame = json.loads(r["results"][0]["text"].replace("'", '"'))
    finally:
        h.close()
        stop(proc)
    sec.row("plot as a result (`fig` → png), round trip", plot, "ms",
            "in-context `fig.savefig(png)`", base_plot, headline=True)
    sec.row("100×10 DataFrame as a result (`df`), round trip", frame, "ms",
            "in-context `df._repr_html_()` + `repr(df)`", base_frame, headline=True)
    sec.note("Plot result fields: %s (PNG %.1f KiB); DataFrame result fields: %s."
             % (", ".join(kinds_plot), png_kib or 0, ", ".join(kinds_frame)))
    from common import median as med
    bar_chart(sec, "results.png", "Rich results vs the library's own rendering (median)",
              ["sandboxd plot result", "savefig png in-context", "sandboxd DataFrame result",
               "_repr_html_ + repr in-context"],
              [med(plot), med(base_plot), med(frame), med(base_frame)], "ms",
              colors=["#2a7ab9", "#bbbbbb", "#2a7ab9", "#bbbbbb"])
    return sec
