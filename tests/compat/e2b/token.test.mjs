// token.test.mjs — a daemon with --token: the E2B SDK cannot set Authorization, so it carries the
// token as its own access tokens (X-Access-Token, E2B-Traffic-Access-Token), given to the
// Sandbox constructor; without them every call is refused.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Sandbox } from "@e2b/code-interpreter";
import { startDaemon } from "./support/daemon.mjs";

const TOKEN = "e2b-compat-token";
let daemon;

before(async () => { daemon = await startDaemon(["--token", TOKEN]); });
after(async () => { await daemon.stop(); });

test("with the token every surface works", async () => {
  const sbx = new Sandbox({ sandboxId: "tok", debug: true, sandboxUrl: daemon.url,
    envdVersion: "99.99.99", envdAccessToken: TOKEN, trafficAccessToken: TOKEN });
  assert.equal((await sbx.runCode("6 * 7")).text, "42");
  const ctx = await sbx.createCodeContext();
  assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
  await sbx.restartCodeContext(ctx);
  await sbx.removeCodeContext(ctx);
  await sbx.files.write("/workspace/t.txt", "ok");
  assert.equal(await sbx.files.read("/workspace/t.txt"), "ok");
  assert.equal(await sbx.files.exists("/workspace/t.txt"), true);
  assert.equal((await sbx.commands.run("echo hi")).stdout, "hi\n");
});

test("without it every call is refused", async () => {
  const sbx = await daemon.connect("tok");
  await assert.rejects(sbx.runCode("1"), /401/);
  await assert.rejects(sbx.listCodeContexts(), /401/);
  await assert.rejects(sbx.files.read("/workspace/t.txt"), (e) => e.name === "AuthenticationError");
  await assert.rejects(sbx.files.exists("/workspace/t.txt"), /unauthenticated|401|Unauthorized/i);
  await assert.rejects(sbx.commands.run("echo hi"), /unauthenticated|401|Unauthorized/i);
});
