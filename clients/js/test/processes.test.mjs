// processes.test.mjs — background processes against a real daemon (skipped while not served).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ConflictError, getSandbox, LimitReachedError, ProcessNotFoundError } from "../dist/index.js";
import { serves, startDaemon } from "./support/daemon.mjs";

let daemon;
let served = false;
before(async () => {
  daemon = await startDaemon();
  served = await serves(daemon.url, "/v1/sandboxes/probe/processes");
});
after(async () => { await daemon?.stop(); });

test("start, list, logs, stream, kill", async (t) => {
  if (!served) return t.skip("this daemon does not serve /processes yet");
  const sandbox = getSandbox(daemon.url, `proc-${process.pid}`);
  const p = await sandbox.startProcess("echo started; echo oops >&2; sleep 30", { env: { X: "1" } });
  assert.equal(p.status, "running");
  assert.equal(typeof p.pid, "number");
  assert.ok((await sandbox.listProcesses()).some((q) => q.id === p.id));
  assert.equal((await sandbox.getProcess(p.id)).id, p.id);
  for (let i = 0; i < 50; i++) {
    const logs = await sandbox.getProcessLogs(p.id);
    if (logs.stdout === "started\n" && logs.stderr === "oops\n") break;
    assert.ok(i < 49, `logs: ${JSON.stringify(logs)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await sandbox.killProcess(p.id);

  const q = await sandbox.startProcess("for i in 1 2 3; do echo $i; sleep 0.1; done");
  const events = [];
  for await (const ev of sandbox.streamProcessLogs(q.id)) events.push(ev);
  assert.equal(events.filter((e) => e.type === "stdout").map((e) => e.data).join(""), "1\n2\n3\n");
  assert.equal(events.at(-1).type, "exit");
  await assert.rejects(sandbox.killProcess("nope"), ProcessNotFoundError);
  await sandbox.destroy();
});

test("writeStdin: text and bytes reach cat, eof ends it; a full pipe is LimitReachedError", async () => {
  const sandbox = getSandbox(daemon.url, `stdin-${process.pid}`);
  const p = await sandbox.startProcess("cat", { stdin: true });
  const w = await sandbox.writeStdin(p.id, "one\n");
  assert.deepEqual([w.id, w.accepted, w.open], [p.id, 4, true]);
  await sandbox.writeStdin(p.id, new Uint8Array([0x74, 0x77, 0x6f, 0x0a]));
  const last = await sandbox.writeStdin(p.id, "three\n", { eof: true });
  assert.equal(last.open, false);
  for (let i = 0; ; i++) {
    const info = await sandbox.getProcess(p.id);
    if (info.status === "exited") { assert.equal(info.exitCode, 0); break; }
    assert.ok(i < 200, "cat did not end after eof");
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal((await sandbox.getProcessLogs(p.id)).stdout, "one\ntwo\nthree\n");
  await assert.rejects(sandbox.writeStdin(p.id, "late"), ConflictError);

  const idle = await sandbox.startProcess("sleep 1000", { stdin: true });
  const chunk = "x".repeat(1 << 18);
  await assert.rejects((async () => { for (;;) await sandbox.writeStdin(idle.id, chunk); })(),
    (e) => e instanceof LimitReachedError && /--process-stdin-bytes/.test(e.message));
  await sandbox.destroy();
});
