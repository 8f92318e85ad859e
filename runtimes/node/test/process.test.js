'use strict';
// The context's cwd and environment, per-run envVars, and interrupts (SIGINT).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const { startKernel } = require('./kernel-harness');
const { makeWorkdir } = require('./fixtures');

let k;
let work;
test.before(async () => { work = makeWorkdir(); k = await startKernel({ cwd: work.dir, env: { CTX_VAR: 'ctx' } }); });
test.after(async () => { await k.close(); work.remove(); });

const value = async (code, opts) => {
  const r = await k.run(code, opts);
  assert.equal(r.error, null, JSON.stringify(r.error));
  return r.results.find((x) => x.isMainResult)?.text;
};

test('cwd and context env come from the process at start', async () => {
  assert.equal(await value('process.cwd()'), `'${fs.realpathSync(work.dir)}'`);
  assert.equal(await value('process.env.CTX_VAR'), "'ctx'");
});

test('per-run envVars apply to that run only and are restored', async () => {
  assert.equal(await value('[process.env.RUN_VAR, process.env.CTX_VAR]', { envVars: { RUN_VAR: 'r', CTX_VAR: 'override' } }), "[ 'r', 'override' ]");
  assert.equal(await value('["RUN_VAR" in process.env, process.env.CTX_VAR]'), "[ false, 'ctx' ]");
  assert.equal(await value('require("child_process").execSync("echo $RUN_VAR").toString().trim()', { envVars: { RUN_VAR: 'child-sees' } }), "'child-sees'");
});

const interruptAfter = (ms) => setTimeout(() => k.child.kill('SIGINT'), ms);

test('SIGINT ends a synchronous infinite loop; state is kept', async () => {
  interruptAfter(150);
  const r = await k.run('let kept = 1; while (true) {}', { envVars: { DURING: '1' } });
  assert.equal(r.error.name, 'KeyboardInterrupt');
  assert.equal(r.end.type, 'end');
  assert.equal(await value('[kept, "DURING" in process.env]'), '[ 1, false ]');
});

test('SIGINT ends a loop inside a function called by the cell', async () => {
  interruptAfter(150);
  const r = await k.run('function spin() { for (;;) {} }\nspin()');
  assert.equal(r.error.name, 'KeyboardInterrupt');
});

test('SIGINT abandons a never-resolving await; state is kept', async () => {
  interruptAfter(150);
  const r = await k.run('globalThis.before = "set"; await new Promise(() => {})');
  assert.equal(r.error.name, 'KeyboardInterrupt');
  assert.equal(await value('before'), "'set'");
});

test('SIGINT while idle is ignored', async () => {
  k.child.kill('SIGINT');
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(k.child.exitCode, null);
  assert.equal(await value('1 + 1'), '2');
});
