// Background processes through the published client (SandboxClient.processes).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { parseSSEStream } from "@cloudflare/sandbox";
import { startDaemon } from "./daemon.mjs";

let d, p;
before(async () => {
  d = await startDaemon();
  p = d.client("cf-procs").processes;
});
after(async () => d.stop());

async function waitFor(cond, what) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("timed out waiting for " + what);
}

test("start, get, list, logs of a process that exits", async () => {
  const s = await p.startProcess("echo out; echo err >&2; exit 2", "s");
  assert.match(s.processId, /^proc-/);
  assert.ok(s.pid > 0);
  await waitFor(async () => (await p.getProcess(s.processId)).process.status !== "running", "the exit");
  const g = await p.getProcess(s.processId);
  assert.equal(g.process.status, "failed");
  assert.equal(g.process.exitCode, 2);
  assert.equal(g.process.command, "echo out; echo err >&2; exit 2");
  const logs = await p.getProcessLogs(s.processId);
  assert.equal(logs.stdout, "out\n");
  assert.equal(logs.stderr, "err\n");
  assert.ok((await p.listProcesses()).processes.some((x) => x.id === s.processId));
});

test("streamProcessLogs follows the output, then exit", async () => {
  const s = await p.startProcess("for i in 1 2 3; do echo line$i; sleep 0.1; done", "s");
  const events = [];
  for await (const ev of parseSSEStream(await p.streamProcessLogs(s.processId))) events.push(ev);
  assert.equal(events[0].type, "process_info");
  assert.equal(events.at(-1).type, "exit");
  assert.equal(events.at(-1).exitCode, 0);
  assert.equal(events.filter((e) => e.type === "stdout").map((e) => e.data).join(""), "line1\nline2\nline3\n");
});

test("kill a process and kill all", async () => {
  const s = await p.startProcess("sleep 60", "s");
  await p.killProcess(s.processId);
  await assert.rejects(p.getProcess(s.processId), (err) => err.code === "PROCESS_NOT_FOUND" && err.httpStatus === 404);
  await p.startProcess("sleep 60", "s");
  await p.startProcess("sleep 60", "s");
  const k = await p.killAllProcesses();
  assert.ok(k.cleanedCount >= 2);
  assert.equal((await p.listProcesses()).processes.filter((x) => x.status === "running").length, 0);
});

test("a process starts in its session's directory with its exports", async () => {
  const c = d.client("cf-procs");
  await c.commands.execute("mkdir -p /workspace/app && cd /workspace/app && export MODE=dev", "sess-p");
  const s = await p.startProcess('pwd; echo "$MODE $EXTRA"', "sess-p", { env: { EXTRA: "it's" } });
  assert.equal(s.command, 'pwd; echo "$MODE $EXTRA"');
  await waitFor(async () => (await p.getProcess(s.processId)).process.status !== "running", "the exit");
  const g = await p.getProcess(s.processId);
  assert.equal(g.process.status, "completed");
  assert.equal(g.process.command, 'pwd; echo "$MODE $EXTRA"');
  assert.equal((await p.getProcessLogs(s.processId)).stdout, "/workspace/app\ndev it's\n");
  // its own cwd wins over the session's
  const t = await p.startProcess("pwd", "sess-p", { cwd: "/tmp" });
  await waitFor(async () => (await p.getProcess(t.processId)).process.status !== "running", "the exit");
  assert.equal((await p.getProcessLogs(t.processId)).stdout, "/tmp\n");
});
