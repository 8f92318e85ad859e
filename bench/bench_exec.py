"""Exec of `true` and sandbox creation, against a plain fork+exec of /bin/true.

exec: POST /v1/sandboxes/{sid}/exec `{"command":"true"}` on a keep-alive connection until the
JSON reply (the daemon runs the command in the sandbox's namespaces, cgroup, seccomp; the
command line goes through the sandbox's shell when it needs one).
Sandbox: PUT /v1/sandboxes/{id} until its 201, then DELETE (timed separately).
Baselines in the same run, from this Python process: os.posix_spawn of /bin/true + waitpid, and
of `/bin/sh -c true`.
"""
import time

from client import Http
from util import Section, bar_chart, daemon, spawn_time, stop


def run(opts):
    sec = Section("exec", "Exec of `true` and sandbox creation", __doc__)
    n = 50 if opts.quick else 400
    ns = 10 if opts.quick else 60
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        h.json("PUT", "/v1/sandboxes/ex")
        raw = Http.encode("POST", "/v1/sandboxes/ex/exec", {"command": "true"})
        ex = []
        for i in range(n + 20):
            t = time.perf_counter()
            h.send_raw(raw)
            st, body = h.read_response()
            if i >= 20:
                ex.append((time.perf_counter() - t) * 1e3)
            if st != 200 or b'"exitCode":0' not in body:
                raise RuntimeError(body[:300])
        create, delete = [], []
        for i in range(ns):
            t = time.perf_counter()
            h.json("PUT", "/v1/sandboxes/sb-%d" % i, expect=(201,))
            t1 = time.perf_counter()
            h.json("DELETE", "/v1/sandboxes/sb-%d" % i)
            t2 = time.perf_counter()
            create.append((t1 - t) * 1e3)
            delete.append((t2 - t1) * 1e3)
    finally:
        h.close()
        stop(proc)
    for _ in range(20):
        spawn_time(["/bin/true"])
    base = [spawn_time(["/bin/true"]) * 1e3 for _ in range(n)]
    base_sh = [spawn_time(["/bin/sh", "-c", "true"]) * 1e3 for _ in range(n)]
    sec.row("exec `true` (POST /exec, JSON reply)", ex, "ms", "posix_spawn /bin/true + wait",
            base, headline=True)
    sec.row("exec `true` (POST /exec, JSON reply)", ex, "ms", "posix_spawn `/bin/sh -c true`",
            base_sh)
    sec.row("sandbox creation (PUT → 201)", create, "ms", "posix_spawn /bin/true + wait", base,
            headline=True)
    sec.row("sandbox deletion (DELETE → reply)", delete, "ms", "posix_spawn /bin/true + wait",
            base)
    from common import median as med
    bar_chart(sec, "exec.png", "Exec and sandbox creation (median)",
              ["sandboxd exec `true`", "sandboxd sandbox create", "sandboxd sandbox delete",
               "posix_spawn /bin/true", "posix_spawn sh -c true"],
              [med(ex), med(create), med(delete), med(base), med(base_sh)], "ms")
    return sec
