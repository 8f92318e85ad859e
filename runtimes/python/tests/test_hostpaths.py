"""sandboxd_runtime.hostpaths: every mutable place a host path can hide is rewritten,
in a child interpreter (the rewrite walks the whole heap of the process it runs in)."""
import subprocess

from conftest import PYTHON, RUNTIME_DIR

CHILD = r"""
import functools, sys, types
sys.path.insert(0, %r)
from sandboxd_runtime import hostpaths

HOST, INSIDE = "/host/runtimes", "/opt/sandboxd"

class Inline:                      # attributes kept in the object (3.11)
    def __init__(self):
        self.path = HOST + "/python/a.py"

def cached():
    value = HOST + "/cache"
    def get():
        return value               # a closure cell
    return get

src = compile("def f():\n    def g():\n        pass\n    return g\n", HOST + "/python/m.py", "exec")
ns = {}
exec(src, ns)
holder = {"file": HOST + "/python/x.py", "other": "/hostile/runtimes", "same": HOST}
items = [HOST, HOST + "2", "unrelated"]
inline, get = Inline(), cached()
codes = hostpaths.rewrite({HOST: INSIDE})
for code, name in codes:            # what the zygote does in C, done here by replace()
    if code is ns["f"].__code__:
        ns["f"].__code__ = code.replace(co_filename=name)
print(holder["file"], holder["other"], holder["same"])
print(items)
print(inline.path, get())
print(sorted(set(name for _, name in codes)))
print(ns["f"].__code__.co_filename)
print(hostpaths.rewrite({}), hostpaths.rewrite({HOST: HOST}))
"""


def test_rewrite_covers_dicts_lists_instances_cells_and_code():
    out = subprocess.run([PYTHON, "-I", "-c", CHILD % RUNTIME_DIR], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "/opt/sandboxd/python/x.py /hostile/runtimes /opt/sandboxd",
        "['/opt/sandboxd', '/host/runtimes2', 'unrelated']",
        "/opt/sandboxd/python/a.py /opt/sandboxd/cache",
        "['/opt/sandboxd/python/m.py']",
        "/opt/sandboxd/python/m.py",
        "[] []",
    ]
