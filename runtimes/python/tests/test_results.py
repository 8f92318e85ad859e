"""Results: last expression values, display(), rich MIME types, DataFrames."""

import base64


def test_ready_message(ctx):
    ready = ctx.ready
    assert ready["type"] == "ready" and ready["language"] == "python"
    assert ready["version"].startswith("3.11") and ready["pid"] == ctx.proc.pid


def test_state_persists_and_last_expression_is_main_result(ctx):
    assert ctx.run("x_state = 20").results == []
    run = ctx.run("x_state + 22")
    assert run.results == [{"text": "42", "isMainResult": True}]
    assert run.error is None and run.stdout == "" and run.stderr == ""


def test_none_and_semicolon_give_no_result(ctx):
    assert ctx.run("None").results == []
    assert ctx.run("print('p')").results == []
    assert ctx.run("1 + 1;").results == []


def test_no_out_prompt_anywhere(ctx):
    run = ctx.run("print('x')\n'y'")
    assert run.stdout == "x\n"
    assert run.results == [{"text": "'y'", "isMainResult": True}]
    assert "Out[" not in run.stdout + run.stderr


def test_dict_and_list_get_json(ctx):
    run = ctx.run("{'a': [1, 2.5, None, True], 'b': {'c': 'd'}}")
    assert run.main == {"text": "{'a': [1, 2.5, None, True], 'b': {'c': 'd'}}",
                        "json": {"a": [1, 2.5, None, True], "b": {"c": "d"}},
                        "isMainResult": True}
    assert ctx.run("[1, 'two']").main["json"] == [1, "two"]


def test_unserialisable_values_keep_text_only(ctx):
    cases = {
        "{1, 2}": "{1, 2}",
        "import datetime; {'d': datetime.date(2024, 1, 2)}": "{'d': datetime.date(2024, 1, 2)}",
        "import numpy as np; [np.int64(3)]": "[3]",
        "{'nan': float('nan')}": "{'nan': nan}",
        "[2 ** 70]": "[1180591620717411303424]",
    }
    for code, text in cases.items():
        run = ctx.run(code)
        assert run.error is None, run.error
        assert run.results == [{"text": text, "isMainResult": True}], code


def test_display_is_a_builtin_and_keeps_call_order(ctx):
    # the pause lets the harness (like the daemon) see the result before
    # the output that follows it: it drains pipes before handling a message
    run = ctx.run("import time\ndisplay('a')\ntime.sleep(0.1)\n"
                  "print('between')\ndisplay(2)\n3")
    assert [(r["text"], r["isMainResult"]) for r in run.results] == [
        ("'a'", False), ("2", False), ("3", True)]
    assert run.kinds == ["result", "stdout", "result", "result", "end"]


def test_ipython_display_objects(ctx):
    run = ctx.run(
        "from IPython.display import HTML, Markdown, Latex, SVG, JSON, Javascript\n"
        "display(HTML('<b>h</b>'))\n"
        "display(Markdown('# m'))\n"
        "display(Latex(r'$x^2$'))\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))\n"
        "display(JSON({'k': [1, 2]}))\n"
        "display(Javascript('console.log(1)'))\n")
    fields = [{k: v for k, v in r.items() if k not in ("text", "isMainResult")}
              for r in run.results]
    assert fields == [
        {"html": "<b>h</b>"},
        {"markdown": "# m"},
        {"latex": "$x^2$"},
        {"svg": '<svg xmlns="http://www.w3.org/2000/svg"/>'},
        {"json": {"k": [1, 2]}},
        {"javascript": "console.log(1)"},
    ]
    assert all(r["isMainResult"] is False for r in run.results)


def test_images_are_base64(ctx):
    run = ctx.run(
        "import io, PIL.Image\n"
        "from IPython.display import Image\n"
        "buf = io.BytesIO(); PIL.Image.new('RGB', (2, 2), 'red').save(buf, 'PNG')\n"
        "png_bytes = buf.getvalue()\n"
        "buf = io.BytesIO(); PIL.Image.new('RGB', (2, 2), 'red').save(buf, 'JPEG')\n"
        "display(Image(png_bytes))\n"
        "Image(buf.getvalue(), format='jpeg')")
    assert run.error is None, run.error
    png_bytes = base64.b64decode(run.results[0]["png"])
    assert png_bytes.startswith(b"\x89PNG") and "jpeg" not in run.results[0]
    assert base64.b64decode(run.main["jpeg"]).startswith(b"\xff\xd8")


def test_repr_methods_and_unknown_mime_types(ctx):
    run = ctx.run(
        "class R:\n"
        "    def _repr_html_(self): return '<i>r</i>'\n"
        "    def _repr_pdf_(self): return b'%PDF-1.4'\n"
        "    def __repr__(self): return 'R()'\n"
        "class B:\n"
        "    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'text/plain': 'B!', 'application/vnd.custom+json': {'v': 1},\n"
        "                'text/x-custom': 'raw'}\n"
        "display(R())\n"
        "B()")
    assert run.results == [
        {"text": "R()", "html": "<i>r</i>",
         "pdf": base64.b64encode(b"%PDF-1.4").decode(), "isMainResult": False},
        {"text": "B!", "extra": {"application/vnd.custom+json": {"v": 1},
                                 "text/x-custom": "raw"}, "isMainResult": True},
    ]


def test_dataframe_gives_html_text_and_columnar_data(ctx):
    run = ctx.run(
        "import pandas as pd\n"
        "pd.DataFrame({'a': [1, 2, 3], 'b': [0.5, float('nan'), 2.0],\n"
        "              'c': ['x', None, 'z'],\n"
        "              't': pd.to_datetime(['2024-01-02', '2024-01-03', None])})")
    main = run.main
    assert main["data"] == {
        "a": [1, 2, 3], "b": [0.5, None, 2.0], "c": ["x", None, "z"],
        "t": ["2024-01-02T00:00:00.000", "2024-01-03T00:00:00.000", None]}
    assert main["text"].splitlines()[0].split() == ["a", "b", "c", "t"]
    assert main["html"].startswith("<div>") and "<table" in main["html"]
    assert main["isMainResult"] is True


def test_huge_result_travels_whole(ctx):
    run = ctx.run("display({'image/png': bytes(range(256)) * (20 * 4096)}, raw=True)",
                  timeout=60)
    assert run.error is None
    assert base64.b64decode(run.results[0]["png"]) == bytes(range(256)) * (20 * 4096)
    assert ctx.run("'still here'").main["text"] == "'still here'"
