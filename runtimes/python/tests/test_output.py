"""stdout/stderr streaming, magics, shell commands and matplotlib figures."""

import base64
import time


def test_stdout_stderr_and_fd_level_output_in_order(ctx):
    run = ctx.run(
        "import os, sys\n"
        "print('one')\n"
        "sys.stderr.write('err\\n')\n"
        "os.write(1, b'fd-level\\n')\n"
        "print('two', end='')\n"
        "display(1)")
    # Python-level writes travel on the channel, exactly ordered with results;
    # fd-level bytes come before any message sent after them (not necessarily
    # after the Python-level writes that preceded them)
    python_level = "".join(e[1] for e in run.events if e[0] == "stdout" and e[1] != "fd-level\n")
    assert python_level == "one\ntwo" and "fd-level\n" in run.stdout
    assert run.stderr == "err\n"
    assert run.events[-2][0] == "result"  # everything printed came before it


def test_output_streams_while_the_cell_runs(ctx):
    ctx.send({"type": "execute", "id": "stream", "code":
              "import time\nprint('early', flush=False)\ntime.sleep(3)\nprint('late')"})
    start = time.monotonic()
    msg = ctx.next_message()
    # well before the cell ends (a generous bound: the machine may be busy)
    assert time.monotonic() - start < 2 and msg["text"] == "early\n"
    run = ctx.collect("stream")
    assert run.stdout == "late\n"


def test_invalid_unicode_is_replaced_not_raised(ctx):
    run = ctx.run("print('a\\ud800b')\n'\\udcff'")
    assert run.error is None and run.stdout == "a\ufffdb\n"
    assert run.main["text"] == "'\\udcff'"


def test_magics_and_shell_commands(ctx):
    run = ctx.run("%timeit -n 3 -r 2 sum(range(10))")
    assert "per loop" in run.stdout and run.error is None
    run = ctx.run("%time y_magic = 7")
    assert "Wall time" in run.stdout
    assert "y_magic" in ctx.run("%who").stdout
    run = ctx.run("!echo shell-out; echo shell-err >&2")
    assert run.stdout == "shell-out\n" and run.stderr == "shell-err\n"
    assert ctx.run("files = !printf 'a\\nb'\nfiles").main["text"] == "['a', 'b']"
    assert ctx.run("!ls /proc/self/fd").stdout.split() == ["0", "1", "2", "3"]  # 3 is ls's own dir


def test_pip_magic_runs_pip_and_conda_is_refused(ctx):
    # %pip runs python3 -m pip (installs are tested in a sandbox: tests/e2e/test_packages.py)
    run = ctx.run("%pip --version")
    assert run.error is None and run.stdout.startswith("pip "), run.stdout
    run = ctx.run("%conda install x")
    assert run.error["name"] == "UsageError" and "%pip install" in run.error["message"]


def test_figure_without_show_is_one_png_and_closed(ctx):
    run = ctx.run("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t');")
    assert len(run.results) == 1
    figure = run.results[0]
    assert figure["text"] == "<Figure size 640x480 with 1 Axes>"
    assert figure["isMainResult"] is False
    assert base64.b64decode(figure["png"]).startswith(b"\x89PNG")
    assert ctx.run("plt.get_fignums()").main["text"] == "[]"


def test_show_emits_in_order_with_stdout(ctx):
    run = ctx.run(
        "import time\n"
        "print('before')\n"
        "plt.plot([1]); plt.show()\n"
        "time.sleep(0.1)\n"
        "print('after')\n"
        "plt.figure(); plt.bar([1], [2])\n"
        "plt.figure();")  # empty: never sent
    assert run.kinds == ["stdout", "result", "stdout", "result", "end"]
    assert all("png" in r for r in run.results)


def test_figure_displayed_explicitly_is_not_sent_twice(ctx):
    run = ctx.run("fig, ax = plt.subplots()\nax.plot([0, 1])\nfig")
    assert len(run.results) == 1 and run.main["png"]
    run = ctx.run("display(fig)\nax.set_title('changed')\nNone")
    assert len(run.results) == 2  # the display, then the changed figure
    assert ctx.run("ax.get_title()").results == [{"text": "'changed'", "isMainResult": True}]
    assert len(ctx.run("ax.set_xlabel('x');").results) == 1  # a change to a closed figure


def test_figure_of_a_failing_cell_is_still_sent(ctx):
    run = ctx.run("plt.plot([1, 2])\nraise ValueError('after plot')")
    assert run.kinds == ["result", "error", "end"]
    assert ctx.run("plt.get_fignums()").main["text"] == "[]"


def test_matplotlib_magic_is_harmless(ctx):
    assert ctx.run("%matplotlib inline").error is None
    run = ctx.run("plt.plot([1]);")
    assert len(run.results) == 1 and "png" in run.results[0]
