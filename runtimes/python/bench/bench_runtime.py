"""Benchmarks of the Python runtime; prints medians and ratios.

Run: /usr/bin/python3 runtimes/python/bench/bench_runtime.py

1. Round trip of ``1+1`` over the channel (execute -> result -> end), the way
   the daemon drives a context: median and p99 in microseconds.
2. A matplotlib figure as a PNG result (``display(fig)``: render, base64,
   JSON, channel write) against matplotlib's own ``savefig`` of the same
   figure with the same options, measured inside the context.
3. Private memory of a context forked from a preloaded parent (the zygote's
   situation): Private_Clean + Private_Dirty and Pss from smaps_rollup after
   ready, after ``import pandas`` and after a pandas + plot cell.
"""

import json
import os
import socket
import statistics
import sys
import time

RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, RUNTIME_DIR)


class Client:
    """Minimal daemon side of the channel on a connected socket."""

    def __init__(self, sock):
        self.file = sock.makefile("rwb", buffering=1 << 16)

    def recv(self):
        return json.loads(self.file.readline())

    def run(self, code):
        self.file.write(json.dumps({"type": "execute", "id": "b", "code": code}).encode() + b"\n")
        self.file.flush()
        messages = []
        while True:
            message = self.recv()
            messages.append(message)
            if message["type"] == "end":
                return messages


def fork_context():
    """Fork a child that serves a socketpair (fd 3); returns (pid, Client)."""
    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        parent.close()
        os.dup2(child.fileno(), 3)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import sandboxd_runtime
        os._exit(sandboxd_runtime.serve(3))
    child.close()
    client = Client(parent)
    assert client.recv()["type"] == "ready"
    return pid, client


def private_kb(pid):
    fields = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1])
    return fields["Private_Clean"] + fields["Private_Dirty"], fields["Pss"], fields["Rss"]


def bench_round_trip(client, n=3000):
    for _ in range(200):
        client.run("1+1")
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        client.run("1+1")
        times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times) * 1e6, times[int(n * 0.99)] * 1e6


FIGURE_CELL = r"""
import io, time, numpy as np, matplotlib.pyplot as plt
fig, ax = plt.subplots()
x = np.linspace(0, 10, 500)
for k in range(5):
    ax.plot(x, np.sin(x + k), label=str(k))
ax.legend(); ax.set_title('bench')
def med(f, n=15):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return sorted(ts)[n // 2]
def save():
    fig.savefig(io.BytesIO(), format='png', bbox_inches='tight')
def result():
    fig.stale = True
    display(fig)
save(); result()
timing = [med(save), med(result)]
plt.close('all')
"""


def bench_figure(client):
    client.run(FIGURE_CELL)
    messages = client.run("timing")
    save, result = messages[-2]["result"]["json"]
    return save * 1e3, result * 1e3


def main():
    import sandboxd_runtime
    t0 = time.perf_counter()
    sandboxd_runtime.preload()
    print("preload: %.0f ms" % ((time.perf_counter() - t0) * 1e3))

    t0 = time.perf_counter()
    pid, client = fork_context()
    print("fork -> ready: %.1f ms" % ((time.perf_counter() - t0) * 1e3))
    private, pss, rss = private_kb(pid)
    print("context after ready: private %.1f MB, Pss %.1f MB, Rss %.1f MB"
          % (private / 1024, pss / 1024, rss / 1024))
    client.run("import pandas as pd")
    private, pss, rss = private_kb(pid)
    print("after `import pandas`: private %.1f MB, Pss %.1f MB" % (private / 1024, pss / 1024))
    client.run("df = pd.DataFrame({'a': range(1000), 'b': [i * 0.5 for i in range(1000)]})\n"
               "df.describe()\nimport matplotlib.pyplot as plt\ndf.plot()")
    private, pss, rss = private_kb(pid)
    print("after a pandas + plot cell: private %.1f MB, Pss %.1f MB" % (private / 1024, pss / 1024))

    median, p99 = bench_round_trip(client)
    print("1+1 round trip: median %.0f us, p99 %.0f us" % (median, p99))

    save, result = bench_figure(client)
    print("figure: savefig %.1f ms, PNG result %.1f ms (+%.1f%%)"
          % (save, result, (result / save - 1) * 100))

    client.file.close()
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
