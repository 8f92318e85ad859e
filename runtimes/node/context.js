'use strict';
// context.js — the persistent vm context of one kernel, and running one cell in it.
//
// Guarantees:
// - One vm context lives as long as the process; its global object carries Node's globals
//   (process, Buffer, timers, fetch, URL, …), `require` (resolving from the context's
//   start cwd, like createRequire(cwd + '/')), `display`, and a console writing
//   synchronously to fd 1/2.
// - Static imports and dynamic import() resolve from the same cwd with Node's ESM loader,
//   so ESM-only packages and built-ins both work.
// - run() never throws: it returns {error} (an ExecutionError) or {value, hasResult}.
//   SIGINT during the synchronous part of a cell (all of it when the cell has no top-level
//   await) ends it with a KeyboardInterrupt error.
// Assumes: one run at a time (the kernel serialises executions).

const vm = require('vm');
const path = require('path');
const { createRequire } = require('module');
const { compileCell } = require('./transform');
const { makeDisplay } = require('./display');
const { makeConsole } = require('./stdio');
const { describeError, describeParseError, interrupted } = require('./errors');

const OWN = new Set(['global', 'globalThis', 'console']);

// Gives the context Node's globals; an accessor (a lazy global like fetch) that user code
// assigns becomes a plain data property, as `let fetch = …` in a console would shadow it.
function copyNodeGlobals(g) {
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (OWN.has(name) || Object.prototype.hasOwnProperty.call(g, name)) continue;
    const desc = Object.getOwnPropertyDescriptor(globalThis, name);
    if (desc.get) {
      desc.set = function (value) {
        Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: desc.enumerable });
      };
    }
    Object.defineProperty(g, name, desc);
  }
}

function createContext({ language, cwd, onDisplay }) {
  const context = vm.createContext({}, { name: 'sandboxd' });
  const g = vm.runInContext('globalThis', context);
  copyNodeGlobals(g);
  g.global = g;
  g.console = makeConsole();
  g.require = createRequire(path.join(cwd, '<sandboxd>'));
  g.display = makeDisplay(onDisplay);
  const scriptDir = cwd;

  function script({ code, columnOffset }, filename) {
    return new vm.Script(code, {
      filename,
      columnOffset,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
  }

  async function run(source, count) {
    const cell = { scriptDir, label: `<cell ${count}>`, source };
    const filename = path.join(scriptDir, cell.label);
    let compiled;
    try {
      compiled = compileCell(source, language);
    } catch (err) {
      return { error: describeParseError(err, cell) };
    }
    try {
      const runOptions = { breakOnSigint: true };
      if (compiled.prelude) {
        const imports = script(compiled.prelude, filename).runInContext(context, runOptions);
        const namespaces = await Promise.all(imports);
        for (const { local, index, imported } of compiled.bindings) {
          g[local] = imported === '*' ? namespaces[index] : namespaces[index][imported];
        }
      }
      let value = script(compiled.body, filename).runInContext(context, runOptions);
      if (!compiled.hasResult && !compiled.isAsync) return { hasResult: false };
      if (value !== null && typeof value?.then === 'function') value = await value;
      return { value, hasResult: compiled.hasResult };
    } catch (err) {
      if (err?.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') return { error: interrupted() };
      return { error: describeError(err, cell) };
    }
  }

  return { run, scriptDir };
}

module.exports = { createContext };
