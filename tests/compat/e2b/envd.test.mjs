// envd.test.mjs — the E2B SDK's files.* and commands.* (envd: GET/POST /files and the Connect
// services filesystem.Filesystem and process.Process) against a real sandboxd.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startDaemon } from "./support/daemon.mjs";

let daemon, sbx;

before(async () => {
  daemon = await startDaemon();
  sbx = await daemon.connect("e2b-envd");
});
after(async () => { await daemon.stop(); });

describe("files", () => {
  test("write and read text; the code interpreter sees the file", async () => {
    const info = await sbx.files.write("/workspace/notes/a.txt", "héllo\n");
    assert.equal(info.name, "a.txt");
    assert.equal(info.path, "/workspace/notes/a.txt");
    assert.equal(await sbx.files.read("/workspace/notes/a.txt"), "héllo\n");
    const r = await sbx.runCode("open('/workspace/notes/a.txt').read()");
    assert.equal(r.text, "héllo\\n");
  });

  test("binary round trip, relative paths are under /workspace", async () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    await sbx.files.write("bin/all.dat", bytes.buffer);
    const back = await sbx.files.read("/workspace/bin/all.dat", { format: "bytes" });
    assert.deepEqual([...back], [...bytes]);
  });

  test("a Blob in, a stream out; gzip uploads are refused, not stored compressed", async () => {
    await sbx.files.write("/workspace/blob.txt", new Blob(["from a blob"]));
    const stream = await sbx.files.read("/workspace/blob.txt", { format: "stream" });
    let text = "";
    for await (const chunk of stream) text += Buffer.from(chunk).toString();
    assert.equal(text, "from a blob");
    await assert.rejects(sbx.files.write("/workspace/z.txt", "zip me", { gzip: true }),
      /compressed uploads/);
    assert.equal(await sbx.files.exists("/workspace/z.txt"), false);
  });

  test("several files in one upload", async () => {
    const infos = await sbx.files.write([
      { path: "/workspace/many/1.txt", data: "one" },
      { path: "/workspace/many/2.txt", data: "two" },
    ]);
    assert.deepEqual(infos.map((i) => i.path), ["/workspace/many/1.txt", "/workspace/many/2.txt"]);
    assert.equal(await sbx.files.read("/workspace/many/2.txt"), "two");
  });

  test("list, exists, getInfo, makeDir, rename, remove", async () => {
    await sbx.files.write("/workspace/tree/f.txt", "abc");
    assert.equal(await sbx.files.exists("/workspace/tree/f.txt"), true);
    assert.equal(await sbx.files.exists("/workspace/tree/none"), false);
    const info = await sbx.files.getInfo("/workspace/tree/f.txt");
    assert.equal(info.type, "file");
    assert.equal(info.size, 3);
    assert.ok(info.modifiedTime instanceof Date);

    assert.equal(await sbx.files.makeDir("/workspace/tree/sub/deeper"), true);
    assert.equal(await sbx.files.makeDir("/workspace/tree/sub/deeper"), false, "already there");
    const top = await sbx.files.list("/workspace/tree");
    assert.deepEqual(top.map((e) => [e.name, e.type]).sort(), [["f.txt", "file"], ["sub", "dir"]]);
    const deep = await sbx.files.list("/workspace/tree", { depth: 3 });
    assert.ok(deep.some((e) => e.path === "/workspace/tree/sub/deeper"));

    const moved = await sbx.files.rename("/workspace/tree/f.txt", "/workspace/tree/sub/g.txt");
    assert.equal(moved.path, "/workspace/tree/sub/g.txt");
    assert.equal(await sbx.files.exists("/workspace/tree/f.txt"), false);
    await sbx.files.remove("/workspace/tree/sub");
    assert.equal(await sbx.files.exists("/workspace/tree/sub"), false);
  });

  test("errors: a missing file, a path out of the workspace", async () => {
    await assert.rejects(sbx.files.read("/workspace/missing.txt"), (e) => e.name === "FileNotFoundError");
    await assert.rejects(sbx.files.list("/etc"), (e) => e.name === "InvalidArgumentError");
    await assert.rejects(sbx.files.write("/etc/x", "no"), (e) => e.name === "InvalidArgumentError");
    await assert.rejects(sbx.files.remove("/workspace/missing"), (e) => e.name === "FileNotFoundError");
  });
});

describe("commands", () => {
  test("run: output, exit code, cwd, envs", async () => {
    const r = await sbx.commands.run("echo out; echo err >&2; pwd; echo $GREETING",
      { cwd: "/workspace", envs: { GREETING: "hi" } });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "out\n/workspace\nhi\n");
    assert.equal(r.stderr, "err\n");
  });

  test("a non-zero exit is CommandExitError with the code", async () => {
    await assert.rejects(sbx.commands.run("echo partial; exit 3"), (e) => {
      assert.equal(e.name, "CommandExitError");
      assert.equal(e.exitCode, 3);
      assert.equal(e.stdout, "partial\n");
      return true;
    });
  });

  test("onStdout arrives while the command runs", async () => {
    const seen = [];
    let done = false;
    const p = sbx.commands.run("echo first; sleep 1.5; echo second",
      { onStdout: (l) => seen.push({ l, done }) }).then((r) => { done = true; return r; });
    const r = await p;
    assert.equal(seen[0].l, "first\n");
    assert.equal(seen[0].done, false);
    assert.equal(r.stdout, "first\nsecond\n");
  });

  test("background, list, kill; killing again says false", async () => {
    const h = await sbx.commands.run("sleep 120", { background: true });
    assert.ok(h.pid > 0);
    const list = await sbx.commands.list();
    assert.ok(list.some((p) => p.pid === h.pid));
    assert.equal(await h.kill(), true);
    await assert.rejects(h.wait(), (e) => e.name === "CommandExitError");
    assert.equal(await sbx.commands.kill(h.pid), false);
    assert.ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid));
  });

  test("connect to a running command by pid", async () => {
    const h = await sbx.commands.run("sleep 1; echo late", { background: true });
    const again = await sbx.commands.connect(h.pid);
    const r = await again.wait();
    assert.equal(r.exitCode, 0);
    assert.match(r.stdout, /late/);
    await h.wait();
  });

  test("stdin: sendStdin reaches the command, closeStdin ends it", async () => {
    const seen = [];
    const h = await sbx.commands.run("cat", {
      background: true, stdin: true, onStdout: (l) => seen.push(l),
    });
    await sbx.commands.sendStdin(h.pid, "one\n");
    await h.sendStdin(new Uint8Array([0x74, 0x77, 0x6f, 0x0a])); // "two\n" as bytes
    await h.closeStdin();
    const r = await h.wait();
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, "one\ntwo\n");
    assert.equal(seen.join(""), "one\ntwo\n");
    // closed now (and gone): a later write is refused in E2B's own terms
    await assert.rejects(sbx.commands.sendStdin(h.pid, "late\n"), (e) => {
      assert.match(e.message, /not found|closed/);
      return true;
    });
  });

  test("stdin: a command started without it refuses input", async () => {
    const h = await sbx.commands.run("sleep 30", { background: true });
    await assert.rejects(sbx.commands.sendStdin(h.pid, "x\n"), /started without stdin/);
    await h.kill();
  });
});
