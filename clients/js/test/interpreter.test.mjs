// interpreter.test.mjs — code contexts and runs against a real daemon, including the
// Cloudflare documentation's examples with only the import and getSandbox line changed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getSandbox, parseSSEStream, Result, ContextNotFoundError, ValidationError } from "../dist/index.js";
import { startDaemon } from "./support/daemon.mjs";

let daemon;
let n = 0;
const fresh = () => getSandbox(daemon.url, `interp-${process.pid}-${++n}`);

before(async () => { daemon = await startDaemon(); });
after(async () => { await daemon?.stop(); });

describe("Cloudflare doc examples", () => {
  test("state persists between runs in a context", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python" });
    await sandbox.runCode("import numpy as np\ndata = [1, 2, 3]", { context: ctx });
    const result = await sandbox.runCode("np.mean(data)", { context: ctx });
    assert.equal(result.results[0].text, "2.0");
    assert.equal(result.success, true);
    assert.equal(result.error, null);
    assert.deepEqual(result.formats, ["text"]);
    assert.equal(result.executionCount, 2);
    await sandbox.destroy();
  });

  test("a matplotlib plot is a png result", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python" });
    const execution = await sandbox.runCode(
      "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\nplt.show()",
      { context: ctx });
    const chart = execution.results.find((r) => r.png);
    assert.ok(chart, "a result with png");
    assert.ok(chart instanceof Result);
    assert.ok(chart.formats().includes("png"));
    assert.ok(execution.formats.includes("png"));
    assert.equal(execution.outputs.png, chart.png);
    const bytes = Buffer.from(execution.outputs.png, "base64");
    assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    await sandbox.destroy();
  });

  test("a pandas DataFrame has text and html; formats() keeps Cloudflare's order", async () => {
    const sandbox = fresh();
    const r = await sandbox.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2]})");
    assert.deepEqual(r.results[0].formats().slice(0, 2), ["text", "html"]);
    assert.match(r.outputs.html, /<table/);
    await sandbox.destroy();
  });

  test("streaming callbacks fire while the code runs", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python" });
    const seen = [];
    const t0 = Date.now();
    const stdout = [];
    const execution = await sandbox.runCode(
      "import sys, time\nfor i in range(3):\n    print(f'Step {i}', flush=True)\n    time.sleep(0.3)\n" +
      "print('warn', file=sys.stderr, flush=True)\n'done'",
      {
        context: ctx,
        stream: true,
        onOutput: (text, stream) => seen.push({ text, stream, at: Date.now() - t0 }),
        onStdout: (out) => { assert.equal(typeof out.timestamp, "number"); stdout.push(out.text); },
        onResult: (result) => { assert.ok(result instanceof Result); seen.push({ result: result.text }); },
      });
    const total = Date.now() - t0;
    assert.deepEqual(seen.filter((s) => s.stream === "stdout").map((s) => s.text).join(""),
      "Step 0\nStep 1\nStep 2\n");
    assert.ok(seen[0].at < total - 400, `first chunk at ${seen[0].at} ms of ${total} ms`);
    assert.equal(seen.filter((s) => s.stream === "stderr").map((s) => s.text).join(""), "warn\n");
    assert.equal(seen.at(-1).result, "'done'");
    assert.equal(stdout.join(""), execution.output);
    assert.equal(execution.output, "Step 0\nStep 1\nStep 2\n");
    assert.equal(execution.logs.stderr.join(""), "warn\n");
    await sandbox.destroy();
  });

  test("onError gets the exception; the run resolves with it", async () => {
    const sandbox = fresh();
    let got;
    const r = await sandbox.runCode("1 / 0", { onError: (e) => { got = e; } });
    assert.equal(got.name, "ZeroDivisionError");
    assert.equal(r.error.name, "ZeroDivisionError");
    assert.equal(r.error.message, "division by zero");
    assert.ok(r.error.traceback.length > 0);
    assert.equal(r.success, false);
    const plain = await sandbox.runCode("1 / 0");
    assert.deepEqual(plain.error, r.error);
    await sandbox.destroy();
  });

  test("listCodeContexts and deleteCodeContext", async () => {
    const sandbox = fresh();
    const py = await sandbox.createCodeContext({ language: "python" });
    const js = await sandbox.createCodeContext({ language: "javascript" });
    assert.ok(py.createdAt instanceof Date && py.lastUsed instanceof Date);
    assert.equal(py.cwd, "/workspace");
    let ids = (await sandbox.listCodeContexts()).map((c) => c.id);
    assert.ok(ids.includes(py.id) && ids.includes(js.id));
    await sandbox.deleteCodeContext(py.id);
    await sandbox.deleteCodeContext(js); // a context object works too
    ids = (await sandbox.listCodeContexts()).map((c) => c.id);
    assert.ok(!ids.includes(py.id) && !ids.includes(js.id));
    await assert.rejects(sandbox.runCode("1", { context: py }), ContextNotFoundError);
    await sandbox.destroy();
  });

  test("JavaScript and TypeScript contexts", async () => {
    const sandbox = fresh();
    const js = await sandbox.createCodeContext({ language: "javascript" });
    await sandbox.runCode("const xs = [1, 2, 3]; console.log('sum', xs.reduce((a, b) => a + b))", { context: js });
    const r = await sandbox.runCode("xs.map((x) => x * 2)", { context: js });
    assert.match(r.results[0].text, /2,\s*4,\s*6/);
    const ts = await sandbox.createCodeContext({ language: "typescript" });
    const t = await sandbox.runCode("interface P { x: number }\nconst p: P = { x: 21 };\np.x * 2", { context: ts });
    assert.equal(t.results[0].text, "42");
    const out = await sandbox.runCode("console.log('hi from ts')", { context: ts });
    assert.equal(out.output, "hi from ts\n");
    await sandbox.destroy();
  });
});

