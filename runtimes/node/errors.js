'use strict';
// errors.js — turns whatever a cell threw into the API's ExecutionError
// {name, message, traceback: [lines]}.
//
// Guarantees:
// - Errors from any realm are recognised by shape (name/message/stack), not instanceof.
// - The traceback is the stack's lines with the kernel's own frames removed (frames of
//   node:vm and of this directory, and everything below the outermost frame of a cell)
//   and each cell's script path shown as its label (`<cell 3>`); line numbers are already
//   the user's (transform.js keeps lines), and line 1 columns are corrected by the
//   script's columnOffset.
// - Syntax errors found before running carry the offending line and a caret, like Node's.
// - Thrown non-Error values (strings, numbers, plain objects) become name "Error" with
//   the value as message.
// Assumes: `err` comes from user code and may be anything, including a Proxy or an object
// whose getters throw; describing never throws.

const path = require('path');
const util = require('util');

const OWN_FRAMES = [`(${__dirname}/`, `at ${__dirname}/`, 'node:vm:'];
const FRAME = /^\s+at /;

function safe(fn, fallback) {
  try { return fn(); } catch { return fallback; }
}

function show(v) {
  return typeof v === 'string' ? v : safe(() => util.inspect(v), String(typeof v));
}

// The lines of an error's stack that belong to the user.
function userStack(stack, cell) {
  let lines = stack.split(path.join(cell.scriptDir, '<cell ')).join('<cell ').split('\n');
  // Node decorates errors thrown through vm with "file:line", the script's line and a
  // caret, then a blank line; that line is the transformed one, so drop the decoration.
  const blank = lines.indexOf('');
  if (blank > 0 && blank < 4 && /^<cell \d+>:\d+$/.test(lines[0])) lines = lines.slice(blank + 1);
  const first = lines.findIndex((l) => FRAME.test(l));
  const header = first === -1 ? lines : lines.slice(0, first);
  let frames = first === -1 ? [] : lines.slice(first);
  const lastCell = frames.findLastIndex((l) => l.includes('<cell '));
  if (lastCell !== -1) frames = frames.slice(0, lastCell + 1);
  frames = frames.filter((l) => !OWN_FRAMES.some((own) => l.includes(own)));
  return { header, frames };
}

function fromErrorLike(err, cell) {
  const name = safe(() => String(err.name || err.constructor?.name || 'Error'), 'Error');
  const message = safe(() => (err.message === undefined ? '' : String(err.message)), '');
  const stack = safe(() => err.stack, undefined);
  if (typeof stack !== 'string') return { name, message, traceback: [`${name}: ${message}`] };
  const { header, frames } = userStack(stack, cell);
  return { name, message, traceback: [...header, ...frames] };
}

// Describes a SyntaxError found by transform.js (err.loc {line, column} in the cell).
function describeParseError(err, cell) {
  if (!err || !err.loc) return describeError(err, cell);
  const message = String(err.message).replace(/ \(\d+:\d+\)$/, '');
  const { line, column } = err.loc;
  const text = cell.source.split(/\r\n|[\n\r\u2028\u2029]/)[line - 1] ?? '';
  return {
    name: 'SyntaxError',
    message,
    traceback: [`${cell.label}:${line}`, text, `${' '.repeat(column)}^`, `SyntaxError: ${message}`],
  };
}

// cell = {scriptDir, label, source}: scripts of cell N are named scriptDir/<cell N>.
function describeError(err, cell) {
  if (err !== null && (typeof err === 'object' || typeof err === 'function') && safe(() => 'message' in err || 'stack' in err, false)) {
    return fromErrorLike(err, cell);
  }
  return { name: 'Error', message: show(err), traceback: [`Uncaught ${safe(() => util.inspect(err), show(err))}`] };
}

function interrupted() {
  return { name: 'KeyboardInterrupt', message: 'Execution interrupted', traceback: [] };
}

module.exports = { describeError, describeParseError, interrupted };
