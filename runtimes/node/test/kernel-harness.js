'use strict';
// kernel-harness.js — drives a kernel the way the daemon does, for the tests and the
// benchmark: fd 3 is a socketpair, fd 1 and 2 are FIFOs that are drained before each
// channel message is handled (the daemon's ordering rule), so `events` is the order a
// client would see.

const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const KERNEL = path.join(__dirname, '..', 'kernel.js');

function openFifo(file) {
  execFileSync('mkfifo', [file]);
  const reader = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writer = fs.openSync(file, fs.constants.O_WRONLY);
  return { reader, writer };
}

function drainFifo(fd) {
  const chunks = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n;
    try { n = fs.readSync(fd, buf, 0, buf.length, null); } catch (err) {
      if (err.code === 'EAGAIN') break;
      throw err;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString('utf8');
}

// Starts a kernel; resolves once `ready` arrived.
async function startKernel({ language = 'javascript', cwd = process.cwd(), env = {} } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-node-'));
  const out = openFifo(path.join(dir, 'out'));
  const err = openFifo(path.join(dir, 'err'));
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, [KERNEL], {
    cwd,
    env: { ...process.env, ...env, SANDBOXD_LANGUAGE: language },
    stdio: ['ignore', out.writer, err.writer, 'pipe'],
  });
  fs.closeSync(out.writer);
  fs.closeSync(err.writer);
  const channel = child.stdio[3];
  const kernel = {
    child, events: [], waiters: [], ready: null, readyMs: 0,
    drain() {
      const o = drainFifo(out.reader);
      if (o) kernel.events.push({ type: 'stdout', text: o });
      const e = drainFifo(err.reader);
      if (e) kernel.events.push({ type: 'stderr', text: e });
    },
    notify() { for (const w of kernel.waiters.splice(0)) w(); },
    send(msg) { channel.write(JSON.stringify(msg) + '\n'); },
    next() { return new Promise((resolve) => kernel.waiters.push(resolve)); },
    // Runs one cell; resolves with what the client would see.
    async run(code, { envVars, onEvent } = {}) {
      const id = `e${Math.random().toString(36).slice(2)}`;
      const start = kernel.events.length;
      kernel.send({ type: 'execute', id, code, envVars });
      let seen = start;
      for (;;) {
        while (seen < kernel.events.length) {
          const ev = kernel.events[seen++];
          if (onEvent) onEvent(ev);
          if (ev.type === 'end' && ev.id === id) return summarize(kernel.events.slice(start, seen), id);
        }
        await kernel.next();
      }
    },
    // Output (stdout/stderr text) that arrives within ms milliseconds.
    async outputWithin(ms) {
      const start = kernel.events.length;
      await new Promise((r) => setTimeout(r, ms));
      kernel.drain();
      return kernel.events.slice(start).filter((e) => e.type === 'stdout' || e.type === 'stderr');
    },
    async close() {
      clearInterval(poll);
      child.kill('SIGKILL');
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
      fs.closeSync(out.reader);
      fs.closeSync(err.reader);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  let partial = '';
  channel.setEncoding('utf8');
  channel.on('data', (chunk) => {
    partial += chunk;
    let nl;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const msg = JSON.parse(partial.slice(0, nl));
      partial = partial.slice(nl + 1);
      kernel.drain();
      if (msg.type === 'ready' && !kernel.ready) {
        kernel.ready = msg;
        kernel.readyMs = Number(process.hrtime.bigint() - t0) / 1e6;
      }
      kernel.events.push(msg);
    }
    kernel.notify();
  });
  channel.on('error', () => {});
  const poll = setInterval(() => { const n = kernel.events.length; kernel.drain(); if (kernel.events.length !== n) kernel.notify(); }, 5);
  poll.unref();
  while (!kernel.ready) {
    if (child.exitCode !== null) throw new Error(`kernel exited: ${drainFifo(err.reader)}`);
    await Promise.race([kernel.next(), new Promise((r) => child.once('exit', r))]);
  }
  return kernel;
}

function summarize(events, id) {
  const mine = events.filter((e) => e.id === undefined || e.id === id);
  return {
    events: mine,
    results: mine.filter((e) => e.type === 'result').map((e) => e.result),
    error: mine.find((e) => e.type === 'error')?.error ?? null,
    end: mine.find((e) => e.type === 'end'),
    stdout: mine.filter((e) => e.type === 'stdout').map((e) => e.text).join(''),
    stderr: mine.filter((e) => e.type === 'stderr').map((e) => e.text).join(''),
  };
}

module.exports = { startKernel };
