'use strict';
// bench.js — measures the kernel: start to `ready` against a bare `node -e 0`, the `1+1`
// round trip over the channel, and what TypeScript adds to a 20-line cell.
// Run: node runtimes/node/bench.js [starts=20] [runs=2000]. Prints medians.

const { spawn } = require('child_process');
const { startKernel } = require('./test/kernel-harness');

const starts = Number(process.argv[2] || 20);
const runs = Number(process.argv[3] || 2000);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const now = () => Number(process.hrtime.bigint()) / 1e6;

function bareNode() {
  const t0 = now();
  return new Promise((resolve) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).on('exit', () => resolve(now() - t0)));
}

const JS_CELL = Array.from({ length: 20 }, (_, i) => `const v${i} = { id: ${i}, name: 'n${i}', tags: ['a', 'b'] };`).join('\n');
const TS_CELL = Array.from({ length: 20 }, (_, i) => `const v${i}: { id: number; name: string; tags: string[] } = { id: ${i}, name: 'n${i}', tags: ['a', 'b'] as string[] };`).join('\n');

// Round trips over the bare channel (stdout/stderr ignored), the way a C daemon sees them.
function rawKernel(language) {
  const child = spawn(process.execPath, [require.resolve('./kernel')], {
    env: { ...process.env, SANDBOXD_LANGUAGE: language },
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
  });
  const channel = child.stdio[3];
  let partial = '';
  let waiter = null;
  channel.setEncoding('utf8');
  channel.on('data', (chunk) => {
    partial += chunk;
    if (partial.endsWith('\n') && waiter && partial.includes(waiter.marker)) { partial = ''; const w = waiter; waiter = null; w.resolve(); }
  });
  const until = (marker) => new Promise((resolve) => { waiter = { marker, resolve }; });
  return {
    ready: until('"ready"'),
    run(code, i) {
      const done = until(`"end","id":"r${i}"`);
      channel.write(JSON.stringify({ type: 'execute', id: `r${i}`, code }) + '\n');
      return done;
    },
    close() { child.kill('SIGKILL'); },
  };
}

async function roundTrips(kernel, code, n) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await kernel.run(code, i);
    times.push((now() - t0) * 1000);
  }
  return median(times);
}

(async () => {
  const bare = [];
  const ready = { javascript: [], typescript: [] };
  for (let i = 0; i < starts; i++) {
    bare.push(await bareNode());
    for (const language of ['javascript', 'typescript']) {
      const k = await startKernel({ language });
      ready[language].push(k.readyMs);
      await k.close();
    }
  }
  console.log(`node -e 0 (spawn to exit):      ${median(bare).toFixed(1)} ms`);
  console.log(`kernel start to ready (js):     ${median(ready.javascript).toFixed(1)} ms`);
  console.log(`kernel start to ready (ts):     ${median(ready.typescript).toFixed(1)} ms`);

  const js = rawKernel('javascript');
  await js.ready;
  const t0 = now();
  await js.run('1', 'first');
  console.log(`first cell after ready (js):    ${(now() - t0).toFixed(1)} ms`);
  await roundTrips(js, '1+1', 200); // warm up
  console.log(`1+1 round trip (js):            ${(await roundTrips(js, '1+1', runs)).toFixed(0)} µs`);
  console.log(`20-line cell (js):              ${(await roundTrips(js, JS_CELL, 500)).toFixed(0)} µs`);
  js.close();

  const ts = rawKernel('typescript');
  await ts.ready;
  const t1 = now();
  await ts.run('1', 'first');
  console.log(`first cell after ready (ts):    ${(now() - t1).toFixed(1)} ms`);
  await roundTrips(ts, TS_CELL, 200);
  console.log(`1+1 round trip (ts):            ${(await roundTrips(ts, '1+1', runs)).toFixed(0)} µs`);
  console.log(`20-line cell (ts):              ${(await roundTrips(ts, TS_CELL, 500)).toFixed(0)} µs`);
  ts.close();
})();
