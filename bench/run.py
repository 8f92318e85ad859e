"""`make bench`: runs every benchmark and writes BENCHMARKS.md (tables + charts in bench/charts/).

    /usr/bin/python3 bench/run.py --build build [--quick] [--only contexts,roundtrip,...]
                                  [--skip-extra] [--out BENCHMARKS.md]

Each figure is measured side by side in the same run with its baseline and quoted as a median
(p99 where latency matters) and as a ratio value / baseline. The machine, the versions and the
exact commands are recorded with the results. Targets are reported as met or not; nothing
asserts a time and a failing benchmark is reported in the file, not raised.
--quick runs fewer iterations (for iterating on the suite; the figures are noisier).
"""
import argparse
import datetime
import importlib
import os
import platform
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ROOT, machine  # noqa: E402
from util import fmt  # noqa: E402

LOAD0 = open("/proc/loadavg").read().strip()
MODULES = ["contexts", "roundtrip", "memory", "density", "throughput", "exec", "results",
           "fairness", "suspend", "workspace", "reattach", "compat", "mcp"]


def sh(cmd, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, **kw)
        return (r.stdout + r.stderr).strip()
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        return "unavailable (%s)" % e


def versions(build):
    from jupyter_baseline import versions as jv
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"])
    dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    mem = open("/proc/meminfo").read().split("\n")[0].split()[1]
    return [
        ("machine", machine()),
        ("memory", "%.1f GiB" % (int(mem) / 1048576)),
        ("os", sh(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])),
        ("kernel", platform.release()),
        ("sandboxd", "%s%s (%s)" % (commit, " + uncommitted changes" if dirty else "",
                                    sh([os.path.join(build, "sandboxd"), "--version"]))),
        ("python (contexts, baselines)", sh(["/usr/bin/python3", "--version"])),
        ("numpy / pandas / matplotlib", sh(["/usr/bin/python3", "-c",
                                            "import numpy, pandas, matplotlib;"
                                            "print(numpy.__version__, pandas.__version__,"
                                            " matplotlib.__version__)"]).replace(" ", " / ")),
        ("node", sh(["node", "--version"])),
        ("jupyter", jv()),
        ("wrk", sh(["wrk", "-v"]).split("\n")[0]),
        ("load average at start / end (the machine is shared: noise)",
         "%s / %s" % (LOAD0, open("/proc/loadavg").read().strip())),
        ("cgroups", "v1 (memory controller mounted)" if os.path.isdir("/sys/fs/cgroup/memory")
         else "v2"),
    ]


def ratio_text(r):
    if r["bvalue"] in (None, 0) or r["value"] is None:
        return "–"
    q = r["value"] / r["bvalue"]
    if r["higher_better"]:
        return "%.2f×" % q
    if q < 1:
        return "%.3g× (%.3g× less)" % (q, 1 / q)
    return "%.3g×" % q


def met_text(r):
    if r["met"] is None:
        return ""
    return "yes" if r["met"] else "**no**"


def p(v, unit):
    return fmt(v, unit) if v is not None else "–"


def section_md(sec, secs_taken):
    out = ["## %s" % sec.title, ""]
    doc = (sec.how or "").strip()
    if doc:
        out += [doc, ""]
    out += ["| figure | sandboxd median | p99 | n | baseline | baseline median | p99 | n "
            "| ratio | target | met |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sec.rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["figure"], p(r["value"], r["unit"]), p(r["p99"], r["unit"]), r["n"] or "",
            r["baseline_name"] or "", p(r["bvalue"], r["unit"]), p(r["bp99"], r["unit"]),
            r["bn"] or "", ratio_text(r), r["target"] or "", met_text(r)))
    out.append("")
    for n in sec.notes:
        out += ["- " + n]
    if sec.notes:
        out.append("")
    for title, path in sec.charts:
        out += ["![%s](%s)" % (title, os.path.relpath(path, ROOT)), ""]
    if sec.commands:
        out += ["Daemon: " + "; ".join("`%s`" % c for c in sec.commands) + "  "]
    out += ["Command: `/usr/bin/python3 bench/run.py --build build --only %s`; took %.0f s." %
            (sec.key, secs_taken), ""]
    for title, text in sec.raw:
        out += ["<details><summary>%s</summary>" % title, "", "```", text.strip(), "```", "",
                "</details>", ""]
    return out


EXTRA = [
    # (title, command, timeout s): the older per-component benchmarks, run as they are.
    ("HTTP core (bench/http_bench.py)",
     ["/usr/bin/python3", "bench/http_bench.py", "--build", "{build}", "--runs", "3",
      "--seconds", "2"], 120),
    ("Zygote fork → ready (build/zygote-bench)", ["{build}/zygote-bench"], 180),
    ("Python runtime (runtimes/python/bench/bench_runtime.py)",
     ["/usr/bin/python3", "runtimes/python/bench/bench_runtime.py"], 180),
    ("Node runtime (runtimes/node/bench.js)", ["node", "runtimes/node/bench.js"], 180),
    ("Files API (bench/files_bench.py)",
     ["/usr/bin/python3", "bench/files_bench.py", "--build", "{build}", "--mb", "256",
      "--runs", "2"], 240),
]


