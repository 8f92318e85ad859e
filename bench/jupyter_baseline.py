"""The Jupyter baselines: a real ipykernel driven by jupyter_client over ZMQ, and the floor
(a Python exec loop behind a Unix socket).

Jupyter: KernelManager.start_kernel + BlockingKernelClient.wait_for_ready (Debian's
python3-ipykernel / python3-jupyter-client, installed by `scripts/install-deps --bench`), run by
/usr/bin/python3 with the same thread-count environment as the zygote. Each call of `rtt` is one
execute_request on the shell channel until its execute_reply; iopub is drained outside the timed
part. The floor server reads a line, eval()s it (exec() when it is a statement) and writes the
repr back: what any protocol has to cost at least with one Python process on the other side.
"""
import os
import queue
import socket
import subprocess
import sys
import tempfile
import time

from util import PY, THREAD_ENV, private_kib, smaps_rollup


def available():
    r = subprocess.run([PY, "-c", "import jupyter_client, ipykernel"], capture_output=True)
    return r.returncode == 0


def versions():
    r = subprocess.run([PY, "-c", "import jupyter_client, ipykernel, zmq;"
                        "print(jupyter_client.__version__, ipykernel.__version__, zmq.zmq_version())"],
                       capture_output=True, text=True)
    if r.returncode:
        return "not installed"
    jc, ik, z = r.stdout.split()
    return "jupyter_client %s, ipykernel %s, libzmq %s" % (jc, ik, z)


class Kernel:
    """One started and ready Jupyter kernel."""

    def __init__(self):
        from jupyter_client import KernelManager
        env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1", **THREAD_ENV)
        t0 = time.perf_counter()
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.ready_s = time.perf_counter() - t0
        self.drain()

    @property
    def pid(self):
        prov = getattr(self.km, "provisioner", None)
        if prov is not None and getattr(prov, "process", None) is not None:
            return prov.process.pid
        return self.km.kernel.pid

    def drain(self):
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0.01)
            except queue.Empty:
                return

    def run(self, code, timeout=60):
        """execute_request → matching execute_reply; returns seconds."""
        t = time.perf_counter()
        mid = self.kc.execute(code)
        while True:
            m = self.kc.get_shell_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") == mid:
                break
        dt = time.perf_counter() - t
        if m["content"].get("status") != "ok":
            raise RuntimeError("jupyter: %r failed: %s" % (code, m["content"]))
        return dt

    def first_stream(self, code, timeout=60):
        """execute_request → the first iopub `stream` message of it; returns seconds."""
        t = time.perf_counter()
        mid = self.kc.execute(code)
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") == mid and m["msg_type"] == "stream":
                dt = time.perf_counter() - t
                break
        while True:
            m = self.kc.get_shell_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") == mid:
                break
        self.drain()
        return dt

    def private_kib(self):
        return private_kib(self.pid)

    def smaps(self):
        return smaps_rollup(self.pid)

    def close(self):
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        except Exception:
            pass


FLOOR_SERVER = r'''
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
r, w = c.makefile("rb"), c.makefile("wb", buffering=0)
g = {}
for line in r:
    code = line.decode()
    try:
        out = repr(eval(code, g))
    except SyntaxError:
        exec(code, g); out = "None"
    w.write(out.encode() + b"\n")
'''


class Floor:
    """The exec loop behind a Unix socket (a separate /usr/bin/python3 process)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sbx-floor-")
        path = os.path.join(self.dir, "s")
        self.p = subprocess.Popen([PY, "-c", FLOOR_SERVER, path], stdout=subprocess.PIPE)
        self.p.stdout.readline()
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.r = self.s.makefile("rb")

    def run(self, line=b"1+1\n"):
        t = time.perf_counter()
        self.s.sendall(line)
        self.r.readline()
        return time.perf_counter() - t

    def close(self):
        self.r.close()
        self.s.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    k = Kernel()
    print("ready %.3f s" % k.ready_s, "import", k.run("import numpy, pandas, matplotlib"))
    print("1+1", sorted(k.run("1+1") for _ in range(50))[25])
    print("print", k.first_stream("print('x')"), "priv", k.private_kib())
    k.close()
    f = Floor()
    print("floor", sorted(f.run() for _ in range(1000))[500])
    f.close()
