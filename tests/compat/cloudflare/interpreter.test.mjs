// The Cloudflare Code Interpreter guide, run by the published @cloudflare/sandbox client
// (CodeInterpreter over SandboxClient.interpreter) against a real sandboxd.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startDaemon } from "./daemon.mjs";

let d, ci, low;
before(async () => {
  d = await startDaemon();
  ci = d.interpreter("cf-interp");
  low = d.client("cf-interp").interpreter;
});
after(async () => d.stop());

test("create a Python and a JavaScript context (guide: create an execution context)", async () => {
  const py = await ci.createCodeContext({ language: "python" });
  assert.match(py.id, /^ctx-/);
  assert.equal(py.language, "python");
  assert.equal(py.cwd, "/workspace");
  assert.ok(py.createdAt instanceof Date && !isNaN(py.createdAt));
  const js = await ci.createCodeContext({ language: "javascript" });
  assert.equal(js.language, "javascript");
  const ids = (await ci.listCodeContexts()).map((c) => c.id);
  assert.ok(ids.includes(py.id) && ids.includes(js.id));
});

test("run code and keep state across runs (guide: execute code, state)", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  const hello = await ci.runCode('print("Hello from Python!")', { context: ctx });
  assert.deepEqual(hello.logs.stdout.join(""), "Hello from Python!\n");
  assert.equal(hello.error, undefined);
  await ci.runCode("data = [1, 2, 3, 4, 5]", { context: ctx });
  const sum = await ci.runCode("sum(data)", { context: ctx });
  assert.equal(sum.results.length, 1);
  assert.equal(sum.results[0].text, "15");
  assert.deepEqual(sum.results[0].formats(), ["text"]);
  // no "Out[1]:" echo in stdout
  assert.deepEqual(sum.logs.stdout, []);
  const json = sum.toJSON();
  assert.equal(json.code, "sum(data)");
  assert.equal(json.results[0].text, "15");
});

test("rich outputs: png chart, html and text of a DataFrame, json (guide: rich outputs)", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  const chart = await ci.runCode(
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('Squares')\nplt.show()",
    { context: ctx });
  assert.equal(chart.error, undefined);
  const png = chart.results.find((r) => r.png);
  assert.ok(png, "a png result");
  assert.equal(Buffer.from(png.png, "base64").subarray(1, 4).toString(), "PNG");
  assert.ok(png.formats().includes("png"));

  const df = await ci.runCode(
    "import pandas as pd\ndf = pd.DataFrame({'name': ['Alice', 'Bob'], 'age': [25, 30]})\ndf",
    { context: ctx });
  assert.equal(df.results.length, 1);
  assert.match(df.results[0].html, /<table/);
  assert.match(df.results[0].text, /Alice/);
  assert.deepEqual(df.results[0].formats().slice(0, 2), ["text", "html"]);

  const j = await ci.runCode("from IPython.display import JSON, HTML, display\n" +
    "display(HTML('<h1>Hi</h1>'))\ndisplay(JSON({'key': 'value', 'n': [1, 2]}))", { context: ctx });
  assert.equal(j.results[0].html, "<h1>Hi</h1>");
  assert.deepEqual(j.results[1].json, { key: "value", n: [1, 2] });
});

test("streaming callbacks arrive while the code runs (guide: streaming output)", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  const events = [];
  let done = false;
  let firstBeforeEnd = null;
  // The cell prints, then blocks until a marker file appears that only the test creates after
  // it has seen the first callback: the run can only end if the callback came while it ran.
  const marker = "/tmp/cf-stream-marker";
  const run = ci.runCode(
    `import os, time, sys\nprint("first", flush=True)\nprint("warn", file=sys.stderr, flush=True)\n` +
    `for _ in range(600):\n    if os.path.exists(${JSON.stringify(marker)}): break\n    time.sleep(0.05)\n` +
    `print("second")\n42`,
    {
      context: ctx,
      onStdout: async (o) => {
        events.push(["stdout", o.text]);
        if (firstBeforeEnd === null) {
          firstBeforeEnd = !done;
          await d.client("cf-interp").commands.execute(`touch ${marker}`, "streamer");
        }
      },
      onStderr: (o) => events.push(["stderr", o.text]),
      onResult: (r) => events.push(["result", r.text]),
    });
  const exec = await run;
  done = true;
  assert.equal(firstBeforeEnd, true);
  assert.equal(exec.error, undefined);
  assert.deepEqual(events.filter((e) => e[0] === "stdout").map((e) => e[1]).join(""), "first\nsecond\n");
  assert.deepEqual(events.filter((e) => e[0] === "stderr").map((e) => e[1]).join(""), "warn\n");
  assert.deepEqual(events.at(-1), ["result", "42"]);
});

test("runCodeStream gives the raw SSE with execution_complete last", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  const stream = await ci.runCodeStream("print('x')\n7", { context: ctx });
  const text = await new Response(stream).text();
  const evs = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
  const types = evs.map((e) => e.type);
  assert.deepEqual(types.filter((t) => t !== "stdout"), ["result", "execution_complete"]);
  assert.equal(evs.filter((e) => e.type === "stdout").map((e) => e.text).join(""), "x\n");
  assert.equal(evs.find((e) => e.type === "result").text, "7");
});

