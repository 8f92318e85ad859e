// sandbox.test.mjs — lifecycle, commands and errors against a real daemon.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  getSandbox, parseSSEStream, errorFromResponse, SandboxdError, SandboxNotFoundError, ContextNotFoundError,
  ValidationError, UnauthorizedError, LimitReachedError, LanguageUnavailableError, FileNotFoundError,
  ProcessNotFoundError, ConflictError, PayloadTooLargeError, DiskFullError, MemoryLimitError, InternalError, NetworkError, NotFoundError,
} from "../dist/index.js";
import { startDaemon } from "./support/daemon.mjs";

let daemon;
let n = 0;
const fresh = () => getSandbox(daemon.url, `sbx-${process.pid}-${++n}`);

before(async () => { daemon = await startDaemon(); });
after(async () => { await daemon?.stop(); });

describe("lifecycle", () => {
  test("getSandbox sends nothing; the first call creates it; destroy removes it", async () => {
    const sandbox = fresh();
    assert.equal((await fetch(`${daemon.url}/v1/sandboxes/${sandbox.id}`)).status, 404);
    const info = await sandbox.info();
    assert.equal(info.id, sandbox.id);
    assert.equal(typeof info.limits.memoryMb, "number");
    await sandbox.destroy();
    assert.equal((await fetch(`${daemon.url}/v1/sandboxes/${sandbox.id}`)).status, 404);
    await sandbox.destroy(); // destroying again is not an error
    assert.equal((await sandbox.exec("echo back")).stdout, "back\n"); // used again: created afresh
    await sandbox.destroy();
  });

  test("two objects for one id share the sandbox; a destroyed one is SandboxNotFoundError", async () => {
    const a = fresh();
    const b = getSandbox({ url: daemon.url }, a.id);
    await a.runCode("shared = 1");
    assert.equal((await b.runCode("shared")).results[0].text, "1");
    await b.destroy();
    await assert.rejects(a.listCodeContexts(), (e) =>
      e instanceof SandboxNotFoundError && e instanceof SandboxdError && e.code === "SANDBOX_NOT_FOUND" &&
      e.status === 404 && e.message.includes(a.id));
  });

  test("options go with the create", async () => {
    const sandbox = getSandbox(daemon.url, `opts-${process.pid}`, { limits: { memoryMb: 256 } });
    assert.equal((await sandbox.info()).limits.memoryMb, 256);
    await sandbox.destroy();
  });
});

describe("exec", () => {
  test("exit code, stdout, stderr, env, cwd, stdin", async () => {
    const sandbox = fresh();
    const r = await sandbox.exec("echo out; echo err >&2; exit 3");
    assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.success, r.timedOut], ["out\n", "err\n", 3, false, false]);
    const e = await sandbox.exec("echo $GREETING; pwd; cat", { env: { GREETING: "hi" }, cwd: "/tmp", stdin: "piped" });
    assert.equal(e.stdout, "hi\n/tmp\npiped");
    assert.equal(e.success, true);
    const t = await sandbox.exec("sleep 5", { timeout: 200 });
    assert.equal(t.timedOut, true);
    assert.equal(t.success, false);
    await sandbox.destroy();
  });

  test("onOutput streams while the command runs", async () => {
    const sandbox = fresh();
    const seen = [];
    const t0 = Date.now();
    const r = await sandbox.exec("echo one; sleep 0.4; echo two >&2; sleep 0.1", {
      stream: true, onOutput: (stream, data) => seen.push({ stream, data, at: Date.now() - t0 }),
    });
    assert.deepEqual(seen.map((s) => [s.stream, s.data]), [["stdout", "one\n"], ["stderr", "two\n"]]);
    assert.ok(seen[0].at < Date.now() - t0 - 300);
    assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.success], ["one\n", "two\n", 0, true]);
    await sandbox.destroy();
  });

  test("execStream gives Cloudflare's ExecEvents", async () => {
    const sandbox = fresh();
    const events = [];
    for await (const ev of parseSSEStream(await sandbox.execStream("echo a; echo b >&2; exit 4"))) events.push(ev);
    assert.deepEqual(events.slice(0, 2), [{ type: "stdout", data: "a\n" }, { type: "stderr", data: "b\n" }]);
    assert.equal(events[2].type, "complete");
    assert.equal(events[2].exitCode, 4);
    await sandbox.destroy();
  });

  test("signal aborts exec", async () => {
    const sandbox = fresh();
    await assert.rejects(sandbox.exec("sleep 5", { signal: AbortSignal.timeout(200) }), { name: "TimeoutError" });
    await sandbox.destroy();
  });
});