describe("runCode", () => {
  test("without a context: the language's default context, state kept", async () => {
    const sandbox = fresh();
    await sandbox.runCode("x = 5");
    assert.equal((await sandbox.runCode("x * 2")).results[0].text, "10");
    await sandbox.runCode("var y = 7", { language: "javascript" });
    assert.equal((await sandbox.runCode("y + 1", { language: "js" })).results[0].text, "8");
    await sandbox.destroy();
  });

  test("envVars apply to one run only; context envVars and cwd stay", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python", cwd: "/tmp", envVars: { A: "ctx", B: undefined } });
    const code = "import os\n(os.getcwd(), os.environ.get('A'), os.environ.get('RUN'))";
    const r1 = await sandbox.runCode(code, { context: ctx, envVars: { RUN: "yes" } });
    assert.equal(r1.results[0].text, "('/tmp', 'ctx', 'yes')");
    const r2 = await sandbox.runCode(code, { context: ctx });
    assert.equal(r2.results[0].text, "('/tmp', 'ctx', None)");
    await sandbox.destroy();
  });

  test("timeout is enforced by the server", async () => {
    const sandbox = fresh();
    const r = await sandbox.runCode("import time\ntime.sleep(10)", { timeout: 300 });
    assert.equal(r.error.name, "TimeoutError");
    await sandbox.destroy();
  });

  test("signal aborts the request and interrupts the run", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext();
    await sandbox.runCode("n = 0", { context: ctx });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const t0 = Date.now();
    await assert.rejects(
      sandbox.runCode("import time\nwhile True:\n    n += 1\n    time.sleep(0.01)", { context: ctx, signal: ac.signal }),
      { name: "AbortError" });
    assert.ok(Date.now() - t0 < 2000);
    // the context is free again (the loop was interrupted, not left running) and kept its state
    const r = await sandbox.runCode("n > 0", { context: ctx, timeout: 5000 });
    assert.equal(r.results[0].text, "True");
    await assert.rejects(sandbox.runCode("1", { signal: AbortSignal.abort() }), { name: "AbortError" });
    await sandbox.destroy();
  });

  test("Execution and Result are plain JSON", async () => {
    const sandbox = fresh();
    const r = await sandbox.runCode("print('a')\n{'k': 1}");
    const json = JSON.parse(JSON.stringify(r));
    assert.equal(json.logs.stdout.join(""), "a\n"); // chunking is the runtime's business
    assert.deepEqual(json.logs.stderr, []);
    assert.equal(json.results[0].text, "{'k': 1}");
    assert.equal(json.results[0].isMainResult, true);
    assert.equal(typeof json.id, "string");
    assert.deepEqual(json, r.toJSON());
    assert.deepEqual(structuredClone(r.toJSON()), r.toJSON());
    assert.equal(r.text, "{'k': 1}");
    await sandbox.destroy();
  });

  test("a bad language is a ValidationError", async () => {
    const sandbox = fresh();
    await assert.rejects(sandbox.createCodeContext({ language: "ruby" }), (e) =>
      e instanceof ValidationError && e.code === "VALIDATION_FAILED" && e.status === 400 && /ruby/.test(e.message));
    await sandbox.destroy();
  });
});

