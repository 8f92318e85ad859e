// readme.mjs — turns a README's ```ts blocks into one runnable ES module (see readme.test.mjs).
import { pathToFileURL } from "node:url";


function literal(text) {
  for (const candidate of [text.split(/;|:\s|\s{2,}/)[0].trim(), text.trim()]) {
    try { return { value: JSON.parse(candidate) }; } catch { /* prose, not a claim */ }
  }
  return null;
}

// One README's ts blocks as a module; returns [source, number of claims checked].
export function toModule(markdown, url, distPath) {
  const dist = pathToFileURL(distPath).href;
  const blocks = [...markdown.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => m[1]);
  let claims = 0;
  const out = ['import __assert from "node:assert/strict";',
    "const __check = (got, want, what) => __assert.deepEqual(got, want, what);"];
  for (const block of blocks) {
    for (let line of block.replaceAll("http://127.0.0.1:7878", url).split("\n")) {
      line = line.replace(/from "sandboxd"/, `from ${JSON.stringify(dist)}`)
        .replace(/^(const|let) /, "var ");
      const expr = /^(.*?);\s*\/\/\s*(.*)$/.exec(line); // the first "; //" ends the statement
      const tail = /\/\/\s*([\w.[\]]+) === ("[^"]*"|\d+|true|false)\s*$/.exec(line);
      if (expr && !/^(var|await|for|if|import|\/\/|\s)/.test(expr[1]) && literal(expr[2])) {
        out.push(`__check(${expr[1]}, ${JSON.stringify(literal(expr[2]).value)}, ${JSON.stringify(line)});`);
        claims++;
      } else if (tail) {
        out.push(line, `__check(${tail[1]}, ${tail[2]}, ${JSON.stringify(line)});`);
        claims++;
      } else {
        out.push(line);
      }
    }
  }
  return [out.join("\n") + "\nawait sandbox.destroy();\n", claims];
}

