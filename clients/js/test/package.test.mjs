// package.test.mjs — the package ships its built code although dist/ is not committed.
// A copy of the package as git has it (no dist/) is packed with `npm pack` and installed as a
// folder into a fresh project with `npm install --offline`: both must run the `prepare` script
// (tsc) so that dist/index.js is in the tarball and `import "sandboxd"` works in the project.
// No daemon and no network: the copy borrows this folder's node_modules (typescript).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const SOURCES = ["package.json", "package-lock.json", "tsconfig.json", "README.md", "src"];
const npm = (cwd, ...args) =>
  execFileSync("npm", [...args, "--offline", "--no-audit", "--no-fund", "--loglevel=error"],
    { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

let tmp;
// A checkout of the package without dist/ (as a git clone or a fresh folder would be).
function checkout(name) {
  const dir = join(tmp, name);
  for (const f of SOURCES) cpSync(join(here, f), join(dir, f), { recursive: true });
  symlinkSync(join(here, "node_modules"), join(dir, "node_modules"));
  assert.equal(existsSync(join(dir, "dist")), false);
  return dir;
}

before(() => { tmp = mkdtempSync(join(tmpdir(), "sbx-jspkg-")); });
after(() => { rmSync(tmp, { recursive: true, force: true }); });

test("npm pack builds dist/ and puts it in the tarball", () => {
  const pkg = checkout("pack");
  const [info] = JSON.parse(npm(pkg, "pack", "--json"));
  const files = info.files.map((f) => f.path);
  for (const f of ["dist/index.js", "dist/index.d.ts", "dist/sandbox.js", "package.json"])
    assert.ok(files.includes(f), `${f} missing from ${files.join(", ")}`);
  assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("node_modules/")), files.join(", "));
  const listing = execFileSync("tar", ["tzf", join(pkg, info.filename)], { encoding: "utf8" });
  assert.match(listing, /^package\/dist\/index\.js$/m);
});

test("a folder install runs prepare and the package imports", () => {
  const pkg = checkout("folder");
  const proj = join(tmp, "proj");
  mkdirSync(proj);
  writeFileSync(join(proj, "package.json"),
    JSON.stringify({ name: "proj", version: "1.0.0", private: true, type: "module" }));
  npm(proj, "install", pkg);
  assert.ok(existsSync(join(pkg, "dist", "index.js")), "prepare did not build dist/");
  const out = execFileSync(process.execPath, ["--input-type=module", "-e",
    'import { getSandbox, CodeInterpreter } from "sandboxd"; ' +
    'const s = getSandbox("http://127.0.0.1:9", "x"); ' +
    'console.log(typeof s.runCode, typeof CodeInterpreter, s.id);'],
  { cwd: proj, encoding: "utf8" });
  assert.equal(out.trim(), "function function x");
});
