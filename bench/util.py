"""Helpers shared by the `make bench` figure modules (bench_*.py), on top of common.py.

A module's `run(opts)` returns a Section: rows of (figure, sandboxd value, baseline value) measured
side by side in the same run, notes, chart paths and the exact daemon command lines. run.py turns
the sections into BENCHMARKS.md. Nothing here asserts a time: targets are reported as met or not.
"""
import os
import re
import subprocess
import time

from client import Http
from common import ROOT, median, p99, start_daemon

CHARTS = os.path.join(ROOT, "bench", "charts")
PY = "/usr/bin/python3"
# The zygote sets these before importing numpy & co; the baselines get the same so the
# memory and start figures compare like with like.
THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
              "NUMEXPR_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class Section:
    def __init__(self, key, title, how):
        self.key, self.title, self.how = key, title, how
        self.rows, self.notes, self.charts, self.commands, self.raw = [], [], [], [], []

    def row(self, figure, samples, unit, baseline_name=None, baseline=None, target=None,
            met=None, show_p99=True, value=None, bvalue=None, higher_better=False,
            headline=False):
        """One figure against one baseline. samples/baseline: lists (median + p99 taken) or
        None with value/bvalue given directly."""
        r = {"figure": figure, "unit": unit, "baseline_name": baseline_name, "target": target,
             "met": met, "higher_better": higher_better, "headline": headline,
             "value": value if value is not None else median(samples),
             "p99": p99(samples) if (samples and show_p99) else None,
             "n": len(samples) if samples else None,
             "bvalue": None, "bp99": None, "bn": None}
        if baseline is not None or bvalue is not None:
            r["bvalue"] = bvalue if bvalue is not None else median(baseline)
            r["bp99"] = p99(baseline) if (baseline and show_p99) else None
            r["bn"] = len(baseline) if baseline else None
        self.rows.append(r)
        return r

    def note(self, text):
        self.notes.append(text)


def daemon(build, section, *flags):
    """Starts sandboxd with flags (and --log-level warn); records the command line."""
    flags = ("--log-level", "warn") + flags
    proc, port = start_daemon(build, *flags)
    section.commands.append("%s/sandboxd --listen 127.0.0.1:0 --state-dir $TMP %s"
                            % (os.path.relpath(build, ROOT), " ".join(flags)))
    wait_python_ready(port)
    return proc, port


def wait_python_ready(port, timeout=30):
    """The zygote imports numpy & co after the daemon listens: wait until a context can be made."""
    h = Http(port)
    t_end = time.time() + timeout
    h.json("PUT", "/v1/sandboxes/warmup")
    while time.time() < t_end:
        st, body = h.request("POST", "/v1/sandboxes/warmup/contexts", {"language": "python"})
        if st == 201:
            break
        time.sleep(0.05)
    h.json("DELETE", "/v1/sandboxes/warmup")
    h.close()


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def memcg_dir(daemon_pid):
    """The daemon's memory cgroup directory (v1 `memory` controller or v2 unified)."""
    with open("/proc/%d/cgroup" % daemon_pid) as f:
        lines = f.read().splitlines()
    for ln in lines:
        _, ctrl, path = ln.split(":", 2)
        if "memory" in ctrl.split(","):
            return "/sys/fs/cgroup/memory" + path
    for ln in lines:
        if ln.startswith("0::"):
            return "/sys/fs/cgroup" + ln[3:]
    return None


def sandbox_cgroup(daemon_pid, sid):
    """The sandbox's cgroup below the daemon's own (sandboxd-*/<sid>), or None."""
    base = memcg_dir(daemon_pid)
    if not base:
        return None
    for d in os.listdir(base):
        p = os.path.join(base, d, sid)
        if d.startswith("sandboxd-") and os.path.isdir(p):
            return p
    return None


def cgroup_procs(cg):
    out = set()
    for root, _dirs, files in os.walk(cg):
        if "cgroup.procs" in files:
            with open(os.path.join(root, "cgroup.procs")) as f:
                out.update(int(x) for x in f.read().split())
    return out


def cgroup_usage(cg):
    for name in ("memory.usage_in_bytes", "memory.current"):
        p = os.path.join(cg, name)
        if os.path.exists(p):
            with open(p) as f:
                return int(f.read())
    return None


def smaps_rollup(pid):
    """{Rss, Pss, Private_Clean, Private_Dirty, ...} in KiB, or None when the process is gone."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            text = f.read()
    except OSError:
        return None
    return {k: int(v) for k, v in re.findall(r"^(\w+):\s+(\d+) kB", text, re.M)}


def private_kib(pid):
    s = smaps_rollup(pid)
    return None if s is None else s.get("Private_Clean", 0) + s.get("Private_Dirty", 0)


def comm(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def mem_available_kib():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemAvailable:\s+(\d+)", f.read()).group(1))


def spawn_time(argv, env=None):
    """Wall time of posix_spawn + waitpid (seconds)."""
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ)
    os.waitpid(pid, 0)
    return time.perf_counter() - t


def chart_path(name):
    os.makedirs(CHARTS, exist_ok=True)
    return os.path.join(CHARTS, name)


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as p
    p.rcParams.update({"figure.dpi": 80, "font.size": 9})
    return p


def bar_chart(section, name, title, labels, values, unit, log=False, colors=None):
    p = plt()
    fig, ax = p.subplots(figsize=(6.4, 0.45 * len(labels) + 1.2))
    ys = range(len(labels))
    ax.barh(list(ys), values, color=colors or ["#2a7ab9" if "sandboxd" in l else "#bbbbbb"
                                               for l in labels])
    ax.set_yticks(list(ys))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    for y, v in zip(ys, values):
        ax.text(v, y, " %s" % fmt(v, unit), va="center", fontsize=8)
    ax.set_xlabel(unit + (" (log scale)" if log else ""))
    ax.set_title(title)
    ax.margins(x=0.25)
    fig.tight_layout()
    path = chart_path(name)
    fig.savefig(path)
    p.close(fig)
    section.charts.append((title, path))


def fmt(v, unit):
    if v is None:
        return "–"
    if unit == "ms" and v < 1:
        v, unit = v * 1e3, "µs"
    if unit in ("ms", "µs", "MiB", "KiB", "s"):
        if v >= 100:
            return "%.0f %s" % (v, unit)
        if v >= 10:
            return "%.1f %s" % (v, unit)
        return "%.2f %s" % (v, unit)
    if unit in ("/s", "contexts"):
        return "%.0f%s" % (v, unit if unit == "/s" else " " + unit)
    return "%.3g %s" % (v, unit)