describe("errors", () => {
  test("every API code maps to its class; unknown codes stay SandboxdError", () => {
    const rows = [
      ["INVALID_JSON", 400, ValidationError], ["VALIDATION_FAILED", 400, ValidationError],
      ["UNAUTHORIZED", 401, UnauthorizedError], ["SANDBOX_NOT_FOUND", 404, SandboxNotFoundError],
      ["CONTEXT_NOT_FOUND", 404, ContextNotFoundError], ["FILE_NOT_FOUND", 404, FileNotFoundError],
      ["PROCESS_NOT_FOUND", 404, ProcessNotFoundError], ["NOT_FOUND", 404, NotFoundError],
      ["CONFLICT", 409, ConflictError], ["PAYLOAD_TOO_LARGE", 413, PayloadTooLargeError],
      ["LIMIT_REACHED", 429, LimitReachedError], ["INTERNAL_ERROR", 500, InternalError],
      ["LANGUAGE_UNAVAILABLE", 501, LanguageUnavailableError], ["SOMETHING_NEW", 418, SandboxdError],
      ["DISK_FULL", 507, DiskFullError], ["MEMORY_LIMIT", 507, MemoryLimitError],
    ];
    for (const [code, status, Cls] of rows) {
      const e = errorFromResponse(status, JSON.stringify({ code, message: `m ${code}` }));
      assert.ok(e instanceof Cls && e instanceof SandboxdError, code);
      assert.deepEqual([e.code, e.status, e.message, e.name], [code, status, `m ${code}`, Cls.name]);
      assert.deepEqual(JSON.parse(JSON.stringify(e)), { name: Cls.name, code, status, message: `m ${code}` });
    }
    const html = errorFromResponse(502, "<html>bad gateway</html>");
    assert.deepEqual([html.code, html.message], ["HTTP_502", "<html>bad gateway</html>"]);
  });

  test("ids and paths a URL would resolve away are refused before sending", async () => {
    const sandbox = fresh();
    await assert.rejects(sandbox.deleteCodeContext(".."), ValidationError);
    await assert.rejects(sandbox.killProcess("."), ValidationError);
    await assert.rejects(sandbox.readFile("a/../../other/files/x"), ValidationError);
    assert.throws(() => getSandbox(daemon.url, ".."), ValidationError);
    await sandbox.destroy();
  });

  test("an unreachable daemon is a NetworkError", async () => {
    const sandbox = getSandbox("http://127.0.0.1:1", "x");
    await assert.rejects(sandbox.exec("true"), (e) => e instanceof NetworkError && e.code === "NETWORK_ERROR");
  });

  test("token, UnauthorizedError and LimitReachedError", async () => {
    const locked = await startDaemon(["--token", "s3cret", "--max-sandboxes", "1"]);
    try {
      await assert.rejects(getSandbox(locked.url, "a").exec("true"), (e) =>
        e instanceof UnauthorizedError && e.status === 401 && e.code === "UNAUTHORIZED");
      await assert.rejects(getSandbox({ url: locked.url, token: "wrong" }, "a").exec("true"), UnauthorizedError);
      const ok = getSandbox({ url: locked.url, token: "s3cret" }, "a");
      assert.equal((await ok.runCode("1 + 1")).results[0].text, "2");
      await assert.rejects(getSandbox({ url: locked.url, token: "s3cret" }, "b").exec("true"), (e) =>
        e instanceof LimitReachedError && e.status === 429);
    } finally {
      await locked.stop();
    }
  });
});
