// interpreter.test.mjs — the published @e2b/code-interpreter SDK (runCode, contexts) against a
// real sandboxd, with no change but Sandbox.connect(id, {debug: true, sandboxUrl}).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Sandbox } from "@e2b/code-interpreter";
import { startDaemon } from "./support/daemon.mjs";

let daemon, sbx;

before(async () => {
  daemon = await startDaemon();
  sbx = await daemon.connect("e2b-interp");
});
after(async () => { await daemon.stop(); });

describe("runCode", () => {
  test("state persists across runs; text, logs and executionCount", async () => {
    await sbx.runCode("x = 41");
    const r = await sbx.runCode("print('hello')\nx + 1");
    assert.equal(r.text, "42");
    assert.equal(r.logs.stdout.join(""), "hello\n");
    assert.deepEqual(r.logs.stderr, []);
    assert.equal(r.error, undefined);
    assert.equal(r.results.length, 1);
    assert.equal(r.results[0].isMainResult, true);
    assert.ok(r.executionCount >= 2, `executionCount ${r.executionCount}`);
  });

  test("a string result loses its quotes, as E2B's does", async () => {
    const r = await sbx.runCode("import os\nos.getcwd()");
    assert.equal(r.text, "/workspace");
  });

  test("stdout and stderr callbacks arrive while the code runs", async () => {
    const seen = [];
    let done = false;
    const p = sbx.runCode("import sys, time\nprint('first', flush=True)\ntime.sleep(1.5)\n" +
      "print('oops', file=sys.stderr, flush=True)\nprint('last')", {
      onStdout: (m) => seen.push({ out: m.line, done }),
      onStderr: (m) => seen.push({ err: m.line, done }),
    }).then((r) => { done = true; return r; });
    const r = await p;
    assert.match(seen[0].out, /^first/);
    assert.equal(seen[0].done, false, "the first callback came before the run ended");
    assert.ok(seen.some((s) => s.err !== undefined && s.err.startsWith("oops")));
    assert.equal(r.logs.stdout.join(""), "first\nlast\n");
    assert.equal(r.logs.stderr.join(""), "oops\n");
  });

  test("a runtime error: name, value, one traceback string", async () => {
    const errors = [];
    const r = await sbx.runCode("y = 1\ny / 0", { onError: (e) => errors.push(e) });
    assert.equal(r.error.name, "ZeroDivisionError");
    assert.equal(r.error.value, "division by zero");
    assert.equal(typeof r.error.traceback, "string");
    assert.match(r.error.traceback, /y \/ 0/);
    assert.equal(errors.length, 1);
    const again = await sbx.runCode("y");
    assert.equal(again.text, "1", "state survives the error");
  });

  test("a syntax error is an error", async () => {
    const r = await sbx.runCode("def (:");
    assert.equal(r.error.name, "SyntaxError");
    assert.equal(r.results.length, 0);
  });

  test("rich outputs: png from matplotlib, html and data from a DataFrame, json", async () => {
    const fig = await sbx.runCode(
      "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
      "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()");
    assert.equal(fig.error, undefined, JSON.stringify(fig.error));
    const png = fig.results.find((x) => x.png);
    assert.ok(png, JSON.stringify(fig.results.map((x) => Object.keys(x.raw))));
    assert.equal(Buffer.from(png.png, "base64").subarray(1, 4).toString(), "PNG");

    const df = await sbx.runCode("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})");
    assert.equal(df.results.length, 1, "one result with all its MIME keys");
    const d = df.results[0];
    assert.match(d.html, /<table/);
    assert.match(d.text, /a\s+b/);
    assert.ok(d.formats().includes("html"));

    const js = await sbx.runCode("from IPython.display import JSON, HTML, display\n" +
      "display(HTML('<b>hi</b>'))\n{'k': [1, 2]}");
    const html = js.results.find((x) => x.html);
    assert.equal(html.html, "<b>hi</b>");
    assert.equal(html.isMainResult, false);
    const main = js.results.find((x) => x.isMainResult);
    assert.equal(main.text, "{'k': [1, 2]}");
  });

  test("envs apply to one run only", async () => {
    const r = await sbx.runCode("import os\nos.environ.get('E2B_T')", { envs: { E2B_T: "v1" } });
    assert.equal(r.text, "v1");
    const later = await sbx.runCode("import os\nos.environ.get('E2B_T', 'unset')");
    assert.equal(later.text, "unset");
  });

  test("a client timeout interrupts the run and keeps the state", async () => {
    await sbx.runCode("kept = 7");
    await assert.rejects(sbx.runCode("import time\ntime.sleep(300)", { timeoutMs: 1500 }),
      (e) => /timed out/i.test(e.message));
    // the interrupted run ends soon; the next one waits for it, then sees the state
    const r = await sbx.runCode("kept * 6", { timeoutMs: 60000 });
    assert.equal(r.text, "42");
  });

  test("a run abandoned while queued behind another never runs", async () => {
    const ctx = await sbx.createCodeContext();
    const first = sbx.runCode("import time\ntime.sleep(3)\n'first'", { context: ctx });
    await new Promise((ok) => setTimeout(ok, 300));
    await assert.rejects(sbx.runCode("marker = 1", { context: ctx, timeoutMs: 800 }),
      (e) => /timed out/i.test(e.message));
    assert.equal((await first).text, "first");
    const r = await sbx.runCode("'marker' in globals()", { context: ctx });
    assert.equal(r.text, "False");
    await sbx.removeCodeContext(ctx);
  });

  test("javascript and typescript by language", async () => {
    const js = await sbx.runCode("const a = 20; a * 2 + 2", { language: "js" });
    assert.equal(js.error, undefined, JSON.stringify(js.error));
    assert.equal(js.text, "42");
    const ts = await sbx.runCode("const n: number = 6; n * 7", { language: "typescript" });
    assert.equal(ts.error, undefined, JSON.stringify(ts.error));
    assert.equal(ts.text, "42");
  });
});

