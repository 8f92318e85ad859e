'use strict';
// Cells share state with browser-console semantics; results and errors have the API's shapes.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startKernel } = require('./kernel-harness');

let k;
test.before(async () => { k = await startKernel(); });
test.after(() => k.close());

const value = async (code) => {
  const r = await k.run(code);
  assert.equal(r.error, null, JSON.stringify(r.error));
  return r.results.find((x) => x.isMainResult);
};

test('ready names the language, Node version and pid', () => {
  assert.equal(k.ready.language, 'javascript');
  assert.equal(k.ready.version, process.versions.node);
  assert.equal(k.ready.pid, k.child.pid);
  assert.equal(k.events[0].type, 'ready');
});

test('top-level const, let, var, function and class persist', async () => {
  await value('const a = 1; let b = 2; var c = 3; function f(x) { return x * 10 } class K { v() { return 4 } }');
  assert.equal((await value('a + b + c + f(1) + new K().v()')).text, '20');
});

test('re-declaring const/let in a re-run cell succeeds and the new value wins', async () => {
  await value('const r = 1; let s = 1;');
  await value('const r = 2; let s = 3;');
  assert.equal((await value('[r, s]')).text, '[ 2, 3 ]');
  await value('class R {}; class R2 extends R {}');
  await value('class R { x() { return "new" } }');
  assert.equal((await value('new R().x()')).text, "'new'");
});

test('function declarations are hoisted within a cell', async () => {
  assert.equal((await value('h() + 1\nfunction h() { return 1 }')).text, '2');
});

test('destructuring declarations and nested var reach later cells', async () => {
  await value('const { p, q: [q1, ...rest] } = { p: 1, q: [2, 3, 4] }; if (true) { var nested = 5 } for (var i = 0; i < 2; i++) {}');
  assert.equal((await value('[p, q1, rest, nested, i]')).text, '[ 1, 2, [ 3, 4 ], 5, 2 ]');
});

test('let without initialiser resets on re-run, var keeps its value', async () => {
  await value('let u = 1; var w = 1;');
  await value('let u; var w;');
  assert.equal((await value('[u, w]')).text, '[ undefined, 1 ]');
});

test('last expression: util.inspect text, json for plain objects and arrays', async () => {
  assert.deepEqual(await value("'abc'"), { text: "'abc'", isMainResult: true });
  assert.deepEqual(await value('({ x: [1, 2], y: null })'), { json: { x: [1, 2], y: null }, text: '{ x: [ 1, 2 ], y: null }', isMainResult: true });
  assert.deepEqual(await value('{ "a": 1 }'), { json: { a: 1 }, text: '{ a: 1 }', isMainResult: true });
  assert.deepEqual(await value('new Map([[1, 2]])'), { text: 'Map(1) { 1 => 2 }', isMainResult: true });
  assert.deepEqual(await value('10n'), { text: '10n', isMainResult: true });
});

test('undefined, declarations and statements give no result', async () => {
  for (const code of ['undefined', 'const z = 1', 'if (true) { 5 }', 'console.log; void 0', '']) {
    const r = await k.run(code);
    assert.equal(r.error, null);
    assert.deepEqual(r.results, [], code);
  }
});

test('top-level await, awaited last Promise, rejected Promise is an error', async () => {
  assert.equal((await value('const t = await new Promise((r) => setTimeout(() => r(7), 5)); t * 2')).text, '14');
  assert.equal((await value('Promise.resolve("later")')).text, "'later'");
  assert.equal((await value('t')).text, '7');
  for await (const _ of []) {} // eslint: keeps for-await syntax in view
  assert.equal((await value('let sum = 0; for await (const x of [1, 2]) sum += x; sum')).text, '3');
  const r = await k.run('Promise.reject(new TypeError("nope"))');
  assert.equal(r.error.name, 'TypeError');
  assert.equal(r.error.message, 'nope');
});

test('execution count increases with every run, failed ones too', async () => {
  const a = await k.run('1');
  const b = await k.run('throw new Error("x")');
  const c = await k.run('1');
  assert.equal(b.end.executionCount, a.end.executionCount + 1);
  assert.equal(c.end.executionCount, b.end.executionCount + 1);
});

test('user code sees neither SANDBOXD_LANGUAGE nor kernel internals', async () => {
  assert.equal((await value('typeof process.env.SANDBOXD_LANGUAGE')).text, "'undefined'");
  assert.equal((await value('[typeof require, typeof display, typeof Buffer, typeof fetch, typeof setTimeout, global === globalThis]')).text,
    "[ 'function', 'function', 'function', 'function', 'function', true ]");
});

test('a lazy Node global can be shadowed by a declaration', async () => {
  await value('const fetch = () => "mine"');
  assert.equal((await value('fetch()')).text, "'mine'");
});
