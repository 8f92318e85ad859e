// Files through the published client (SandboxClient.files) and its streamFile helper.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { streamFile } from "@cloudflare/sandbox";
import { startDaemon } from "./daemon.mjs";

let d, f;
before(async () => {
  d = await startDaemon();
  f = d.client("cf-files").files;
});
after(async () => d.stop());

test("text round trip, with parents made", async () => {
  const w = await f.writeFile("/workspace/notes/hello.txt", "héllo wörld\nline 2\n", "s");
  assert.equal(w.success, true);
  const r = await f.readFile("/workspace/notes/hello.txt", "s");
  assert.equal(r.content, "héllo wörld\nline 2\n");
  assert.equal(r.encoding, "utf-8");
  assert.equal(r.isBinary, false);
  assert.equal(r.size, Buffer.byteLength("héllo wörld\nline 2\n"));
  // the sandbox sees the same file
  const cat = await d.client("cf-files").commands.execute("cat /workspace/notes/hello.txt", "s");
  assert.equal(cat.stdout, "héllo wörld\nline 2");
});

test("binary round trip as base64", async () => {
  const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 0]);
  await f.writeFile("/workspace/blob.bin", bytes.toString("base64"), "s", { encoding: "base64" });
  const r = await f.readFile("/workspace/blob.bin", "s");
  assert.equal(r.encoding, "base64");
  assert.equal(r.isBinary, true);
  assert.equal(r.size, bytes.length);
  assert.deepEqual(Buffer.from(r.content, "base64"), bytes);
  // base64 asked for a text file
  const t = await f.readFile("/workspace/notes/hello.txt", "s", { encoding: "base64" });
  assert.equal(Buffer.from(t.content, "base64").toString(), "héllo wörld\nline 2\n");
});

test("readFileStream with streamFile gives the bytes", async () => {
  const big = "x".repeat(200000) + "é";
  await f.writeFile("/workspace/big.txt", big, "s");
  const chunks = [];
  const gen = streamFile(await f.readFileStream("/workspace/big.txt", "s"));
  let r;
  while (!(r = await gen.next()).done) chunks.push(r.value);
  assert.equal(chunks.join(""), big);
  assert.equal(r.value.isBinary, false);
  const bin = streamFile(await f.readFileStream("/workspace/blob.bin", "s"));
  const parts = [];
  while (!(r = await bin.next()).done) parts.push(Buffer.from(r.value));
  assert.deepEqual(Buffer.concat(parts), Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 0]));
});

test("exists, mkdir, list, rename, move, delete", async () => {
  assert.equal((await f.exists("/workspace/nothing", "s")).exists, false);
  await f.mkdir("/workspace/a/b/c", "s", { recursive: true });
  assert.equal((await f.exists("/workspace/a/b/c", "s")).exists, true);
  await f.writeFile("/workspace/a/one.txt", "1", "s");
  await f.writeFile("/workspace/a/.hidden", "h", "s");
  const flat = await f.listFiles("/workspace/a", "s");
  assert.deepEqual(flat.files.map((e) => e.name).sort(), ["b", "one.txt"]);
  const one = flat.files.find((e) => e.name === "one.txt");
  assert.equal(one.type, "file");
  assert.equal(one.size, 1);
  assert.equal(one.absolutePath, "/workspace/a/one.txt");
  assert.equal(flat.files.find((e) => e.name === "b").type, "directory");
  const deep = await f.listFiles("/workspace/a", "s", { recursive: true, includeHidden: true });
  assert.deepEqual(deep.files.map((e) => e.relativePath).sort(), [".hidden", "b", "b/c", "one.txt"]);
  await f.renameFile("/workspace/a/one.txt", "/workspace/a/two.txt", "s");
  await f.moveFile("/workspace/a/two.txt", "/tmp/two.txt", "s");
  assert.equal((await f.readFile("/tmp/two.txt", "s")).content, "1");
  await f.deleteFile("/tmp/two.txt", "s");
  assert.equal((await f.exists("/tmp/two.txt", "s")).exists, false);
});

test("a missing file is FILE_NOT_FOUND; a path out of /workspace and /tmp is VALIDATION_FAILED", async () => {
  await assert.rejects(f.readFile("/workspace/missing.txt", "s"), (err) => {
    assert.equal(err.code, "FILE_NOT_FOUND");
    assert.equal(err.httpStatus, 404);
    assert.match(err.message, /missing\.txt/);
    return true;
  });
  await assert.rejects(f.deleteFile("/workspace/missing.txt", "s"), (err) => err.code === "FILE_NOT_FOUND");
  for (const p of ["/etc/passwd", "/workspace/../etc/passwd"])
    await assert.rejects(f.readFile(p, "s"), (err) => err.code === "VALIDATION_FAILED" && err.httpStatus === 400);
});
