'use strict';
// fixtures.js — a throwaway working directory with installed packages (one CommonJS,
// one ESM-only with an "import"-only exports map) and a local module, for module tests.

const fs = require('fs');
const os = require('os');
const path = require('path');

function makeWorkdir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-cwd-'));
  const write = (rel, text) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  };
  write('node_modules/cjs-pkg/package.json', '{"name":"cjs-pkg","main":"index.js"}');
  write('node_modules/cjs-pkg/index.js', 'exports.greet = (n) => `hello ${n}`;');
  write('node_modules/esm-only/package.json', '{"name":"esm-only","type":"module","exports":{".":{"import":"./index.js"}}}');
  write('node_modules/esm-only/index.js', 'export default 42; export const named = "esm";');
  write('local.mjs', 'export const where = "local";');
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

module.exports = { makeWorkdir };
