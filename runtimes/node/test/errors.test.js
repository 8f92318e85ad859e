'use strict';
// Errors: name, message, a traceback in the user's terms (cell lines, no kernel frames),
// syntax errors (JavaScript and TypeScript), thrown non-Error values.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startKernel } = require('./kernel-harness');

let k;
test.before(async () => { k = await startKernel(); });
test.after(() => k.close());

const noKernelFrames = (tb) => assert.ok(!tb.some((l) => /kernel\.js|context\.js|node:vm|runtimes\/node/.test(l)), tb.join('\n'));

test('ReferenceError and TypeError with the cell line and no kernel frames', async () => {
  const r = await k.run('const ok = 1;\n\nmissing + 1');
  assert.equal(r.error.name, 'ReferenceError');
  assert.equal(r.error.message, 'missing is not defined');
  assert.deepEqual(r.error.traceback, ['ReferenceError: missing is not defined', `    at <cell ${r.end.executionCount}>:3:1`]);
  const t = await k.run('null.x');
  assert.equal(t.error.name, 'TypeError');
  noKernelFrames(t.error.traceback);
});

test('frames of functions defined in earlier cells keep their cell and line', async () => {
  const def = await k.run('function thrower() {\n  throw new RangeError("deep")\n}');
  const r = await k.run('await null;\nthrower()');
  assert.equal(r.error.name, 'RangeError');
  assert.deepEqual(r.error.traceback.slice(0, 2), ['RangeError: deep', `    at thrower (<cell ${def.end.executionCount}>:2:9)`]);
  assert.match(r.error.traceback[2], new RegExp(`<cell ${r.end.executionCount}>:2:`));
  noKernelFrames(r.error.traceback);
});

test('errors from Node built-ins keep their message and the cell frame', async () => {
  const r = await k.run('require("fs").readFileSync("/no/such/file")');
  assert.equal(r.error.name, 'Error');
  assert.match(r.error.message, /ENOENT/);
  assert.ok(r.error.traceback.some((l) => l.includes('<cell')));
  noKernelFrames(r.error.traceback);
});

test('a syntax error points at the line and column; nothing of the cell runs', async () => {
  const r = await k.run('globalThis.ran = true;\nlet x = ;');
  assert.equal(r.error.name, 'SyntaxError');
  assert.equal(r.error.message, 'Unexpected token');
  assert.deepEqual(r.error.traceback, [`<cell ${r.end.executionCount}>:2`, 'let x = ;', '        ^', 'SyntaxError: Unexpected token']);
  assert.equal((await k.run('typeof ran')).results[0].text, "'undefined'");
});

test('thrown non-Error values', async () => {
  const s = await k.run('throw "boom"');
  assert.deepEqual(s.error, { name: 'Error', message: 'boom', traceback: ["Uncaught 'boom'"] });
  const n = await k.run('throw 42');
  assert.equal(n.error.message, '42');
  const o = await k.run('throw { name: "Custom", message: "shaped" }');
  assert.equal(o.error.name, 'Custom');
  assert.equal(o.error.message, 'shaped');
  const u = await k.run('throw null');
  assert.equal(u.error.message, 'null');
});

test('a custom Error subclass keeps its name', async () => {
  const r = await k.run('class MyErr extends Error { constructor(m) { super(m); this.name = "MyErr" } }\nthrow new MyErr("mine")');
  assert.equal(r.error.name, 'MyErr');
  assert.equal(r.error.message, 'mine');
});

test('an exception escaping a timer while a cell awaits fails that cell', async () => {
  const r = await k.run('await new Promise(() => setTimeout(() => { throw new Error("from timer") }, 5))');
  assert.equal(r.error.message, 'from timer');
  assert.equal((await k.run('1')).error, null);
});

test('an error in a _repr_ method while building the result is the cell error', async () => {
  const r = await k.run('({ _repr_html_() { throw new Error("bad repr") } })');
  assert.equal(r.error.message, 'bad repr');
  assert.deepEqual(r.results, []);
});