describe("runCodeStream", () => {
  test("typed events, end last; async-iterable and a ReadableStream", async () => {
    const sandbox = fresh();
    const events = [];
    for await (const ev of sandbox.runCodeStream("print('hi')\nimport sys; print('e', file=sys.stderr)\n6 * 7"))
      events.push(ev);
    const kinds = events.map((e) => e.type).filter((t, i, a) => t !== a[i - 1]); // chunks may split
    assert.deepEqual(kinds, ["stdout", "stderr", "result", "end"]);
    assert.equal(events.filter((e) => e.type === "stdout").map((e) => e.text).join(""), "hi\n");
    assert.equal(events.find((e) => e.type === "result").text, "42");
    assert.equal(events.at(-1).statePreserved, true);

    const stream = sandbox.runCodeStream("1 / 0");
    assert.ok(stream instanceof ReadableStream);
    const reader = stream.getReader();
    const err = (await reader.read()).value;
    assert.equal(err.type, "error");
    assert.equal(err.name, "ZeroDivisionError");
    assert.equal((await reader.read()).value.type, "end");
    assert.equal((await reader.read()).done, true);

    const viaParse = [];
    for await (const ev of parseSSEStream(await sandbox.runCodeStream("3"))) viaParse.push(ev.type);
    assert.deepEqual(viaParse, ["result", "end"]);
    await sandbox.destroy();
  });

  test("cancelling the stream interrupts the run", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext();
    let k = 0;
    for await (const ev of sandbox.runCodeStream(
      "import time\nfor i in range(1000):\n    print(i, flush=True)\n    time.sleep(0.05)", { context: ctx })) {
      assert.equal(ev.type, "stdout");
      if (++k === 2) break;
    }
    const t0 = Date.now();
    const r = await sandbox.runCode("'free'", { context: ctx });
    assert.equal(r.results[0].text, "'free'");
    assert.ok(Date.now() - t0 < 3000);
    await sandbox.destroy();
  });
});

describe("contexts", () => {
  test("restartCodeContext gives fresh state, same id and cwd", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ cwd: "/tmp" });
    await sandbox.runCode("z = 1", { context: ctx });
    const again = await sandbox.restartCodeContext(ctx);
    assert.equal(again.id, ctx.id);
    assert.equal(again.cwd, "/tmp");
    const r = await sandbox.runCode("z", { context: ctx });
    assert.equal(r.error.name, "NameError");
    const got = await sandbox.getCodeContext(ctx.id);
    assert.equal(got.executionCount, 1);
    await sandbox.destroy();
  });

  test("interruptCodeContext stops a running loop and keeps state", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext();
    const running = sandbox.runCode("import time\nk = 1\nwhile True: time.sleep(0.01)", { context: ctx });
    await new Promise((r) => setTimeout(r, 400));
    const res = await sandbox.interruptCodeContext(ctx);
    assert.equal(res.interrupted, true);
    const r = await running;
    assert.ok(r.error, "the run ended with an error");
    assert.equal((await sandbox.runCode("k", { context: ctx })).results[0].text, "1");
    const idle = await sandbox.interruptCodeContext(ctx.id);
    assert.deepEqual(idle, { interrupted: false, statePreserved: true });
    await sandbox.destroy();
  });
});

