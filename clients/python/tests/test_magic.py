"""The %%sandboxd cell magic in an in-process IPython InteractiveShell, against a real daemon.

Streams and displays are recorded into one list (the shell's display publisher and
sys.stdout/sys.stderr), so what the notebook would show, and its order, is checked exactly.
"""
import re
import sys

import pytest
from IPython.core.interactiveshell import InteractiveShell

from sandboxd import Sandbox


class Recorder:
    def __init__(self, seen, name):
        self.seen, self.name = seen, name

    def write(self, s):
        self.seen.append((self.name, s))

    def flush(self):
        pass


@pytest.fixture
def nb(daemon, monkeypatch, request):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sandboxd")
    name = "m-" + re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:55]
    seen = []
    monkeypatch.setattr(shell.display_pub, "publish",
                        lambda data, metadata=None, **kw: seen.append(("display", data)))

    def run(source):
        del seen[:]
        monkeypatch.setattr(sys, "stdout", Recorder(seen, "stdout"))
        monkeypatch.setattr(sys, "stderr", Recorder(seen, "stderr"))
        try:
            result = shell.run_cell(source, store_history=False)
        finally:
            monkeypatch.undo()  # also drops the publisher patch: put it back
            monkeypatch.setattr(shell.display_pub, "publish",
                                lambda data, metadata=None, **kw: seen.append(("display", data)))
        return result, _merge(seen)
    run.shell, run.name, run.url = shell, name, daemon.url
    yield run
    try:
        Sandbox(daemon.url, name).destroy()
    except Exception:
        pass


def _merge(seen):
    """Adjacent writes to one stream joined, as a notebook shows them."""
    out = []
    for kind, v in seen:
        if out and kind != "display" and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + v)
        else:
            out.append((kind, v))
    return out


def test_cell_outputs_in_order_and_state_persists(nb):
    r, seen = nb("%%%%sandboxd --url %s --sandbox %s\n"
                 "print('hi')\ndisplay(5)\nx = 41\nx + 1" % (nb.url, nb.name))
    assert r.success, r.error_in_exec
    assert seen == [("stdout", "hi\n"), ("display", {"text/plain": "5"}),
                    ("display", {"text/plain": "42"})]
    assert r.result is None  # shown above, not a second time as Out[]
    nb("%%%%sandboxd --url %s --sandbox %s --out ex\nx * 2" % (nb.url, nb.name))
    assert nb.shell.user_ns["ex"].text == "82"


def test_defaults_line_magic_plot_and_error(nb):
    r, seen = nb("%%sandboxd --url %s --sandbox %s" % (nb.url, nb.name))
    assert r.success and seen == []
    r, seen = nb("%%sandboxd\n"
                 "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n"
                 "print('after')\n1/0")
    assert r.success
    kinds = [k for k, _ in seen]
    assert kinds == ["display", "stdout", "stderr"], seen
    assert seen[0][1]["image/png"].startswith("iVBORw0KGgo")  # base64 of a PNG signature
    assert seen[1][1] == "after\n"
    assert "ZeroDivisionError" in seen[2][1]


def test_javascript_context(nb):
    cid = Sandbox(nb.url, nb.name).create_code_context(language="javascript").id
    r, seen = nb("%%%%sandboxd --url %s --sandbox %s --context %s\n"
                 "let n = 2; console.log('js'); n * 21" % (nb.url, nb.name, cid))
    assert r.success
    assert seen == [("stdout", "js\n"), ("display", {"text/plain": "42"})]
    r, seen = nb("%%%%sandboxd --url %s --sandbox %s -l typescript\n"
                 "const t: number = 3; t * 3" % (nb.url, nb.name))
    assert seen == [("display", {"text/plain": "9"})]


def test_bad_options_are_a_usage_error(nb):
    r, seen = nb("%%sandboxd --language cobol\n1")
    assert not r.success
    assert "invalid choice: 'cobol'" in str(r.error_in_exec)
    assert type(r.error_in_exec).__name__ == "UsageError"
