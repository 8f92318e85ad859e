"""The fast path for plain cells (fastpath.py) against IPython's own path.

The same cells run in two contexts, one with the fast path turned off; every
run must give the same events (results, output, errors with tracebacks,
execution counts) and, at the end, the same history: ``In``, ``Out``, ``_``,
``__``, ``___``, ``_i*`` and ``_N``.
"""

import pytest

from conftest import Context

# Plain cells (fast path) mixed with cells that need IPython (slow path).
CELLS = [
    "1+1",
    "x = 1",
    "x",
    "x;",
    "x  # no semicolon; here",
    "'a;b'",
    "print('hi')\n2",
    "def f(a):\n    return a * 2\nf(21)",
    "[i for i in range(3)]",
    "_ + __",
    "_3",
    "_4",
    "1/0",
    "def g():\n    raise ValueError('v')\ng()",
    "g()",
    "x = (1,\n",
    "  1+1",
    "\n\n3",
    "if True:\nx = 1",
    "return 5",
    "print(1)\nreturn 5",
    "import sys; sys.exit(3)",
    "exit",
    "exit()",
    "pwd = 1\npwd",
    "pwd",
    "%pwd",
    "who = 5",
    "who",
    "!true",
    "x = !echo hi",
    "len?",
    "a = 5 % 3\na",
    "1 != 2",
    "import asyncio\nasync def h():\n    return 7\nawait h()",
    "None",
    "True",
    "2.5",
    "'text'",
    "10**5000",
    "from __future__ import annotations\ndef k(a: Undefined): pass\nk.__annotations__",
    "get_ipython().display_formatter.formatters['text/plain'].float_precision = '2'",
    "3.14159",
    "In[-1], _i, _ii, _iii",
    "__builtins__ is not None",
    "",
    "   ",
    "x = 'caf\u00e9'\nx",
    "x = 1\r\nx",
    "...",
    ">>> 1+1",
    "_oh[1], Out[1]",
    "def r():\n    return _\nr()",
]

STATE = ("repr((In, sorted(Out.items()), _, __, ___, _i, _ii, _iii, "
         "sorted(k for k in globals() if k[:1] == '_' and k[1:].isdigit()), "
         "sorted(k for k in globals() if k.startswith('_i') and k[2:].isdigit())))")

SETUP = "import sandboxd_runtime.fastpath as _fp\n_fp.enabled = %s"


def _strip(run):
    return list(run.events)


@pytest.fixture(scope="module")
def pair():
    fast, slow = Context(), Context()
    fast.run(SETUP % "True")
    slow.run(SETUP % "False")
    yield fast, slow
    fast.close()
    slow.close()


def _hits(context):
    """The fast path's hit count, printed (so that ``Out`` stays the same)."""
    return int(context.run("print(_fp.hits)").stdout)


def test_same_events_and_history(pair):
    fast, slow = pair
    fast_before, slow_before = _hits(fast), _hits(slow)
    for code in CELLS:
        assert _strip(fast.run(code)) == _strip(slow.run(code)), code
    assert fast.run(STATE).main == slow.run(STATE).main
    assert _hits(fast) - fast_before >= 20
    assert _hits(slow) == slow_before


@pytest.mark.parametrize("code", [
    "1+1", "x = 1", "print('x')", "def f():\n    return 1\nf()", "a = 5 % 3",
    "1 != 2", "'a;b'", "x  # c", "import os", "for i in range(2):\n    i",
])
def test_plain_cells_take_the_fast_path(ctx, code):
    ctx.run("import sandboxd_runtime.fastpath as _fp")
    before = int(ctx.run("_fp.hits").main["text"])
    ctx.run(code)
    assert int(ctx.run("_fp.hits").main["text"]) == before + 2  # code and this


@pytest.mark.parametrize("code", [
    "%pwd", "!true", "x = !true", "x = %pwd", "len?", "  1", "\n1", "pwd",
    "exit", ">>> 1", "await x", "async def f(): pass", "'caf\u00e9'", "1\r\n2",
    "x = 1\n%pwd", "if 1:\n    %pwd",
])
def test_special_cells_take_ipythons_path(ctx, code):
    ctx.run("import sandboxd_runtime.fastpath as _fp")
    before = int(ctx.run("_fp.hits").main["text"])
    ctx.run(code)
    assert int(ctx.run("_fp.hits").main["text"]) == before + 1  # only this
