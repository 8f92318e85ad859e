'use strict';
// TypeScript contexts: types stripped in-process (sucrase), no type checking, same state
// rules as JavaScript, TS syntax errors reported as SyntaxError.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startKernel } = require('./kernel-harness');

let k;
test.before(async () => { k = await startKernel({ language: 'typescript' }); });
test.after(() => k.close());

const value = async (code) => {
  const r = await k.run(code);
  assert.equal(r.error, null, JSON.stringify(r.error));
  return r.results.find((x) => x.isMainResult)?.text;
};

test('ready says typescript', () => assert.equal(k.ready.language, 'typescript'));

test('interfaces, generics, enums, casts, access modifiers', async () => {
  assert.equal(await value(`interface P { x: number }
type Id<T> = T;
enum Color { Red, Green }
const p: P = { x: 2 };
function id<T>(v: T): Id<T> { return v }
class Box { constructor(private readonly v: number) {} get(): number { return this.v } }
id<number>(p.x) + Color.Green + new Box(3).get() + (<number>(1 as unknown))`), '7');
  assert.equal(await value('p.x + Color.Red'), '2');
});

test('no type checking: a type error still runs', async () => {
  assert.equal(await value('const n: number = "not a number" as any; n'), "'not a number'");
});

test('type-only imports vanish; value imports work', async () => {
  assert.equal(await value('import type { Stats } from "fs";\nimport { sep } from "path";\nconst s: Stats | null = null;\nsep'), "'/'");
});

test('TypeScript syntax errors are errors with the line', async () => {
  const r = await k.run('const ok = 1;\nlet bad: = 3;');
  assert.equal(r.error.name, 'SyntaxError');
  assert.equal(r.error.traceback[0], `<cell ${r.end.executionCount}>:2`);
  assert.equal(r.error.traceback[1], 'let bad: = 3;');
});

test('runtime errors keep the TypeScript line numbers', async () => {
  const r = await k.run('const a: number = 1;\ninterface Q {\n  y: string\n}\nconst q: Q = null as any;\nq.y');
  assert.equal(r.error.name, 'TypeError');
  assert.match(r.error.traceback[1], new RegExp(`<cell ${r.end.executionCount}>:6:`));
});

test('top-level await in TypeScript', async () => {
  assert.equal(await value('const v: number = await Promise.resolve(5); v'), '5');
});
