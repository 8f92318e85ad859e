"""The Python SDK against a real sandboxd: code, contexts, exec, errors, display protocol."""
import threading
import time

import pytest

import sandboxd
from sandboxd import (AuthenticationError, ConnectionFailedError, ContextNotFoundError,
                      Sandbox, SandboxdError, SandboxNotFoundError, ValidationError)


def test_get_or_create_is_lazy_and_idempotent(daemon):
    sbx = Sandbox(daemon.url, "lazy")
    assert all(s.id != "lazy" for s in Sandbox.list(daemon.url))   # nothing sent yet
    assert sbx.run_code("1 + 1").text == "2"
    assert any(s.id == "lazy" for s in Sandbox.list(daemon.url))
    again = Sandbox(daemon.url, "lazy")
    assert again.run_code("2 + 2").text == "4"
    assert sbx.info().id == "lazy"
    assert sbx.destroy() is True


def test_run_code_result_logs_and_counts(sandbox):
    ex = sandbox.run_code("print('hello')\nimport sys; print('warn', file=sys.stderr)\nx = 41\nx + 1")
    assert ex.error is None
    assert ex.text == "42"
    assert ex.stdout == "hello\n"
    assert ex.stderr == "warn\n"
    assert ex.logs.stdout and ex.logs.stderr
    assert ex.main_result.is_main_result
    assert ex.execution_count == 1
    assert ex.duration_ms is not None
    # state persists in the default context
    assert sandbox.run_code("x").text == "41"


def test_callbacks_fire_while_the_code_runs(sandbox):
    seen = []
    start = time.monotonic()
    ex = sandbox.run_code(
        "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.4)\n'done'",
        on_stdout=lambda t: seen.append((time.monotonic() - start, t)),
        on_result=lambda r: seen.append((time.monotonic() - start, r.text)))
    total = time.monotonic() - start
    assert any(text.startswith("0") for _, text in seen), (seen, ex)
    first_print = next(t for t, text in seen if text.startswith("0"))
    assert first_print < total - 0.6, (seen, total)   # arrived long before the end
    assert ex.text == "'done'"
    assert [r.text for r in ex.results] == ["'done'"]


def test_error_is_data_with_traceback(sandbox):
    errors = []
    ex = sandbox.run_code("def f():\n    1/0\nf()", on_error=errors.append)
    assert ex.error is not None and errors and errors[0].name == "ZeroDivisionError"
    assert ex.error.name == "ZeroDivisionError"
    assert "division by zero" in ex.error.message
    assert ex.error.value == ex.error.message
    assert "Traceback" in ex.error.traceback and "f()" in ex.error.traceback
    with pytest.raises(sandboxd.CodeRaisedError) as info:
        ex.raise_error()
    assert info.value.error.name == "ZeroDivisionError"


def test_env_vars_and_timeout(sandbox):
    ex = sandbox.run_code("import os; os.environ.get('GREETING')", env_vars={"GREETING": "hi"})
    assert ex.text == "'hi'"
    assert sandbox.run_code("import os; repr(os.environ.get('GREETING'))").text == "'None'"
    ex = sandbox.run_code("import time; time.sleep(5)", timeout=0.5)
    assert ex.error is not None and ex.error.name == "TimeoutError"


@pytest.mark.parametrize("language,code,expect", [
    ("javascript", "const a = 20; console.log('js'); a + 22", "42"),
    ("typescript", "const a: number = 40; a + 2", "42"),
])
def test_other_languages(sandbox, language, code, expect):
    ex = sandbox.run_code(code, language=language)
    assert ex.error is None, ex.error
    assert ex.text == expect


def test_matplotlib_png_displays_in_jupyter(sandbox):
    ex = sandbox.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
    pngs = [r for r in ex.results if r.png]
    assert pngs, ex
    r = pngs[0]
    assert "png" in r.formats()
    assert r._repr_png_().startswith(b"\x89PNG\r\n\x1a\n")
    bundle = r._repr_mimebundle_()
    assert bundle["image/png"] == r.png and "text/plain" in bundle
    assert r._repr_mimebundle_(include=["image/png"]).keys() == {"image/png"}
    # An Execution with no main result shows its last display.
    assert ex._repr_png_() == r._repr_png_()


def test_rich_formats(sandbox):
    ex = sandbox.run_code(
        "from IPython.display import HTML, Markdown, Latex, JSON, display\n"
        "display(HTML('<b>x</b>'))\ndisplay(Markdown('# t'))\ndisplay(Latex(r'$x^2$'))\n"
        "{'a': 1}")
    assert ex.error is None, ex.error
    html = [r for r in ex.results if r.html]
    md = [r for r in ex.results if r.markdown]
    latex = [r for r in ex.results if r.latex]
    assert html and html[0]._repr_html_() == "<b>x</b>"
    assert md and md[0]._repr_markdown_() == "# t"
    assert latex and "x^2" in latex[0]._repr_latex_()
    assert ex.main_result._repr_json_() == {"a": 1}
    assert ex._repr_mimebundle_()["application/json"] == {"a": 1}


def test_code_contexts_lifecycle(sandbox):
    ctx = sandbox.create_code_context(language="python", env_vars={"K": "v"})
    assert ctx.language == "python" and ctx.state == "idle" and ctx.cwd == "/workspace"
    assert ctx.id in [c.id for c in sandbox.list_code_contexts()]
    sandbox.run_code("y = 7", context=ctx)
    assert sandbox.run_code("y", context=ctx.id).text == "7"
    assert sandbox.run_code("import os; os.environ['K']", context=ctx).text == "'v'"
    # the default context does not see the named one's state
    assert sandbox.run_code("'y' in dir()").text == "False"
    restarted = sandbox.restart_code_context(ctx)
    assert restarted.id == ctx.id
    assert sandbox.run_code("'y' in dir()", context=ctx).error is None
    assert sandbox.run_code("'y' in dir()", context=ctx).text == "False"
    assert sandbox.delete_code_context(ctx) is True
    with pytest.raises(ContextNotFoundError) as info:
        sandbox.run_code("1", context=ctx)
    assert info.value.code == "CONTEXT_NOT_FOUND" and info.value.status == 404


