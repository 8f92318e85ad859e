'use strict';
// kernel.js — entry point of a JavaScript/TypeScript context: `node kernel.js`, with the
// protocol channel on fd 3 and SANDBOXD_LANGUAGE=javascript|typescript (docs/protocol.md).
//
// Guarantees:
// - `ready` is the first message; the parsers and the vm context are built right after it,
//   while the daemon has nothing to run yet (a cell arriving sooner builds them itself).
// - Executions run one at a time in arrival order; each sends its results, at most one
//   error, then `end` with the execution count, always.
// - Per-run envVars are set in process.env for that run and restored afterwards (keys that
//   did not exist are removed again), also when the run is interrupted.
// - SIGINT while a cell runs: a synchronous part stops (vm breakOnSigint); a pending await
//   is abandoned. Either way the run reports KeyboardInterrupt and ends; state is kept.
//   SIGINT while idle is ignored.
// - An exception or unhandled rejection escaping user code (a timer, a stray promise)
//   fails the running cell, or is printed to stderr when idle; it never ends the process.
// - The kernel itself never writes to fd 1/2 except on behalf of user code.
// Assumes: started by the daemon (or a test) with fd 3 connected.

const language = process.env.SANDBOXD_LANGUAGE === 'typescript' ? 'typescript' : 'javascript';
delete process.env.SANDBOXD_LANGUAGE;

const { openChannel } = require('./channel');
const { writeOut, writeErr } = require('./stdio');
const { describeError, interrupted } = require('./errors');
const { toResult } = require('./display');

let context = null; // the vm context, built lazily (context.js)
let current = null; // the running execution: {id, cell, stop(error)}
let executionCount = 0;
const inbox = [];
let draining = false;

// Node warns (on stderr) the first time the ESM loader serves a vm script; that is ours.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  if (String(warning?.message ?? warning).includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
  return emitWarning.call(this, warning, ...rest);
};

const channel = openChannel((msg) => {
  if (msg.type !== 'execute') return;
  inbox.push(msg);
  if (!draining) drain();
});

function getContext() {
  if (context === null) {
    require('./transform').warmUp(language);
    context = require('./context').createContext({ language, cwd: process.cwd(), onDisplay });
  }
  return context;
}

function onDisplay(result) {
  if (current) channel.send({ type: 'result', id: current.id, result });
  else if (result.text !== undefined) writeOut(result.text + '\n'); // a timer after its run ended
}

function escaped(err) {
  const error = describeError(err, { scriptDir: getContext().scriptDir, label: '<cell>', source: '' });
  if (current) current.stop(error);
  else writeErr(`Uncaught ${error.traceback.join('\n')}\n`);
}

process.on('SIGINT', () => {
  if (current) current.stop(interrupted());
});
process.on('uncaughtException', escaped);
process.on('unhandledRejection', escaped);

function applyEnv(vars) {
  if (!vars || typeof vars !== 'object') return () => {};
  const saved = Object.keys(vars).map((k) => [k, Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined]);
  for (const [k, v] of Object.entries(vars)) process.env[k] = String(v);
  return () => {
    for (const [k, old] of saved.reverse()) {
      if (old === undefined) delete process.env[k];
      else process.env[k] = old;
    }
  };
}

async function execute(msg) {
  const id = msg.id;
  const count = ++executionCount;
  const { run } = getContext();
  let stop;
  const stopped = new Promise((resolve) => { stop = resolve; });
  current = { id, stop };
  const restoreEnv = applyEnv(msg.envVars);
  let outcome;
  try {
    outcome = await Promise.race([run(String(msg.code ?? ''), count), stopped.then((error) => ({ error }))]);
  } finally {
    restoreEnv();
    current = null;
  }
  const last = []; // the main result or error, and end: one write
  let { error } = outcome;
  if (!error && outcome.hasResult && outcome.value !== undefined) {
    try {
      last.push({ type: 'result', id, result: toResult(outcome.value, true) });
    } catch (err) {
      error = describeError(err, { scriptDir: getContext().scriptDir, label: `<cell ${count}>`, source: '' });
    }
  }
  if (error) last.push({ type: 'error', id, error });
  last.push({ type: 'end', id, executionCount: count });
  channel.send(...last);
}

async function drain() {
  draining = true;
  while (inbox.length) await execute(inbox.shift());
  draining = false;
}

channel.send({ type: 'ready', language, version: process.versions.node, pid: process.pid });
setImmediate(getContext);
