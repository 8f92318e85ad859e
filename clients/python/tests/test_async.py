"""AsyncSandbox against a real daemon: runs, callbacks (plain and async) on the loop and in
order, contexts, exec, files, process logs as an async generator, concurrency, and a
cancelled run being interrupted in the sandbox. Plain pytest: each test drives its own loop
with asyncio.run."""
import asyncio
import re
import threading

import pytest

from sandboxd import AsyncSandbox, ContextNotFoundError


@pytest.fixture
def asbx(daemon, request):
    name = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name)[:55]
    sbx = AsyncSandbox(daemon.url, "a-" + name)
    yield sbx
    try:
        sbx.sync.destroy()
    except Exception:
        pass


def test_run_code_streams_to_callbacks_on_the_loop(asbx):
    async def main():
        loop_thread = threading.get_ident()
        seen = []

        def on_stdout(text):
            assert threading.get_ident() == loop_thread
            seen.append(("out", text))

        async def on_result(r):
            await asyncio.sleep(0)
            seen.append(("result", r.text))
        ex = await asbx.run_code("for i in range(3):\n    print(i, flush=True)\n"
                                 "display(7)\nx = 41\nx + 1",
                                 on_stdout=on_stdout, on_result=on_result)
        assert ex.text == "42"
        assert ex.stdout == "0\n1\n2\n"
        assert "".join(t for k, t in seen if k == "out") == "0\n1\n2\n"
        assert [t for k, t in seen if k == "result"] == ["7", "42"]
        assert ex.error is None
        assert (await asbx.run_code("x * 2")).text == "82"  # state persists
        err = await asbx.run_code("1/0")
        assert err.error.name == "ZeroDivisionError"
    asyncio.run(main())


def test_contexts(asbx):
    async def main():
        ctx = await asbx.create_code_context(language="javascript")
        assert ctx.language == "javascript"
        assert (await asbx.run_code("const a = 20; a + 1", context=ctx)).text == "21"
        assert (await asbx.run_code("a * 2", context=ctx.id)).text == "40"
        assert ctx.id in [c.id for c in await asbx.list_code_contexts()]
        await asbx.delete_code_context(ctx)
        with pytest.raises(ContextNotFoundError):
            await asbx.get_code_context(ctx.id)
    asyncio.run(main())


def test_exec_and_files(asbx):
    async def main():
        await asbx.write_file("notes/a.txt", "hello\n")
        assert await asbx.read_file("notes/a.txt", text=True) == "hello\n"
        names = [f.name for f in await asbx.list_files("/workspace/notes")]
        assert names == ["a.txt"]
        chunks = []
        r = await asbx.exec("cat /workspace/notes/a.txt; echo err >&2; exit 3",
                            on_stdout=chunks.append)
        assert (r.stdout, r.stderr, r.exit_code) == ("hello\n", "err\n", 3)
        assert "".join(chunks) == "hello\n"
    asyncio.run(main())


def test_process_logs_async_generator(asbx):
    async def main():
        p = await asbx.start_process("for i in 1 2 3; do echo line$i; done")
        out, events = [], []
        async for event, data in asbx.stream_process_logs(p.id, on_stdout=out.append):
            events.append(event)
        assert "".join(out) == "line1\nline2\nline3\n"
        assert events[-1] == "exit"
    asyncio.run(main())


def test_runs_in_two_sandboxes_proceed_together(daemon):
    # Both runs wait for a file only the other creates: they finish only if they overlap.
    async def main():
        a, b = AsyncSandbox(daemon.url, "a-pair-1"), AsyncSandbox(daemon.url, "a-pair-2")
        code = ("import os, time\nopen('/workspace/%s', 'w').close()\n"
                "t = time.time() + 120\n"
                "while time.time() < t and not os.path.exists('/workspace/go'):\n"
                "    time.sleep(0.05)\nos.path.exists('/workspace/go')")
        try:
            await a.create()
            await b.create()

            async def relay():  # copies each sandbox's "ready" file to the other as "go"
                pending = {a: b, b: a}
                while pending:
                    for src, dst in list(pending.items()):
                        if [f for f in await src.list_files() if f.name == "ready"]:
                            await dst.write_file("go", "")
                            del pending[src]
                    await asyncio.sleep(0.05)
            ra, rb, _ = await asyncio.gather(a.run_code(code % "ready"),
                                             b.run_code(code % "ready"), relay())
            assert (ra.text, rb.text) == ("True", "True")
        finally:
            await a.destroy()
            await b.destroy()
    asyncio.run(main())


def test_cancelled_run_is_interrupted_in_the_sandbox(asbx):
    async def main():
        started = asyncio.Event()
        seen = []

        def on_stdout(text):
            seen.append(text)
            started.set()
        task = asyncio.ensure_future(asbx.run_code(
            "import time\nprint('start', flush=True)\nfor _ in range(6000):\n    time.sleep(0.1)\n"
            "print('not reached')", on_stdout=on_stdout))
        await asyncio.wait_for(started.wait(), 120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The context is free again: were the run not interrupted this would queue behind it
        # for ten minutes and hit its own timeout.
        ex = await asbx.run_code("1 + 1", timeout=120)
        assert ex.error is None and ex.text == "2"
        assert seen == ["start\n"]
    asyncio.run(main())
