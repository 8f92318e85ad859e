"""Hostile tests of the disk-backed workspace (docs/lifecycle.md, "Durability").

When root, a sandbox's /workspace is an ext4 file system in an image file in the state dir,
on a loop device, mounted by the sandbox's init (src/init/init_workspace.c). Sandbox code
tries to learn where the image lives, to grow past diskMb (write, fallocate, the ext4 resize
ioctl, a remount), and to reach the loop devices. Each attempt has an exact outcome: the
mount shows no host path, ENOSPC at the cap, EPERM for the ioctl and the remount, and no
loop device node in the sandbox's /dev.
"""
import json
import os

import pytest

from sbxtest import Sandbox

ROOT = os.geteuid() == 0
PROBE = r'''
import ctypes, errno, fcntl, json, os, struct
EXT4_IOC_RESIZE_FS = 0x40086610
MS_REMOUNT = 32
out = {}
fd = os.open("/workspace", os.O_RDONLY)
try:
    fcntl.ioctl(fd, EXT4_IOC_RESIZE_FS, struct.pack("Q", 1 << 22))
    out["resize"] = "ok"
except OSError as e:
    out["resize"] = errno.errorcode[e.errno]
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mount(None, b"/workspace", None, MS_REMOUNT, b"")
out["remount"] = "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def box(daemon):
    s = Sandbox(daemon, "ws-hostile", limits={"diskMb": 8})
    yield s
    s.delete()


def test_workspace_mount_shows_no_host_path(box, daemon):
    if not ROOT:
        return   # rootless: a tmpfs of the sandbox's own (test_nonroot.py)
    info = box.sh("cat /proc/self/mountinfo")
    line = [ln for ln in info.splitlines() if ln.split()[4] == "/workspace"]
    assert len(line) == 1, info
    fields = line[0].split()
    assert fields[3] == "/" and fields[-3] == "ext4" and fields[-2].startswith("/dev/loop"), line
    assert daemon.state not in info and "workspace.img" not in info, info


def test_workspace_cannot_grow_past_disk_mb(box):
    if not ROOT:
        return
    out = box.exec("fallocate -l 64M /workspace/big")
    assert out["exitCode"] == 1 and "No space left on device" in out["stderr"], out
    out = box.exec("head -c 16000000 /dev/zero > /workspace/big")
    assert out["exitCode"] == 1 and "No space left on device" in out["stderr"], out
    box.sh("rm -f /workspace/big")
    box.sh("cat > /tmp/probe.py", stdin=PROBE)
    assert json.loads(box.sh("python3 /tmp/probe.py")) == {"resize": "EPERM", "remount": "EPERM"}
    assert int(box.sh("df -k --output=size /workspace | tail -1")) <= 8 * 1024


def test_no_loop_devices_in_the_sandbox(box):
    out = box.sh("ls /dev | grep -c '^loop' || true")
    assert out == "0\n", out