describe("sandbox.interpreter returns plain data", () => {
  test("runCode, onResult and contexts", async () => {
    const sandbox = fresh();
    const context = await sandbox.interpreter.createCodeContext({ language: "python" });
    await sandbox.interpreter.runCode("x = 2", { context });
    const results = [];
    const r = await sandbox.interpreter.runCode("x * 21", { context, onResult: (res) => results.push(res) });
    assert.equal(Object.getPrototypeOf(r), Object.prototype);
    assert.equal(r.results[0].text, "42");
    assert.equal(typeof results[0].formats, "undefined");
    assert.deepEqual(structuredClone(results[0]), { text: "42", isMainResult: true });
    assert.deepEqual(structuredClone(r), r);
    const plain = await sandbox.interpreter.runCode("x");
    assert.equal(Object.getPrototypeOf(plain), Object.prototype);
    assert.equal(plain.error.name, "NameError"); // the default context is another context
    const ids = (await sandbox.interpreter.listCodeContexts()).map((c) => c.id);
    assert.ok(ids.includes(context.id));
    const events = [];
    for await (const ev of sandbox.interpreter.runCodeStream("x", { context })) events.push(ev.type);
    assert.deepEqual(events, ["result", "end"]);
    await sandbox.interpreter.restartCodeContext(context);
    await sandbox.interpreter.interruptCodeContext(context);
    await sandbox.interpreter.deleteCodeContext(context.id);
    await sandbox.destroy();
  });
});

describe("executions: attach", () => {
  test("attach replays a finished run into the same Execution", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python" });
    const ex = await sandbox.runCode("print('a')\n6 * 7", { context: ctx, onStdout: () => {} });
    assert.match(ex.id, /^exe-/);
    assert.deepEqual(Object.keys(ex.usage).sort(), ["cpuMs", "peakMemoryBytes"]);
    const seen = [];
    const again = await sandbox.attach(ex.id, { onStdout: (m) => seen.push(m.text) });
    assert.ok(again instanceof Object && again.text === "42");
    assert.equal(again.id, ex.id);
    assert.equal(again.contextId, ctx.id);
    assert.equal(again.output, ex.output);
    assert.equal(seen.join(""), "a\n");
    const types = [];
    for await (const ev of sandbox.attachStream(ex.id, { after: 1 })) types.push(ev.type);
    assert.equal(types.at(-1), "end");
    assert.ok(types.length < 4);
    await assert.rejects(sandbox.attach("exe-0000000000000000"), (e) => e.status === 404);
    await sandbox.destroy();
  });

  test("attach follows a run that is still going, live to its end", async () => {
    const sandbox = fresh();
    const ctx = await sandbox.createCodeContext({ language: "python" });
    const first = sandbox.runCode("import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.3)\n'done'",
      { context: ctx });
    let running = null;
    for (let i = 0; i < 600 && !running; i++) {
      const q = await (await fetch(`${daemon.url}/v1/sandboxes/${sandbox.id}/contexts/${ctx.id}/queue`)).json();
      running = q.running;
      if (!running) await new Promise((ok) => setTimeout(ok, 50));
    }
    assert.ok(running, "the run started");
    const attached = await sandbox.attach(running.id);
    const original = await first;
    assert.equal(attached.text, "'done'");
    assert.equal(attached.output, original.output);
    assert.equal(original.id, running.id);
    const cancelled = await sandbox.cancelExecution(running.id);
    assert.deepEqual(cancelled, { id: running.id, cancelled: false, interrupted: false });
    await sandbox.destroy();
  });
});
