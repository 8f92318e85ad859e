'use strict';
// channel.js — the protocol channel on fd 3: newline-delimited JSON in both directions
// (docs/protocol.md).
//
// Guarantees:
// - send(...msgs) writes one line per message in a single write; messages leave in the
//   order send() was called, and each
//   leaves only after every byte written earlier to process.stdout/process.stderr has
//   reached the pipe (the ordering rule). The common case (nothing pending) writes at once.
// - onMessage(msg) is called once per complete line, in order; a line that is not a JSON
//   object is ignored (the daemon never sends one).
// - When the daemon closes the channel the process exits: a context has nothing to do
//   without it.
// Assumes: fd 3 is a connected SOCK_STREAM unix socket.

const net = require('net');
const { pendingOutput, flushed } = require('./stdio');

function openChannel(onMessage) {
  const sock = new net.Socket({ fd: 3, readable: true, writable: true });
  let partial = '';
  let queue = null; // a promise while messages wait for stdout/stderr to drain

  sock.setEncoding('utf8');
  sock.on('data', (chunk) => {
    partial += chunk;
    let nl;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let msg;
      try { msg = JSON.parse(line); } catch { continue; }
      if (msg && typeof msg === 'object') onMessage(msg);
    }
  });
  sock.on('end', () => process.exit(0));
  sock.on('error', () => process.exit(0));

  function send(...msgs) {
    const line = msgs.map((m) => JSON.stringify(m) + '\n').join('');
    if (queue === null && !pendingOutput()) { sock.write(line); return; }
    const mine = (queue ?? Promise.resolve()).then(flushed).then(() => {
      sock.write(line);
      if (queue === mine) queue = null;
    });
    queue = mine;
  }

  return { send };
}

module.exports = { openChannel };
