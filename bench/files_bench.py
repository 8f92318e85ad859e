"""Files API throughput: upload and download of one large file over loopback, with the
daemon's peak RSS, against `cat FILE > /dev/null` of the same file in the same run.

    /usr/bin/python3 bench/files_bench.py [--build build] [--mb 1024] [--runs 3]

curl moves the bytes (the client should not be the bottleneck). The sandbox's workspace
is a tmpfs when the daemon runs as root, so the file lives in RAM on both sides: the
numbers measure the daemon's path (HTTP parsing, copies, the threadpool), not a disk.
Peak RSS is VmHWM of the daemon process; it should stay flat whatever the file's size,
because neither direction holds the file in memory. Prints medians; asserts nothing.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, machine, median, start_daemon  # noqa: E402


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


def request(port, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 method=method)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    size = a.mb << 20
    src_dir = tempfile.mkdtemp(prefix="sbx-fbench-")
    src = os.path.join(src_dir, "big.bin")
    with open(src, "wb") as f:   # incompressible-looking but cheap: a random MiB repeated
        block = os.urandom(1 << 20)
        for _ in range(a.mb):
            f.write(block)
    proc, port = start_daemon(a.build, "--max-file-bytes", str(size * 2))
    try:
        request(port, "PUT", "/v1/sandboxes/fbench",
                b'{"limits":{"diskMb":%d}}' % (a.mb * 2 + 64))
        base_hwm = hwm_kib(proc.pid)
        url = "http://127.0.0.1:%d/v1/sandboxes/fbench/files/big.bin" % port
        up, down, cat, dd = [], [], [], []
        for _ in range(a.runs):
            cat.append(timed(["sh", "-c", "cat '%s' > /dev/null" % src]))
            dd.append(timed(["dd", "if=" + src, "of=/dev/null", "bs=1M", "status=none"]))
            up.append(timed(["curl", "-sS", "-f", "-o", "/dev/null", "-T", src,
                             "-H", "Expect:", url]))
            down.append(timed(["curl", "-sS", "-f", "-o", "/dev/null", url]))
        got = request(port, "GET", "/v1/sandboxes/fbench/files")
        assert b'"big.bin"' in got
        peak = hwm_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
        os.unlink(src)
        os.rmdir(src_dir)

    def mbps(t):
        return size / t / 1e6

    print("machine: %s" % machine())
    print("file: %d MiB, %d runs, medians" % (a.mb, a.runs))
    # GNU cat may not copy at all into /dev/null (it can splice); dd really reads every
    # byte into memory, so it is the fairer "local read" baseline
    print("  cat > /dev/null : %8.0f MB/s" % mbps(median(cat)))
    print("  dd bs=1M        : %8.0f MB/s" % mbps(median(dd)))
    print("  upload (PUT)    : %8.0f MB/s  (%.2fx dd, %.3fx cat)"
          % (mbps(median(up)), median(dd) / median(up), median(cat) / median(up)))
    print("  download (GET)  : %8.0f MB/s  (%.2fx dd, %.3fx cat)"
          % (mbps(median(down)), median(dd) / median(down), median(cat) / median(down)))
    print("  daemon peak RSS : %d KiB before, %d KiB after (+%d KiB for %d MiB moved)"
          % (base_hwm, peak, peak - base_hwm, a.mb * a.runs * 2))


if __name__ == "__main__":
    main()
