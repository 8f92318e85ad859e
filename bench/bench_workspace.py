"""Workspace storage: what creating, limiting and removing a sandbox's /workspace costs, for each
way of keeping a size cap, and what the chosen one costs through the daemon.

Primitives, N times each on the state dir's file system (a temporary dir beside the daemon's), the
median per step (root only):
- tmpfs (the old workspace, lost with the daemon): mkdir + mount -t tmpfs size=1G, then umount +
  rmdir.
- ext4 image (the chosen one, docs/lifecycle.md): a sparse 1 GiB file + mke2fs with the init's
  flags (-m 0, lazy inode tables and journal), attached to a loop device with LOOP_CONFIGURE
  (autoclear, direct I/O) and mounted; removing it is umount + unlink. Its disk use when empty is
  read from st_blocks.
- a directory with ext4/xfs project quotas: only where the file system is mounted with prjquota
  (CI's root file system is not; then reported as unavailable).
Through the daemon: PUT /v1/sandboxes/{id} (diskMb 1024) until its 201, DELETE until its answer,
and the start of a daemon that restores K stored sandboxes (stop with SIGTERM, start again, until
its banner; against a start with none).
"""
import ctypes
import fcntl
import os
import shutil
import subprocess
import tempfile
import time

from client import Http
from common import start_daemon
from util import Section, daemon, stop

LOOP_CTL_GET_FREE = 0x4C82
LOOP_CONFIGURE = 0x4C0A
LO_FLAGS_AUTOCLEAR, LO_FLAGS_DIRECT_IO = 4, 16
MKE2FS = "/usr/sbin/mke2fs" if os.path.exists("/usr/sbin/mke2fs") else "/sbin/mke2fs"
libc = ctypes.CDLL(None, use_errno=True)


def _mount(src, dst, fstype, data=b""):
    if libc.mount(src.encode(), dst.encode(), fstype.encode(), 6, data) != 0:   # nosuid|nodev
        raise OSError(ctypes.get_errno(), "mount %s" % dst)


def _umount(dst):
    if libc.umount2(dst.encode(), 0) != 0:
        raise OSError(ctypes.get_errno(), "umount %s" % dst)


def _loop_attach(img_fd):
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        for _ in range(32):
            n = fcntl.ioctl(ctl, LOOP_CTL_GET_FREE)
            dev = "/dev/loop%d" % n
            fd = os.open(dev, os.O_RDWR)
            # struct loop_config: fd, block_size, loop_info64 (232 bytes), reserved[8]
            cfg = bytearray(304)
            cfg[0:4] = img_fd.to_bytes(4, "little")
            cfg[8 + 52:8 + 56] = (LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO).to_bytes(4, "little")
            try:
                fcntl.ioctl(fd, LOOP_CONFIGURE, bytes(cfg))
                return dev, fd
            except OSError:
                os.close(fd)
        raise RuntimeError("no free loop device")
    finally:
        os.close(ctl)


def _tmpfs(base, i):
    d = os.path.join(base, "t%d" % i)
    t0 = time.perf_counter()
    os.mkdir(d)
    _mount("sandboxd-ws", d, "tmpfs", b"size=1073741824,mode=0700")
    t1 = time.perf_counter()
    _umount(d)
    os.rmdir(d)
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3


def _ext4(base, i):
    d = os.path.join(base, "e%d" % i)
    img = d + ".img"
    t0 = time.perf_counter()
    os.mkdir(d)
    fd = os.open(img, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 1 << 30)
    subprocess.run([MKE2FS, "-q", "-F", "-t", "ext4", "-m", "0", "-E",
                    "lazy_itable_init=1,lazy_journal_init=1,root_owner=1000:1000", img],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.perf_counter()
    dev, lfd = _loop_attach(fd)
    _mount(dev, d, "ext4")
    os.close(lfd)
    os.close(fd)
    t2 = time.perf_counter()
    used = os.stat(img).st_blocks * 512
    _umount(d)
    os.unlink(img)
    os.rmdir(d)
    t3 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, used


def _prjquota(path):
    """The mount options of the file system holding path, and whether project quotas are on."""
    out = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "-T", path],
                         capture_output=True, text=True).stdout.strip()
    return out, "prjquota" in out


