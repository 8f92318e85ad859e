"""Python-level output in whole lines: print() is one stream message with its end,
threads printing at once never mix their lines, and a partial line is still sent on
its own (after stdio.LINE_WAIT, or before the next result)."""

import re


def stream_texts(run, name="stdout"):
    return [text for kind, text in run.events if kind == name]


def test_print_is_one_message_with_its_newline(ctx):
    run = ctx.run("print('hello')\nprint('a', 'b', sep='-', end='!\\n')\n"
                  "import sys\nprint('to err', file=sys.stderr)")
    assert stream_texts(run) == ["hello\n", "a-b!\n"]
    assert stream_texts(run, "stderr") == ["to err\n"]


def test_print_keeps_the_builtin_checks(ctx):
    run = ctx.run("print('x', sep=1)")
    assert run.error["name"] == "TypeError"
    run = ctx.run("import io\nf = io.StringIO()\nprint('a', 'b', file=f)\nf.getvalue()")
    assert run.main["text"] == "'a b\\n'"


def test_a_partial_line_is_sent_before_the_rest_comes(ctx):
    # the rest comes 5 s later: the partial line has long been sent on its own
    run = ctx.run("import time\nprint('progress', end='')\ntime.sleep(5)\nprint(' done')")
    assert stream_texts(run) == ["progress", " done\n"]


def test_a_partial_line_comes_before_a_result(ctx):
    run = ctx.run("import sys\nsys.stdout.write('no newline')\ndisplay(1)\nprint('after')")
    kinds = [kind for kind, _ in run.events]
    assert stream_texts(run) == ["no newline", "after\n"]
    assert kinds.index("result") == 1


def test_threads_printing_at_once_never_mix_lines(ctx):
    code = (
        "import sys, threading\n"
        "def work(t):\n"
        "    for i in range(400):\n"
        "        if i % 2:\n"
        "            print('th%d' % t, i, 'x' * (i % 37))\n"
        "        else:\n"
        "            print('th%d %d' % (t, i), 'y' * (i % 29), sep=' ', end='\\n')\n"
        "ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n")
    run = ctx.run(code, timeout=120)
    lines = run.stdout.split("\n")
    assert lines[-1] == ""
    pattern = re.compile(r"th(\d) (\d+) (x*|y*)")
    seen = set()
    for line in lines[:-1]:
        m = pattern.fullmatch(line)
        assert m, "a line made of two writers: %r" % line
        t, i, pad = int(m.group(1)), int(m.group(2)), m.group(3)
        assert pad == ("x" * (i % 37) if i % 2 else "y" * (i % 29)), line
        seen.add((t, i))
    assert seen == {(t, i) for t in range(8) for i in range(400)}
    # and every message is whole lines
    assert all(text.endswith("\n") for text in stream_texts(run))


def test_a_long_partial_line_is_sent_as_it_grows(ctx):
    # 30 writes of 1 MB and no newline: each is sent as it comes (nothing held grows
    # without bound), and together they are every byte written, in order
    run = ctx.run("import sys\nfor i in range(30):\n    sys.stdout.write(chr(65 + i) * 1000000)")
    texts = stream_texts(run)
    assert "".join(texts) == "".join(chr(65 + i) * 1000000 for i in range(30))
    assert max(len(t) for t in texts) <= 1000000 + 65536
