"""CPU time a context spends per execute; prints microseconds per run.

Run: /usr/bin/python3 runtimes/python/bench/bench_cpu.py [N [SETUP_CELL]] [--profile]

Forks a context from a preloaded parent (the zygote's situation), drives it
over a socketpair like the daemon does, and reads the context's utime + stime
from /proc/<pid>/stat before and after N executes of each cell below. The
round-trip median is printed too. With ``--profile`` the context runs
``1+1`` under cProfile instead and prints the top functions by own time.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_runtime import RUNTIME_DIR, Client, fork_context  # noqa: E402,F401

CELLS = [
    "1+1",
    "x = 1",
    "print('hi')",
    "def f(a):\n    return a * 2\nf(21)",
    "[i for i in range(10)]",
]
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of ``pid`` in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def measure(pid, client, code, n):
    """Return (CPU us per run in the context, median round trip us)."""
    for _ in range(200):
        client.run(code)
    times = []
    cpu0 = cpu_seconds(pid)
    for _ in range(n):
        t0 = time.perf_counter()
        client.run(code)
        times.append(time.perf_counter() - t0)
    cpu = cpu_seconds(pid) - cpu0
    times.sort()
    return cpu / n * 1e6, times[n // 2] * 1e6


def profile(client, n):
    """Profile n runs of 1+1 inside the context (between IPython's events)."""
    client.run("import cProfile as _cp, pstats as _ps, io as _io, sys as _sys\n"
               "_pr = _cp.Profile()")
    # Enable in one run, disable in a later one: covers the whole execute path.
    client.run("_pr.enable()")
    for _ in range(n):
        client.run("1+1")
    client.run("_pr.disable()\n_s = _io.StringIO()\n"
               "_ps.Stats(_pr, stream=_s).sort_stats('tottime').print_stats(45)\n"
               "_s2 = _io.StringIO()\n"
               "_ps.Stats(_pr, stream=_s2).sort_stats('cumulative').print_stats(45)")
    for name in ("_s", "_s2"):
        messages = client.run("print(%s.getvalue())" % name)
        print("".join(m.get("text", "") for m in messages if m["type"] == "stream"))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 5000
    import sandboxd_runtime
    sandboxd_runtime.preload()
    pid, client = fork_context()
    if len(args) > 1:  # a setup cell, e.g. to try a setting
        client.run(args[1])
    if "--profile" in sys.argv:
        profile(client, n)
    else:
        for code in CELLS:
            cpu, rtt = measure(pid, client, code, n)
            print("%-40r CPU %6.0f us/run  round trip median %6.0f us"
                  % (code, cpu, rtt))
    client.file.close()
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
