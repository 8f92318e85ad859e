// Commands and sessions through the published client (SandboxClient.commands, .utils).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { parseSSEStream } from "@cloudflare/sandbox";
import { startDaemon } from "./daemon.mjs";

let d, c;
before(async () => {
  d = await startDaemon();
  c = d.client("cf-commands");
});
after(async () => d.stop());

test("exec returns stdout, stderr and the exit code", async () => {
  const r = await c.commands.execute("echo hi; echo oops >&2", "plain");
  assert.equal(r.success, true);
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, "hi");
  assert.equal(r.stderr, "oops\n");
  assert.equal(r.command, "echo hi; echo oops >&2");
  const f = await c.commands.execute("exit 7", "plain");
  assert.equal(f.success, false);
  assert.equal(f.exitCode, 7);
});

test("a session keeps cd and export between calls and survives exit 3", async () => {
  await c.utils.createSession({ id: "sess-a", cwd: "/workspace", env: { FROM_SESSION: "yes" } });
  let r = await c.commands.execute("mkdir -p proj/src && cd proj && export BUILD=release", "sess-a");
  assert.equal(r.exitCode, 0);
  r = await c.commands.execute('pwd; echo "$BUILD $FROM_SESSION"', "sess-a");
  assert.equal(r.stdout, "/workspace/proj\nrelease yes");
  r = await c.commands.execute("cd src; exit 3", "sess-a");
  assert.equal(r.exitCode, 3);
  assert.equal(r.success, false);
  r = await c.commands.execute('pwd; echo "$BUILD"', "sess-a");
  assert.equal(r.stdout, "/workspace/proj/src\nrelease");
  // another session does not see it
  r = await c.commands.execute('pwd; echo "[$BUILD]"', "sess-b");
  assert.equal(r.stdout, "/workspace\n[]");
});

test("a call's env and cwd apply to that call only", async () => {
  await c.commands.execute("export KEEP=1", "sess-c");
  let r = await c.commands.execute('echo "$ONCE $KEEP"; pwd', "sess-c", { env: { ONCE: "x" }, cwd: "/tmp" });
  assert.equal(r.stdout, "x 1\n/tmp");
  r = await c.commands.execute('echo "[$ONCE] $KEEP"; pwd', "sess-c");
  assert.equal(r.stdout, "[] 1\n/workspace");
  // a call's value of a session variable does not replace the session's
  r = await c.commands.execute('echo "$KEEP"', "sess-c", { env: { KEEP: "for this call" } });
  assert.equal(r.stdout, "for this call");
  r = await c.commands.execute('echo "$KEEP"', "sess-c");
  assert.equal(r.stdout, "1");
});

test("creating a session twice is SESSION_ALREADY_EXISTS; deleting it forgets its state", async () => {
  await c.utils.createSession({ id: "sess-d" });
  await assert.rejects(c.utils.createSession({ id: "sess-d" }), (err) => {
    assert.equal(err.code, "SESSION_ALREADY_EXISTS");
    assert.equal(err.httpStatus, 409);
    return true;
  });
  await c.commands.execute("export GONE=soon", "sess-d");
  await c.utils.deleteSession("sess-d");
  const r = await c.commands.execute('echo "[$GONE]"', "sess-d");
  assert.equal(r.stdout, "[]");
});

test("a timeout is COMMAND_EXECUTION_ERROR", async () => {
  await assert.rejects(c.commands.execute("sleep 20", "plain", { timeoutMs: 300 }), (err) => {
    assert.equal(err.code, "COMMAND_EXECUTION_ERROR");
    assert.equal(err.httpStatus, 500);
    assert.match(err.message, /timeout after 300ms/);
    return true;
  });
});

test("executeStream streams start, output as it is written, then complete", async () => {
  await c.commands.execute("cd /tmp", "sess-s");
  const stream = await c.commands.executeStream("echo one; sleep 0.2; echo two >&2; pwd; exit 4", "sess-s");
  const events = [];
  for await (const ev of parseSSEStream(stream)) events.push(ev);
  assert.equal(events[0].type, "start");
  assert.equal(events.at(-1).type, "complete");
  assert.equal(events.at(-1).exitCode, 4);
  const out = events.filter((e) => e.type === "stdout").map((e) => e.data).join("");
  const err = events.filter((e) => e.type === "stderr").map((e) => e.data).join("");
  assert.equal(out, "one\n/tmp\n");
  assert.equal(err, "two\n");
});
