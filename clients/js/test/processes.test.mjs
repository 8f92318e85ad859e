// processes.test.mjs — background processes against a real daemon (skipped while not served).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { getSandbox, ProcessNotFoundError } from "../dist/index.js";
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
