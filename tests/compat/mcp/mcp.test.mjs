// mcp.test.mjs — the official MCP SDK's Client (@modelcontextprotocol/sdk, pinned by
// package-lock.json) against a real sandboxd, over both transports: Streamable HTTP
// (/mcp) and stdio (`sbx mcp`, which forwards to /mcp). Every tool, state across calls,
// a plot as image content, a raising cell as a tool error, and the token.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startDaemon, texts } from "./daemon.mjs";

const TOOLS = ["create_context", "exec", "list_contexts", "list_files", "read_file", "run_code", "write_file"];

let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

for (const transport of ["http", "stdio"]) {
  describe(`over ${transport}`, () => {
    let c;
    const sandbox = `mcp-${transport}`;
    before(async () => { c = transport === "http" ? await d.httpClient() : await d.stdioClient(); });
    after(async () => { await c.close(); });

    test("initialize negotiated the SDK's revision and named the server", () => {
      assert.equal(c.getServerVersion().name, "sandboxd");
      assert.ok(c.getServerCapabilities().tools);
    });

    test("tools/list has every tool with a JSON Schema", async () => {
      const { tools } = await c.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
      const run = tools.find((t) => t.name === "run_code");
      assert.equal(run.inputSchema.type, "object");
      assert.deepEqual(run.inputSchema.required, ["code"]);
      assert.deepEqual(Object.keys(run.inputSchema.properties).sort(),
        ["code", "context", "language", "sandbox", "timeoutMs"]);
    });

    test("run_code 1+1 is 2, and state persists across calls", async () => {
      const r = await c.callTool({ name: "run_code", arguments: { code: "x = 40\n1+1", sandbox } });
      assert.equal(r.isError, false);
      assert.equal(texts(r), "2");
      const r2 = await c.callTool({ name: "run_code", arguments: { code: "print(x + 2)", sandbox } });
      assert.equal(texts(r2), "42\n");
      assert.equal(r2.structuredContent.contextId, r.structuredContent.contextId);
    });

    test("run_code streams its output as progress notifications", async () => {
      const seen = [];
      const r = await c.callTool({ name: "run_code", arguments: { sandbox,
        code: "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.2)" } },
      undefined, { onprogress: (p) => seen.push(p.message) });
      assert.equal(texts(r), "tick 0\ntick 1\ntick 2\n");
      assert.equal(seen.join(""), "tick 0\ntick 1\ntick 2\n");
    });

    {
      test("an aborted call interrupts its run (notifications/cancelled); the state is kept", async () => {
        const ac = new AbortController();
        const p = c.callTool({ name: "run_code", arguments: { sandbox,
          code: "import time\nprint('started', flush=True)\ntime.sleep(600)" } },
        undefined, { signal: ac.signal, onprogress: (m) => { if (m.message.includes("started")) ac.abort(); } });
        await assert.rejects(p, /abort/i);
        const r = await c.callTool({ name: "run_code", arguments: { code: "x", sandbox } });
        assert.equal(texts(r), "40");
      });
    }

    test("a matplotlib figure is image content (PNG)", async () => {
      const r = await c.callTool({ name: "run_code", arguments: { sandbox,
        code: "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()" } });
      assert.equal(r.isError, false);
      const img = r.content.find((x) => x.type === "image");
      assert.ok(img, JSON.stringify(r.content).slice(0, 300));
      assert.equal(img.mimeType, "image/png");
      assert.equal(Buffer.from(img.data, "base64").subarray(1, 4).toString(), "PNG");
    });

    test("a raising cell is a tool error naming the exception", async () => {
      const r = await c.callTool({ name: "run_code", arguments: { code: "1/0", sandbox } });
      assert.equal(r.isError, true);
      assert.match(texts(r), /^ZeroDivisionError: division by zero/);
    });

    test("exec runs a shell command", async () => {
      const r = await c.callTool({ name: "exec", arguments: { command: "echo hi; exit 3", sandbox } });
      assert.equal(r.isError, true);
      assert.equal(r.structuredContent.stdout, "hi\n");
      assert.equal(r.structuredContent.exitCode, 3);
      const ok = await c.callTool({ name: "exec", arguments: { command: "pwd", sandbox } });
      assert.equal(ok.isError, false);
      assert.match(texts(ok), /^\/workspace\n/);
    });

    test("write_file, read_file and list_files", async () => {
      const w = await c.callTool({ name: "write_file", arguments: { path: "notes/a.txt", content: "héllo\n", sandbox } });
      assert.equal(w.isError, false, texts(w));
      const r = await c.callTool({ name: "read_file", arguments: { path: "/workspace/notes/a.txt", sandbox } });
      assert.equal(texts(r), "héllo\n");
      const l = await c.callTool({ name: "list_files", arguments: { path: "notes", sandbox } });
      assert.deepEqual(l.structuredContent.entries.map((e) => [e.name, e.type, e.size]), [["a.txt", "file", 7]]);
      const missing = await c.callTool({ name: "read_file", arguments: { path: "nope.txt", sandbox } });
      assert.equal(missing.isError, true);
      assert.match(texts(missing), /^FILE_NOT_FOUND/);
    });

    test("create_context makes a context of its own; list_contexts shows it", async () => {
      const cr = await c.callTool({ name: "create_context", arguments: { sandbox } });
      assert.equal(cr.isError, false, texts(cr));
      const id = cr.structuredContent.id;
      assert.match(id, /^ctx-/);
      const r = await c.callTool({ name: "run_code", arguments: { code: "'x' in dir()", context: id, sandbox } });
      assert.equal(texts(r), "False");
      const l = await c.callTool({ name: "list_contexts", arguments: { sandbox } });
      assert.ok(l.structuredContent.contexts.some((x) => x.id === id));
    });
  });
}

test("with a token: the SDK client needs it, over both transports", async () => {
  const t = await startDaemon("--token", "s3cret");
  try {
    await assert.rejects(t.httpClient(), /401|Unauthorized|UNAUTHORIZED/i);
    await assert.rejects(t.stdioClient("wrong"), /401|Unauthorized|UNAUTHORIZED/i);
    for (const c of [await t.httpClient("s3cret"), await t.stdioClient("s3cret")]) {
      const r = await c.callTool({ name: "run_code", arguments: { code: "1+1" } });
      assert.equal(texts(r), "2");
      await c.close();
    }
  } finally {
    await t.stop();
  }
});
