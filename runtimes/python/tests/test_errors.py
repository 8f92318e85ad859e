"""Errors: shape, cleaned tracebacks, syntax errors, SystemExit, input()."""


def test_runtime_error_traceback_names_cell_lines(ctx):
    run = ctx.run("a = 1\nb = 0\na / b")
    assert run.results == []
    assert run.error == {
        "name": "ZeroDivisionError", "message": "division by zero",
        "traceback": ["Traceback (most recent call last):",
                      '  File "<cell>", line 3, in <module>',
                      "    a / b",
                      "    ~~^~~",
                      "ZeroDivisionError: division by zero"]}


def test_frames_from_earlier_cells_and_libraries(ctx):
    define = ctx.run("def boom(x):\n    return {}[x]\n")
    run = ctx.run("import json\nboom('k')")
    assert run.error["name"] == "KeyError" and run.error["message"] == "'k'"
    assert run.error["traceback"] == [
        "Traceback (most recent call last):",
        '  File "<cell>", line 2, in <module>',
        "    boom('k')",
        '  File "<cell %d>", line 2, in boom' % define.count,
        "    return {}[x]",
        "           ~~^^^",
        "KeyError: 'k'"]
    lib = ctx.run("import json\njson.loads('{')")
    assert lib.error["name"] == "JSONDecodeError"
    assert '  File "<cell>", line 2, in <module>' in lib.error["traceback"]
    assert any("json/decoder.py" in line for line in lib.error["traceback"])


def test_no_runtime_or_ipython_frames_and_no_ansi(ctx):
    run = ctx.run("%timeit -n1 -r1 undefined_name")
    text = "\n".join(run.error["traceback"])
    assert run.error["name"] == "NameError"
    assert "\x1b[" not in text
    assert "IPython" not in text and "sandboxd_runtime" not in text


def test_chained_exception(ctx):
    run = ctx.run("try:\n    1/0\nexcept Exception as e:\n    raise ValueError('v') from e")
    tb = run.error["traceback"]
    assert run.error["name"] == "ValueError" and run.error["message"] == "v"
    assert tb[0:3] == ["Traceback (most recent call last):",
                       '  File "<cell>", line 2, in <module>', "    1/0"]
    assert "The above exception was the direct cause of the following exception:" in tb
    assert tb[-1] == "ValueError: v"


def test_syntax_error(ctx):
    run = ctx.run("x = 1\ny = 1 +* 2")
    assert run.error == {
        "name": "SyntaxError", "message": "invalid syntax (<cell>, line 2)",
        "traceback": ['  File "<cell>", line 2', "    y = 1 +* 2", "           ^",
                      "SyntaxError: invalid syntax"]}


def test_indentation_error(ctx):
    run = ctx.run("if True:\nprint(1)")
    assert run.error["name"] == "IndentationError"
    assert run.error["traceback"][0] == '  File "<cell>", line 2'
    assert run.error["traceback"][1] == "    print(1)"
    assert run.error["traceback"][-1].startswith("IndentationError: expected an indented block")


def test_magic_line_is_shown_raw(ctx):
    run = ctx.run("x = 1\n%timeit -n1 -r1 1/0")
    assert run.error["name"] == "ZeroDivisionError"
    assert run.error["traceback"][:3] == [
        "Traceback (most recent call last):",
        '  File "<cell>", line 2, in <module>',
        "    %timeit -n1 -r1 1/0"]


def test_sys_exit_is_an_error_and_context_lives(ctx):
    ctx.run("kept = 'yes'")
    run = ctx.run("import sys\nprint('before')\nsys.exit(3)")
    assert run.stdout == "before\n" and run.stderr == ""
    assert run.error["name"] == "SystemExit" and run.error["message"] == "3"
    assert run.error["traceback"][-1] == "SystemExit: 3"
    assert ctx.run("kept").main["text"] == "'yes'"
    assert ctx.run("exit()").error["name"] == "SystemExit"
    assert ctx.run("kept").main["text"] == "'yes'"


def test_input_raises_without_reading_the_channel(ctx):
    run = ctx.run("input('name? ')")
    assert run.error["name"] == "StdinNotImplementedError"
    assert run.error["message"] == "input() is not supported in sandboxd contexts: there is no stdin"
    assert ctx.run("import getpass\ngetpass.getpass()").error["name"] == "StdinNotImplementedError"
    assert ctx.run("'next request ran'").main["text"] == "'next request ran'"


def test_error_after_output_and_results_comes_last(ctx):
    run = ctx.run("print('out')\ndisplay(1)\nraise RuntimeError('late')")
    assert run.kinds == ["stdout", "result", "error", "end"]
    assert run.error["message"] == "late"
