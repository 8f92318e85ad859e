"""HTTP core benchmark: daemon CPU per small JSON request (wrk on loopback) and RSS with
1000 idle keep-alive connections.

    /usr/bin/python3 bench/http_bench.py --build build

CPU per request = the daemon's user+system CPU time during a wrk run / requests served,
over several runs (median). The baseline is the daemon's own unmatched-route 404 path
(parse + route + JSON error, no handler work), measured in the same run.
"""
import argparse
import resource
import socket
import subprocess
import time

from common import cpu_seconds, machine, median, rss_kib, start_daemon


def wrk_run(port, path, seconds, conns):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c%d" % conns, "-d%ds" % seconds,
                          "http://127.0.0.1:%d%s" % (port, path)],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "requests in" in line:
            return int(line.split()[0])
    raise RuntimeError(out)


def cpu_per_request(pid, port, path, runs, seconds, conns):
    samples = []
    for _ in range(runs):
        c0 = cpu_seconds(pid)
        n = wrk_run(port, path, seconds, conns)
        samples.append((cpu_seconds(pid) - c0) / n * 1e6)
    return median(samples), samples


def idle_connections_rss(pid, port, n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 100)), hard))
    before = rss_kib(pid)
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
    for s in socks:
        s.recv(4096)
    time.sleep(0.5)
    after = rss_kib(pid)
    for s in socks:
        s.close()
    return before, after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=3)
    a = ap.parse_args()
    proc, port = start_daemon(a.build, "--log-level", "warn", "--max-connections", "5000")
    subprocess.run(["taskset", "-pc", "0", str(proc.pid)], capture_output=True)
    try:
        health, hs = cpu_per_request(proc.pid, port, "/v1/health", a.runs, a.seconds, 10)
        base, bs = cpu_per_request(proc.pid, port, "/nothing-here", a.runs, a.seconds, 10)
        before, after = idle_connections_rss(proc.pid, port, 1000)
    finally:
        proc.terminate()
        proc.wait()
    print("## HTTP core (%s)" % machine())
    print("| measure | median | samples |")
    print("|---|---|---|")
    print("| daemon CPU per GET /v1/health (JSON) | %.2f µs | %s |"
          % (health, ", ".join("%.2f" % x for x in hs)))
    print("| daemon CPU per unmatched route (404 JSON, baseline) | %.2f µs | %s |"
          % (base, ", ".join("%.2f" % x for x in bs)))
    print("| ratio health / baseline | %.2f | |" % (health / base))
    print("| daemon RSS idle | %.1f MiB | |" % (before / 1024))
    print("| daemon RSS with 1000 idle keep-alive connections | %.1f MiB | |" % (after / 1024))


if __name__ == "__main__":
    main()