describe("contexts", () => {
  test("create, run in it, list (with the defaults), restart, remove", async () => {
    const ctx = await sbx.createCodeContext({ language: "python", cwd: "/tmp" });
    assert.equal(ctx.language, "python");
    assert.equal(ctx.cwd, "/tmp");
    await sbx.runCode("z = 5", { context: ctx });
    const cwd = await sbx.runCode("import os\nos.getcwd()", { context: ctx });
    assert.equal(cwd.text, "/tmp");
    const other = await sbx.runCode("'z' in globals()");
    assert.equal(other.text, "False", "the default context does not see z");

    const list = await sbx.listCodeContexts();
    assert.ok(list.some((c) => c.id === ctx.id));
    assert.ok(list.some((c) => c.language === "python" && c.id !== ctx.id), "python default");
    assert.ok(list.some((c) => c.language === "javascript"), "javascript default");

    await sbx.restartCodeContext(ctx);
    const fresh = await sbx.runCode("'z' in globals()", { context: ctx });
    assert.equal(fresh.text, "False");

    await sbx.removeCodeContext(ctx.id);
    const gone = await sbx.listCodeContexts();
    assert.ok(!gone.some((c) => c.id === ctx.id));
    await assert.rejects(sbx.runCode("1", { context: ctx }), (e) => e.name === "NotFoundError");
  });

  test("a javascript context keeps its state", async () => {
    const ctx = await sbx.createCodeContext({ language: "javascript" });
    assert.equal(ctx.language, "javascript");
    await sbx.runCode("globalThis.k = 3", { context: ctx });
    const r = await sbx.runCode("k * 14", { context: ctx });
    assert.equal(r.text, "42");
    await sbx.removeCodeContext(ctx);
  });

  test("unknown contexts are NotFoundError on every route", async () => {
    await assert.rejects(sbx.restartCodeContext("ctx-nope"), (e) => e.name === "NotFoundError");
    await assert.rejects(sbx.removeCodeContext("ctx-nope"), (e) => e.name === "NotFoundError");
  });

  test("sandboxes are separate and shared with /v1", async () => {
    const other = await Sandbox.connect("e2b-interp-2", { debug: true, sandboxUrl: daemon.url });
    await other.runCode("only_here = 1");
    const r = await sbx.runCode("'only_here' in globals()");
    assert.equal(r.text, "False");
    const res = await fetch(`${daemon.url}/v1/sandboxes/e2b-interp-2`);
    assert.equal(res.status, 200);
  });
});
