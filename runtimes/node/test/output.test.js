'use strict';
// console output, display() and rich results, and their order as a client sees it.

const test = require('node:test');
const assert = require('node:assert/strict');
const { startKernel } = require('./kernel-harness');

let k;
test.before(async () => { k = await startKernel(); });
test.after(() => k.close());

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

test('console.log goes to stdout, console.error and console.warn to stderr', async () => {
  const r = await k.run('console.log("out", 1, { a: 1 }); console.error("err"); console.warn("warn"); console.info("info")');
  assert.equal(r.stdout, "out 1 { a: 1 }\ninfo\n");
  assert.equal(r.stderr, 'err\nwarn\n');
});

test('output written before a result reaches the client before it', async () => {
  // The guarantee is one-way: output written before a message is drained before it
  // (output written just after may be drained early too, as the daemon would).
  const r = await k.run('console.log("one"); display("two"); process.stdout.write("three\\n"); display.html("<b>four</b>"); console.error("five"); "six"');
  const order = r.events.filter((e) => e.type !== 'end').map((e) => (e.type === 'result' ? e.result.text ?? e.result.html : e.text)).join('|');
  const at = (s) => order.indexOf(s);
  assert.ok(at('one') < at("'two'") && at('three') < at('<b>four</b>') && at('five') < at("'six'"), order);
  assert.equal(r.stdout, 'one\nthree\n');
  assert.equal(r.stderr, 'five\n');
});

test('display: one result per call, MIME bundles, shortcuts, _repr_ methods, images', async () => {
  const r = await k.run(`
    display({ 'text/html': '<b>hi</b>', 'text/plain': 'hi', 'application/vnd.custom+json': { k: 1 } });
    display.markdown('# title');
    display.svg('<svg/>');
    display.png(Buffer.from('${PNG}', 'base64'));
    display.json({ a: [1] });
    display({ _repr_html_() { return '<i>x</i>' }, toString() { return 'x' } });
    display(Buffer.from('${PNG}', 'base64'));
    display({ plain: true });
  `);
  assert.equal(r.error, null);
  const [bundle, md, svg, png, json, repr, bytes, plain] = r.results;
  assert.deepEqual(bundle, { html: '<b>hi</b>', text: 'hi', extra: { 'application/vnd.custom+json': { k: 1 } } });
  assert.deepEqual(md, { markdown: '# title' });
  assert.deepEqual(svg, { svg: '<svg/>' });
  assert.deepEqual(png, { png: PNG });
  assert.deepEqual(json, { json: { a: [1] } });
  assert.equal(repr.html, '<i>x</i>');
  assert.equal(bytes.png, PNG);
  assert.deepEqual(plain, { json: { plain: true }, text: '{ plain: true }' });
  assert.equal(r.results.length, 8);
  assert.ok(r.results.every((x) => !x.isMainResult));
});

test('a main result that is a MIME bundle is rich too', async () => {
  const r = await k.run("({ 'text/html': '<p>x</p>' })");
  assert.deepEqual(r.results, [{ html: '<p>x</p>', isMainResult: true }]);
});

test('output from timers after the run ends is plain stdout; the channel stays intact', async () => {
  const r = await k.run('setTimeout(() => { console.log("late"); display("late display"); }, 30); 1');
  assert.deepEqual(r.results.map((x) => x.text), ['1']);
  const later = await k.outputWithin(120);
  assert.deepEqual(later, [{ type: 'stdout', text: "late\n'late display'\n" }]);
  assert.equal((await k.run('2')).results[0].text, '2');
});

test('large output is delivered whole and before the end', async () => {
  const r = await k.run('for (let i = 0; i < 20000; i++) console.log("line " + i); "done"');
  assert.equal(r.stdout.split('\n').length, 20001);
  assert.equal(r.results[0].text, "'done'");
});

test('an uncaught exception while idle goes to stderr and the kernel lives on', async () => {
  await k.run('setTimeout(() => { throw new Error("idle boom") }, 10)');
  const later = await k.outputWithin(80);
  assert.equal(later.length, 1);
  assert.match(later[0].text, /^Uncaught Error: idle boom\n {4}at .*<cell \d+>:1:/);
  assert.equal((await k.run('3')).results[0].text, '3');
});
