"""Helpers shared by the benchmarks: start a daemon, time things, summarise samples.

Benchmarks report medians (and p99 where latency matters) and ratios against a baseline
measured in the same run, because the machines are shared and noisy. Nothing here
asserts a time: a benchmark prints what it measured.
"""
import os
import re
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_daemon(build, *flags):
    state = tempfile.mkdtemp(prefix="sbx-bench-")
    log = open(os.path.join(state, "log"), "w+b")
    p = subprocess.Popen([os.path.join(build, "sandboxd"), "--listen", "127.0.0.1:0",
                          "--state-dir", os.path.join(state, "s"), *flags],
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(1000):
        with open(log.name, "rb") as f:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
        time.sleep(0.01)
    raise RuntimeError("daemon did not start")


def cpu_seconds(pid):
    """User + system CPU time of a process, from /proc (clock ticks)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def median(xs):
    return statistics.median(xs)


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def machine():
    import platform
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        m = re.search(r"model name\s*:\s*(.*)", f.read())
        cpu = m.group(1) if m else cpu
    return "%s, %d cores, kernel %s" % (cpu, os.cpu_count(), platform.release())
