// files.test.mjs — the files methods against a real daemon (skipped while it does not serve them).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { getSandbox, FileNotFoundError, ValidationError } from "../dist/index.js";
import { serves, startDaemon } from "./support/daemon.mjs";

let daemon;
let served = false;
before(async () => {
  daemon = await startDaemon();
  served = await serves(daemon.url, "/v1/sandboxes/probe/files/x");
});
after(async () => { await daemon?.stop(); });

test("write, read, list, mkdir, move, delete", async (t) => {
  if (!served) return t.skip("this daemon does not serve /files yet");
  const sandbox = getSandbox(daemon.url, `files-${process.pid}`);
  assert.deepEqual(await sandbox.writeFile("/workspace/dir/a.txt", "héllo"), { path: "/workspace/dir/a.txt", size: 6 });
  await sandbox.writeFile("b.bin", new Uint8Array([0, 255, 1]));
  await sandbox.writeFile("c.txt", Buffer.from("from base64").toString("base64"), { encoding: "base64" });
  const a = await sandbox.readFile("/workspace/dir/a.txt");
  assert.deepEqual([a.content, a.encoding, a.isBinary, a.size], ["héllo", "utf-8", false, 6]);
  const b = await sandbox.readFile("b.bin");
  assert.deepEqual([b.content, b.encoding, b.isBinary], [Buffer.from([0, 255, 1]).toString("base64"), "base64", true]);
  assert.equal((await sandbox.readFile("c.txt")).content, "from base64");
  assert.equal((await sandbox.readFile("c.txt", { encoding: "base64" })).content, Buffer.from("from base64").toString("base64"));
  assert.deepEqual([...(await sandbox.readFileBytes("b.bin"))], [0, 255, 1]);
  // the code sees what the files API wrote
  assert.equal((await sandbox.runCode("open('/workspace/dir/a.txt', encoding='utf-8').read()")).results[0].text, "'héllo'");

  const root = await sandbox.listFiles();
  const names = root.files.map((f) => f.name).sort();
  assert.ok(["b.bin", "c.txt", "dir"].every((x) => names.includes(x)), names.join(","));
  const dir = root.files.find((f) => f.name === "dir");
  assert.equal(dir.type, "dir");
  assert.equal(dir.absolutePath, "/workspace/dir");

  await sandbox.mkdir("/workspace/m/n", { recursive: true });
  await sandbox.moveFile("/workspace/dir/a.txt", "m/n/c.txt");
  assert.deepEqual((await sandbox.listFiles("m/n")).files.map((f) => [f.name, f.absolutePath]),
    [["c.txt", "/workspace/m/n/c.txt"]]);
  await sandbox.deleteFile("m/n/c.txt");
  await assert.rejects(sandbox.readFile("m/n/c.txt"), FileNotFoundError);
  await assert.rejects(sandbox.readFile("../etc/passwd"), ValidationError);
  await sandbox.destroy();
});