test("runtime and syntax errors (guide: error handling)", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  const errs = [];
  const r = await ci.runCode("x = 1 / 0", { context: ctx, onError: (e) => errs.push(e) });
  assert.equal(r.error.name, "ZeroDivisionError");
  assert.equal(r.error.message, "division by zero");
  assert.ok(Array.isArray(r.error.traceback));
  assert.ok(r.error.traceback.some((l) => l.includes("x = 1 / 0")));
  assert.equal(errs.length, 1);
  const s = await ci.runCode("def f(:\n  pass", { context: ctx });
  assert.equal(s.error.name, "SyntaxError");
  assert.ok(s.error.message.length > 0);
  // the context survives both
  assert.equal((await ci.runCode("1 + 1", { context: ctx })).results[0].text, "2");
});

test("JavaScript and TypeScript contexts keep state", async () => {
  const js = await ci.createCodeContext({ language: "javascript" });
  await ci.runCode("globalThis.counter = 40", { context: js });
  const r = await ci.runCode("console.log('js says hi'); counter + 2", { context: js });
  assert.deepEqual(r.logs.stdout.join(""), "js says hi\n");
  assert.equal(r.results[0].text, "42");
  const ts = await ci.createCodeContext({ language: "typescript" });
  const t = await ci.runCode("const n: number = 21; n * 2", { context: ts });
  assert.equal(t.error, undefined);
  assert.equal(t.results[0].text, "42");
  const e = await ci.runCode("throw new TypeError('nope')", { context: js });
  assert.equal(e.error.name, "TypeError");
  assert.equal(e.error.message, "nope");
});

test("runCode without a context uses the language's default context", async () => {
  const fresh = d.interpreter("cf-defaults");
  const a = await fresh.runCode("y = 5");
  assert.equal(a.error, undefined);
  const b = await fresh.runCode("y * 2");
  assert.equal(b.results[0].text, "10");
  // the guide's literal `{ context: context.id }` sends no context_id: the default context
  await fresh.runCode("z = 1", { context: "ignored-by-the-client" });
  const c = await fresh.runCode("z + 1", { context: "ignored-by-the-client" });
  assert.equal(c.error, undefined);
  assert.equal(c.results[0].text, "2");
});

test("context env_vars apply, and timeout_ms is honoured", async () => {
  const ctx = await ci.createCodeContext({ language: "python", envVars: { GREETING: "hej" } });
  const r = await ci.runCode("import os\nos.environ['GREETING']", { context: ctx });
  assert.equal(r.results[0].text, "'hej'");
  const seen = [];
  await low.runCodeStream(ctx.id, "import time\ntime.sleep(30)", undefined, { onError: (e) => seen.push(e) }, 500);
  assert.equal(seen.length, 1);
  assert.equal(seen[0].name, "TimeoutError");
  assert.ok(seen[0].message.length > 0);
});

test("delete a context; running in it is ContextNotFoundError with a message", async () => {
  const ctx = await ci.createCodeContext({ language: "python" });
  await ci.deleteCodeContext(ctx.id);
  assert.ok(!(await ci.listCodeContexts()).some((c) => c.id === ctx.id));
  await assert.rejects(ci.runCode("1", { context: ctx }), (err) => {
    assert.equal(err.name, "ContextNotFoundError");
    assert.equal(err.code, "CONTEXT_NOT_FOUND");
    assert.equal(err.httpStatus, 404);
    assert.match(err.message, new RegExp(ctx.id));
    return true;
  });
  await assert.rejects(ci.deleteCodeContext(ctx.id), (err) => err.code === "CONTEXT_NOT_FOUND");
});

test("a language the server does not know is VALIDATION_FAILED (the client checks first)", async () => {
  await assert.rejects(ci.createCodeContext({ language: "ruby" }), /Unsupported language/);
  await assert.rejects(low.createCodeContext({ language: "ruby" }), (err) => {
    assert.equal(err.code, "VALIDATION_FAILED");
    assert.equal(err.httpStatus, 400);
    return true;
  });
});

test("ping and version", async () => {
  const c = d.client("cf-interp");
  assert.equal(await c.utils.ping(), "pong");
  assert.match(await c.utils.getVersion(), /^sandboxd-/);
});

test("with --token the client passes it in defaultHeaders; without it the error says so", async () => {
  const t = await startDaemon("--token", "s3cret");
  try {
    const ok = t.interpreter("cf-token", { Authorization: "Bearer s3cret" });
    const r = await ok.runCode("6 * 7");
    assert.equal(r.results[0].text, "42");
    await assert.rejects(t.interpreter("cf-token").runCode("1"), (err) => {
      assert.equal(err.code, "UNAUTHORIZED");
      assert.equal(err.httpStatus, 401);
      assert.match(err.message, /Authorization: Bearer/);
      return true;
    });
  } finally {
    await t.stop();
  }
});
