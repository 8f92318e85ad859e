'use strict';
// require, static import and dynamic import() of built-ins and of packages installed in the
// context's cwd (CommonJS and ESM-only), resolved from that cwd.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startKernel } = require('./kernel-harness');
const { makeWorkdir } = require('./fixtures');

let k;
let work;
test.before(async () => { work = makeWorkdir(); k = await startKernel({ cwd: work.dir }); });
test.after(async () => { await k.close(); work.remove(); });

const value = async (code) => {
  const r = await k.run(code);
  assert.equal(r.error, null, JSON.stringify(r.error));
  return r.results.find((x) => x.isMainResult)?.text;
};

test('require of built-ins and of packages in the cwd', async () => {
  assert.equal(await value('require("path").posix.join("a", "b")'), "'a/b'");
  assert.equal(await value('require("cjs-pkg").greet("x")'), "'hello x'");
});

test('static imports: default, named, namespace, side effect; bindings persist', async () => {
  assert.equal(await value('import fs, { readFileSync } from "fs";\nimport * as os from "node:os";\nimport "cjs-pkg";\nimport { greet } from "cjs-pkg";\ntypeof fs.statSync + typeof readFileSync + typeof os.cpus + greet("y")'),
    "'functionfunctionfunctionhello y'");
  assert.equal(await value('import esm, { named } from "esm-only"; [esm, named]'), "[ 42, 'esm' ]");
  assert.equal(await value('[esm, named, typeof readFileSync]'), "[ 42, 'esm', 'function' ]");
});

test('a static import inside a synchronous cell keeps the cell synchronous', async () => {
  // The binding is set before the code runs, as ESM hoists imports.
  assert.equal(await value('const before = typeof join;\nimport { join } from "path";\nbefore'), "'function'");
});

test('dynamic import() of built-ins, ESM-only packages and relative files from the cwd', async () => {
  assert.equal(await value('(await import("esm-only")).default'), '42');
  assert.equal(await value('(await import("./local.mjs")).where'), "'local'");
  assert.equal(await value('const { createHash } = await import("crypto"); createHash("sha1").update("").digest("hex").slice(0, 6)'), "'da39a3'");
});

test('a missing module is an error naming it', async () => {
  const r = await k.run('import x from "no-such-package"');
  assert.match(r.error.message, /no-such-package/);
  const r2 = await k.run('require("no-such-package")');
  assert.equal(r2.error.name, 'Error');
  assert.match(r2.error.message, /Cannot find module 'no-such-package'/);
});

test('the kernel prints nothing of its own (no ExperimentalWarning)', async () => {
  const r = await k.run('await import("fs"); 1');
  assert.equal(r.stderr, '');
  assert.deepEqual(await k.outputWithin(30), []);
});

test('export keywords are accepted and ignored', async () => {
  assert.equal(await value('export const ex = 1; export function exf() { return 2 } export default 3; ex + exf()'), '3');
});
