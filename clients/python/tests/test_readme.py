"""The Python examples of README.md (repo root) and clients/python/README.md run as written.

Every ```python block of a README runs, in order, in one namespace (later blocks use what
earlier ones defined), against the test daemon: the only change made is the daemon URL
(`http://127.0.0.1:7878` becomes the test daemon's). Blocks with IPython magics (`%...`)
run in an in-process InteractiveShell, as in a notebook. What the examples say is checked:
  * `EXPR  # VALUE` on a top-level line: EXPR evaluates to VALUE (a Python literal; the
    comment's first token when followed by prose, e.g. `# None, or ...`), or, when the
    comment names a PNG, to something whose `_repr_png_()` is a PNG image;
  * `print(...)  # TEXT` anywhere in a block: TEXT is printed, in that order;
  * the magic block's own claims (`plotting`, the plot, `45`) through its `--out` variable.
"""
import ast
import contextlib
import io
import os
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell

from sandboxd import Sandbox

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEFAULT_URL = "http://127.0.0.1:7878"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def python_blocks(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)


def expected_value(comment):
    """The literal a `# comment` promises, or None when it promises no literal."""
    for candidate in (re.split(r"\s{2,}|\s\(", comment)[0], comment.split()[0].rstrip(",:;")):
        try:
            return (ast.literal_eval(candidate),)
        except (ValueError, SyntaxError):
            continue
    return None


def printed_claims(block):
    return [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s*#\s*(.+)$", block, re.M)]


def run_plain(block, ns):
    """Runs a block statement by statement in ns, checking `EXPR  # VALUE` lines; returns
    what the block printed."""
    lines = block.splitlines()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for node in ast.parse(block).body:
            src = ast.get_source_segment(block, node)
            line = lines[node.end_lineno - 1]
            comment = line.split("#", 1)[1].strip() if "  #" in line else None
            if isinstance(node, ast.Expr) and comment and not src.startswith("print("):
                value = eval(compile(ast.Expression(node.value), "<readme>", "eval"), ns)
                if "PNG" in comment:
                    assert value._repr_png_().startswith(PNG_MAGIC), (src, value)
                    continue
                want = expected_value(comment)
                if want is not None:
                    assert value == want[0], "%s: got %r, README says %r" % (src, value, want[0])
            else:
                exec(compile(ast.Module([node], []), "<readme>", "exec"), ns)
    return out.getvalue()


def run_magic(block, shell):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = shell.run_cell(block, store_history=False)
    assert result.success, result.error_in_exec or result.error_before_exec
    return out.getvalue()


def check_printed(block, printed):
    rest = printed
    for claim in printed_claims(block):
        at = rest.find(claim)
        assert at >= 0, "README says %r is printed; got %r" % (claim, printed)
        rest = rest[at + len(claim):]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files (plot.png)
    return tmp_path


def run_readme(path, daemon):
    shell = InteractiveShell.instance()
    ns = shell.user_ns
    ran = 0
    for block in python_blocks(path):
        block = block.replace(DEFAULT_URL, daemon.url)
        if re.search(r"^%", block, re.M):
            printed = run_magic(block, shell)
        else:
            printed = run_plain(block, ns)
        check_printed(block, printed)
        ran += 1
    for s in Sandbox.list(daemon.url):
        Sandbox(daemon.url, s.id).destroy()
    return ns, ran


def test_root_readme(daemon, workdir):
    ns, ran = run_readme("README.md", daemon)
    assert ran == 1


def test_python_sdk_readme(daemon, workdir):
    ns, ran = run_readme("clients/python/README.md", daemon)
    assert ran >= 5
    with open("plot.png", "rb") as f:
        assert f.read(8) == PNG_MAGIC
    ex = ns["ex"]  # the %%sandboxd --out ex cell: "plotting", the plot, 45
    assert ex.stdout == "plotting\n"
    assert [r.formats() for r in ex.results] == [["png", "text"], ["text"]]
    assert ex.text == "45"
