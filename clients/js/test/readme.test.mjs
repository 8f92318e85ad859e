// readme.test.mjs — the TypeScript examples of clients/js/README.md and of the repo's
// README.md run as written against a real daemon and show what their comments say.
// Each README's ```ts blocks run in order as one ES module (later blocks use what earlier
// ones defined). The only rewrites: the daemon URL becomes the test daemon's, "sandboxd" is
// imported from this folder's dist/, and top-level const/let become var (blocks may reuse
// a name, as prose examples do). Checked claims:
//   EXPR;  // LITERAL …      EXPR deep-equals the JSON literal (e.g. "2.0", true, ["text"])
//   …;     // EXPR === LIT    after the line runs, EXPR === LIT
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startDaemon } from "./support/daemon.mjs";
import { toModule } from "./support/readme.mjs";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = join(here, "..", "..");
const dist = join(here, "dist", "index.js");
let daemon;
let tmp;
before(async () => {
  daemon = await startDaemon();
  tmp = mkdtempSync(join(tmpdir(), "sbx-jsreadme-"));
});
after(async () => {
  await daemon?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

function runReadme(path, name) {
  const [source, claims] = toModule(readFileSync(join(repo, path), "utf8"), daemon.url, dist);
  const file = join(tmp, name);
  writeFileSync(file, source);
  try {
    return [execFileSync(process.execPath, [file], { encoding: "utf8", timeout: 300_000, stdio: ["ignore", "pipe", "pipe"] }), claims];
  } catch (e) {
    assert.fail(`${path} examples failed:\n${e.stderr}\n--- module ---\n${source}`);
  }
}

test("clients/js/README.md examples run and show what they say", () => {
  const [stdout, claims] = runReadme("clients/js/README.md", "js-readme.mjs");
  assert.ok(claims >= 5, `only ${claims} claims found`);
  assert.match(stdout, /Step 0\n[\s\S]*Step 2\n/); // the streaming example's callbacks
});

test("README.md (repo root) TypeScript example runs and shows what it says", () => {
  const [stdout, claims] = runReadme("README.md", "root-readme.mjs");
  assert.equal(claims, 1);
  assert.match(stdout, /^0\n\n?1\n\n?2\n/m); // "live" stdout
});
