"""Output in whole lines: how many lines come out made of two writers, and what whole
lines cost print() throughput.

Usage: /usr/bin/python3 bench/output_lines.py [--build DIR] [--rounds N]

Each round runs, in one Python context, 3 threads printing, 2 threads os.write()-ing to
fd 1, 2 shell loops echoing, and one block-buffered child (seq, 4096-byte writes cut
anywhere in a line) at once, and counts the stdout lines that are not one of the known
whole lines. The seq child shares fd 1 with the os.write threads and the shell loops, so
the kernel itself may mix its pieces with theirs (docs/api.md "Output ordering"): broken
lines without Python-level output in them are counted apart ("pipe-level"); the others
("mixed": a Python line broken, or holding a piece of fd-level output) are what the
daemon and the runtime answer for. Then print() throughput: a cell printing 200 000 short lines, median
of 5 runs. Run it against two builds (SANDBOXD_BUILD / --build) to compare.
"""
import argparse
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "support"))

CODE = r"""
import os, subprocess, threading
N = %(n)d
def py(t):
    for i in range(N):
        print('py%%d-%%d-' %% (t, i) + 'p' * (i %% 61))
def fd(t):
    for i in range(N):
        os.write(1, ('fd%%d-%%d-' %% (t, i) + 'f' * (i %% 53) + '\n').encode())
sh = 'i=0; while [ $i -lt %%d ]; do echo sh%%d-$i-ssss; i=$((i+1)); done'
procs = [subprocess.Popen(['sh', '-c', sh %% (N, k)]) for k in range(2)]
procs.append(subprocess.Popen(['seq', '-f', 'seq-%%g-qqqqqqqqqqqqqqqqqqqq', '1', str(8 * N)]))
ts = [threading.Thread(target=py, args=(t,)) for t in range(3)]
ts += [threading.Thread(target=fd, args=(t,)) for t in range(2)]
[t.start() for t in ts]
[t.join() for t in ts]
[p.wait() for p in procs]
"""

WHOLE = re.compile(r"py\d-\d+-p*|fd\d-\d+-f*|sh\d-\d+-ssss|seq-\d+-q{20}")


def pipe_level(line):
    """A broken line of the kernel's making: no Python-level output in it (every fd-level
    writer but seq writes whole lines atomically, so it holds a piece of seq's blocks:
    "seq-12-qq", "s" + an echoed line, or seq's lone newline)."""
    return "py" not in line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("SANDBOXD_BUILD"))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--lines", type=int, default=2000)
    opts = ap.parse_args()
    if opts.build:
        os.environ["SANDBOXD_BUILD"] = opts.build
    import sbxtest  # reads SANDBOXD_BUILD
    d = sbxtest.Daemon()
    try:
        sbxtest.Sandbox(d, "lines-bench")
        total = mixed = pipe = 0
        for _ in range(opts.rounds):
            out = sbxtest.run(d, "lines-bench", CODE % {"n": opts.lines}, timeoutMs=600000)
            assert out["error"] is None, out["error"]
            for line in "".join(out["logs"]["stdout"]).split("\n")[:-1]:
                total += 1
                if WHOLE.fullmatch(line):
                    continue
                if pipe_level(line):
                    pipe += 1
                else:
                    mixed += 1
        print("build %s: %d lines, %d mixed, %d pipe-level (pieces of seq's blocks)"
              % (sbxtest.BUILD, total, mixed, pipe))
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            out = sbxtest.run(d, "lines-bench", "for i in range(200000):\n    print(i)",
                              timeoutMs=600000)
            times.append(time.perf_counter() - t0)
            assert out["error"] is None
        med = statistics.median(times)
        print("print() throughput: 200000 lines in %.2f s median (%.0f lines/s)"
              % (med, 200000 / med))
    finally:
        d.stop()


if __name__ == "__main__":
    main()