def run_extra(build, quick):
    out = ["## Component benchmarks", "",
           "The per-component benchmarks that live next to the code, run as they are in the same "
           "session (their own baselines and ratios are in their output).", ""]
    for title, cmd, timeout in EXTRA:
        cmd = [c.replace("{build}", build) for c in cmd]
        exe = cmd[0] if cmd[0].startswith("/") else None
        if (exe and not os.path.exists(exe)) or not os.path.exists(
                os.path.join(ROOT, cmd[1]) if len(cmd) > 1 and not exe == cmd[0] else
                cmd[0] if exe else ROOT):
            pass
        script = next((c for c in cmd if c.endswith((".py", ".js"))), None)
        if script and not os.path.exists(os.path.join(ROOT, script)):
            continue
        t = time.time()
        try:
            r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
            text = r.stdout + ("\n[exit %d]\n%s" % (r.returncode, r.stderr[-2000:])
                               if r.returncode else "")
        except subprocess.TimeoutExpired:
            text = "timed out after %d s" % timeout
        except OSError as e:
            text = "could not run: %s" % e
        print("bench: %s: %.0f s" % (title, time.time() - t), file=sys.stderr)
        out += ["### %s" % title, "", "`%s` (%.0f s)" % (" ".join(
            os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd), time.time() - t),
            "", "```", text.strip(), "```", ""]
    return out


def headline(secs):
    rows = []
    for sec in secs:
        for r in sec.rows:
            if r.get("headline"):
                rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-extra", action="store_true")
    ap.add_argument("--density-max", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    opts = ap.parse_args()
    opts.build = os.path.abspath(opts.build)
    # Debian's python3 and its Jupyter first (a pyenv python3 may shadow it on PATH).
    os.environ["PATH"] = "/usr/bin:/bin:" + os.environ.get("PATH", "")
    if os.geteuid() != 0:
        print("bench: needs root (sandboxes use namespaces and cgroups)", file=sys.stderr)
        return 77
    mods = [m for m in (opts.only.split(",") if opts.only else MODULES) if m]
    t_all = time.time()
    secs, failed = [], []
    for m in mods:
        t = time.time()
        print("bench: %s ..." % m, file=sys.stderr)
        try:
            sec = importlib.import_module("bench_" + m).run(opts)
            secs.append((sec, time.time() - t))
        except Exception:  # noqa: BLE001 - reported in the file
            failed.append((m, traceback.format_exc()))
            traceback.print_exc()
        print("bench: %s: %.0f s" % (m, time.time() - t), file=sys.stderr)
    extra = [] if (opts.skip_extra or opts.only) else run_extra(opts.build, opts.quick)
    total = time.time() - t_all

    md = ["# sandboxd benchmarks", "",
          "Generated by `make bench` (`/usr/bin/python3 bench/run.py --build build%s`) on %s UTC; "
          "the whole suite took %.1f minutes. Every figure is measured in the same run as its "
          "baseline; medians, p99 where latency matters, ratio = sandboxd / baseline (below 1 "
          "is better for times and memory). Targets are the ones in docs and the issue; nothing "
          "here asserts them." % (" --quick" if opts.quick else "",
                                  datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
                                  total / 60), ""]
    if opts.quick:
        md += ["> **Quick mode**: few iterations; use the full `make bench` for figures to quote.", ""]
    md += ["## Machine and versions", "", "| | |", "|---|---|"]
    md += ["| %s | %s |" % kv for kv in versions(opts.build)]
    md.append("")
    hl = [(s, r) for s, _ in secs for r in s.rows if r.get("headline")]
    if hl:
        md += ["## Headline figures", "",
               "| figure | sandboxd | baseline | baseline value | ratio | target | met |",
               "|---|---|---|---|---|---|---|"]
        for s, r in hl:
            v = p(r["value"], r["unit"]) + (" (p99 %s)" % p(r["p99"], r["unit"])
                                            if r["p99"] is not None else "")
            b = p(r["bvalue"], r["unit"]) + (" (p99 %s)" % p(r["bp99"], r["unit"])
                                             if r["bp99"] is not None else "")
            md.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                r["figure"], v, r["baseline_name"] or "", b if r["bvalue"] is not None else "–",
                ratio_text(r), r["target"] or "", met_text(r)))
        md.append("")
    for sec, took in secs:
        md += section_md(sec, took)
    for m, tb in failed:
        md += ["## %s: failed" % m, "", "```", tb.strip(), "```", ""]
    md += extra
    with open(opts.out, "w") as f:
        f.write("\n".join(md))
    print("bench: wrote %s in %.1f min" % (opts.out, total / 60), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