def test_interrupt_from_another_thread(sandbox):
    ctx = sandbox.create_code_context()
    sandbox.run_code("z = 1", context=ctx)
    answer = {}

    def interrupt():
        time.sleep(0.7)
        answer.update(sandbox.interrupt_code_context(ctx))

    t = threading.Thread(target=interrupt)
    t.start()
    ex = sandbox.run_code("import time; time.sleep(20)", context=ctx)
    t.join()
    assert answer["interrupted"] is True
    assert ex.error is not None and ex.error.name == "KeyboardInterrupt"
    assert sandbox.run_code("z", context=ctx).text == "1"


def test_exec_plain_and_streamed(sandbox):
    r = sandbox.exec("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code, r.success) == ("out\n", "err\n", 3, False)
    assert r["exitCode"] == 3
    chunks = []
    r = sandbox.exec("for i in 1 2; do echo $i; sleep 0.2; done", on_stdout=chunks.append)
    assert r.exit_code == 0 and r.success and r.stdout == "1\n2\n"
    assert "".join(chunks) == "1\n2\n"
    r = sandbox.exec("echo $A; pwd", env={"A": "b"}, cwd="/tmp")
    assert r.stdout == "b\n/tmp\n"
    assert sandbox.exec("cat", stdin="piped").stdout == "piped"


def test_typed_errors(daemon, sandbox):
    with pytest.raises(ValidationError) as info:
        sandbox.create_code_context(language="cobol")
    assert info.value.code == "VALIDATION_FAILED" and info.value.status == 400
    assert "cobol" in info.value.message
    with pytest.raises(SandboxNotFoundError):
        Sandbox(daemon.url, "never-made").destroy()
    with pytest.raises(ContextNotFoundError):
        sandbox.interrupt_code_context("ctx-nope")
    with pytest.raises(SandboxdError):   # the base catches everything
        sandbox.delete_code_context("ctx-nope")
    with pytest.raises(ConnectionFailedError):
        Sandbox("http://127.0.0.1:1", "x").run_code("1")
    with pytest.raises(ValueError):
        Sandbox("ftp://nowhere", "x")


def test_token_is_sent(make_daemon, monkeypatch):
    monkeypatch.delenv("SANDBOXD_TOKEN", raising=False)
    d = make_daemon("--token", "s3cret")
    with pytest.raises(AuthenticationError) as info:
        Sandbox(d.url, "a").run_code("1")
    assert info.value.status == 401
    assert Sandbox(d.url, "a", token="s3cret").run_code("1 + 1").text == "2"


def test_attach_replays_then_follows_live(sandbox):
    ids = []

    def first_line(text):
        if not ids:
            ids.append(text)

    ex = sandbox.run_code("import time\nfor i in range(3):\n    print(i, flush=True)\n"
                          "    time.sleep(0.2)\n'done'", on_stdout=first_line)
    assert ex.id and ex.id.startswith("exe-") and ex.context_id
    assert set(ex.usage) == {"cpuMs", "peakMemoryBytes"}
    seen = []
    again = sandbox.attach(ex.id, on_stdout=seen.append)
    assert again.id == ex.id and again.text == "'done'" and again.stdout == ex.stdout
    assert "".join(seen) == "0\n1\n2\n" and again.usage == ex.usage
    assert sandbox.get_execution(ex.id).state == "done"
    with pytest.raises(sandboxd.NotFoundError):
        sandbox.attach("exe-0000000000000000")


def test_attach_to_a_run_whose_client_went_away(sandbox):
    ctx = sandbox.create_code_context()
    started = threading.Event()
    box = {}

    def leave(text):
        started.set()
        raise RuntimeError("the client gives up")   # not Ctrl-C: the run must go on

    with pytest.raises(RuntimeError):
        sandbox.run_code("import time\nprint('go', flush=True)\ntime.sleep(1)\nprint('end')\n7",
                         context=ctx, on_stdout=leave)
    assert started.is_set()
    q = sandbox._http.request("GET", sandbox._ctx_path(ctx) + "/queue")
    box["id"] = q["running"]["id"]
    ex = sandbox.attach(box["id"], after=1)
    assert ex.text == "7" and "end" in ex.stdout and "go" not in ex.stdout


def test_keyboard_interrupt_interrupts_the_run(make_daemon):
    # the daemon would let the run go on for 10 minutes without a client: only the SDK's
    # explicit interrupt makes the context idle within the wait below
    d = make_daemon("--reattach-grace-ms", "600000")
    sandbox = Sandbox(d.url, "ctrl-c")
    ctx = sandbox.create_code_context()

    def ctrl_c(text):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sandbox.run_code("import time\nprint('go', flush=True)\ntime.sleep(600)", context=ctx,
                         on_stdout=ctrl_c)
    deadline = time.monotonic() + 60
    while sandbox.get_code_context(ctx).state != "idle" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sandbox.get_code_context(ctx).state == "idle"
    q = sandbox._http.request("GET", sandbox._ctx_path(ctx) + "/queue")
    assert q == {"running": None, "queued": []}
    assert sandbox.run_code("1 + 1", context=ctx).text == "2"
    sandbox.destroy()
