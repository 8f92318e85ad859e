'use strict';
// transform.js on its own: line numbers survive, sync cells stay sync, declarations
// become global assignments.

const test = require('node:test');
const assert = require('node:assert/strict');
const { compileCell } = require('../transform');

const lines = (s) => s.split('\n').length;

test('the body keeps every line of the cell where it was', () => {
  const src = 'import {\n  a,\n  b\n} from "m";\nconst x = 1,\n  y = 2;\nfunction f() {\n  return x\n}\nclass C {\n}\nx';
  const { body, prelude } = compileCell(src, 'javascript');
  assert.equal(lines(body.code), lines(src));
  assert.equal(lines(prelude.code), lines(src));
  assert.equal(prelude.code.split('\n')[7], '  return x');
  assert.equal(body.code.split('\n')[11], 'x');
});

test('a cell without await is a plain script; with await an async wrapper', () => {
  const sync = compileCell('let a = 1; a', 'javascript');
  assert.equal(sync.isAsync, false);
  assert.equal(sync.body.code, 'void ( a = 1); a');
  const async_ = compileCell('let a = await 1; a', 'javascript');
  assert.equal(async_.isAsync, true);
  assert.match(async_.body.code, /^\(async \(\) => \{void \( ?a = await 1\); return \(a\);\n\}\)\(\)$/);
  assert.equal(async_.body.columnOffset, -'(async () => {'.length);
});

test('await inside functions does not make the cell async', () => {
  assert.equal(compileCell('async function f() { await 1 }\nconst g = async () => { await 2 }', 'javascript').isAsync, false);
});

test('imports become bindings evaluated before the body', () => {
  const c = compileCell('import d, { n as m, "x-y" as z } from "mod";\nimport * as ns from "other";', 'javascript');
  assert.deepEqual(c.bindings, [
    { local: 'd', index: 0, imported: 'default' },
    { local: 'm', index: 0, imported: 'n' },
    { local: 'z', index: 0, imported: 'x-y' },
    { local: 'ns', index: 1, imported: '*' },
  ]);
  assert.match(c.prelude.code, /var d, m, z, ns; \[import\("mod"\), import\("other"\)\]$/);
  assert.equal(c.body.code.trim(), '');
});

test('syntax errors carry the line and column', () => {
  assert.throws(() => compileCell('1;\nlet = = 2', 'javascript'), (err) => err.name === 'SyntaxError' && err.loc.line === 2);
  assert.throws(() => compileCell('let a: = 1', 'typescript'), (err) => err.name === 'SyntaxError' && err.loc.line === 1);
});
