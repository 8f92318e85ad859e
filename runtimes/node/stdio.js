'use strict';
// stdio.js — the context's output: synchronous writes to fd 1 and 2, and knowing when
// everything written through process.stdout/process.stderr has reached the pipe.
//
// Guarantees:
// - writeOut/writeErr hand the whole text to the kernel before returning (a full pipe
//   blocks the caller, which is the back-pressure the daemon relies on; EAGAIN on a pipe
//   that Node made non-blocking is retried after a 1 ms sleep). A closed pipe (EPIPE)
//   drops the text: the daemon is gone and the channel will end the process.
// - pendingOutput() is true while process.stdout/process.stderr (Node's asynchronous
//   streams, created lazily) still hold queued bytes; flushed() resolves once they do not.
// - The console given to user code writes through writeOut/writeErr, so its output is in
//   the pipe before any later channel message.
// Assumes: it is loaded before anything touches process.stdout/process.stderr.

const fs = require('fs');
const { Console } = require('console');

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function writeAll(fd, text) {
  const buf = Buffer.from(String(text), 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off);
    } catch (err) {
      if (err.code !== 'EAGAIN') return;
      Atomics.wait(sleeper, 0, 0, 1);
    }
  }
}

// Replaces the lazy process.stdout/stderr getters with ones that remember the stream.
function track(name) {
  const desc = Object.getOwnPropertyDescriptor(process, name);
  let stream = null;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: desc.enumerable,
    get() { return (stream ??= desc.get.call(process)); },
  });
  return () => stream;
}

const streams = [track('stdout'), track('stderr')];

function pendingOutput() {
  return streams.some((get) => { const s = get(); return s !== null && s.writableLength > 0; });
}

function flushed() {
  return new Promise((resolve) => {
    const check = () => (pendingOutput() ? setTimeout(check, 1) : resolve());
    check();
  });
}

const writeOut = (text) => writeAll(1, text);
const writeErr = (text) => writeAll(2, text);

function makeConsole() {
  return new Console({
    stdout: { write: (s) => { writeOut(s); return true; } },
    stderr: { write: (s) => { writeErr(s); return true; } },
    colorMode: false,
    ignoreErrors: false, // writeAll never throws; true would need EventEmitter streams
  });
}

module.exports = { writeOut, writeErr, pendingOutput, flushed, makeConsole };