def _primitives(sec, n):
    top = os.environ.get("TMPDIR", "/tmp")
    base = tempfile.mkdtemp(prefix="sbx-bench-ws-", dir=top)
    try:
        tm = [_tmpfs(base, i) for i in range(n)]
        ex = [_ext4(base, i) for i in range(n)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    tmount = [t[0] for t in tm]
    sec.row("ext4 image: create (sparse file + mke2fs)", [e[0] for e in ex], "ms",
            "tmpfs: mkdir + mount", tmount, headline=True)
    sec.row("ext4 image: attach loop + mount (also a restore)", [e[1] for e in ex], "ms",
            "tmpfs: mkdir + mount", tmount)
    sec.row("ext4 image: umount + unlink (remove)", [e[2] for e in ex], "ms",
            "tmpfs: umount + rmdir", [t[1] for t in tm])
    sec.row("ext4 image of 1 GiB: disk used when empty", [e[3] / 1048576 for e in ex], "MiB",
            show_p99=False)
    opts, on = _prjquota(top)
    sec.note("Project quotas on the state dir's file system (%s): %s." %
             (opts, "available" if on else "unavailable (not mounted with prjquota; enabling "
              "them needs tune2fs -O project,quota on an unmounted file system)"))


def _restore_start(build, sec, k):
    """Start time of a daemon on a state dir holding k sandboxes, and with none."""
    state = tempfile.mkdtemp(prefix="sbx-bench-ws-state-")
    flags = ("--log-level", "warn", "--state-dir", state)
    try:
        proc, port = start_daemon(build, *flags)
        h = Http(port)
        for i in range(k):
            h.json("PUT", "/v1/sandboxes/r-%d" % i, {"limits": {"diskMb": 256}}, expect=(201,))
        h.close()
        stop(proc)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            proc, port = start_daemon(build, *flags)
            times.append((time.perf_counter() - t) * 1e3)
            stop(proc)
        empty = tempfile.mkdtemp(prefix="sbx-bench-ws-empty-")
        base = []
        for _ in range(3):
            t = time.perf_counter()
            proc, port = start_daemon(build, "--log-level", "warn", "--state-dir", empty)
            base.append((time.perf_counter() - t) * 1e3)
            stop(proc)
        shutil.rmtree(empty, ignore_errors=True)
        sec.row("daemon start restoring %d sandboxes (until it listens)" % k, times, "ms",
                "daemon start, empty state dir", base, show_p99=False)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def run(opts):
    sec = Section("workspace", "Workspace storage: create, limit, remove; restore at start", __doc__)
    n = 10 if opts.quick else 40
    if os.geteuid() != 0:
        sec.note("Not root: the workspace is a tmpfs in the sandbox's user namespace; nothing to "
                 "measure here.")
        return sec
    _primitives(sec, n)
    proc, port = daemon(opts.build, sec)
    h = Http(port)
    try:
        create, delete = [], []
        for i in range(n):
            t = time.perf_counter()
            h.json("PUT", "/v1/sandboxes/ws-%d" % i, {"limits": {"diskMb": 1024}}, expect=(201,))
            t1 = time.perf_counter()
            h.json("DELETE", "/v1/sandboxes/ws-%d" % i)
            create.append((t1 - t) * 1e3)
            delete.append((time.perf_counter() - t1) * 1e3)
        sec.row("PUT sandbox (diskMb 1024, ext4 image) → 201", create, "ms")
        sec.row("DELETE sandbox (umount, image removed)", delete, "ms")
    finally:
        h.close()
        stop(proc)
    _restore_start(opts.build, sec, 10 if opts.quick else 40)
    return sec


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--quick", action="store_true")
    o = ap.parse_args()
    o.build = os.path.abspath(o.build)
    s = run(o)
    for r in s.rows:
        print("%-60s %8.2f %s  (p99 %s, n %s)  baseline %s: %s" % (
            r["figure"], r["value"], r["unit"], r["p99"], r["n"], r["baseline_name"],
            r["bvalue"]))
    for t in s.notes:
        print("note:", t)
