// bench_mcp_sdk.mjs — `run_code 1+1` through the official MCP SDK's client
// (StreamableHTTPClientTransport, the pinned copy in tests/compat/mcp/node_modules) vs the
// native POST /v1/sandboxes/{sid}/execute through Node's fetch, alternating call by call on
// the same sandbox and context. Prints {"sdk":[ms…],"native":[ms…]} (after a warm-up).
//     node bench/bench_mcp_sdk.mjs URL N
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdk = path.join(here, "..", "tests", "compat", "mcp", "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");
const { Client } = await import(path.join(sdk, "client", "index.js"));
const { StreamableHTTPClientTransport } = await import(path.join(sdk, "client", "streamableHttp.js"));

const [url, nArg] = process.argv.slice(2);
const n = Number(nArg || 500);
const SID = "mcp-sdk";
await fetch(`${url}/v1/sandboxes/${SID}`, { method: "PUT" });
const client = new Client({ name: "bench", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
const first = await client.callTool({ name: "run_code", arguments: { code: "1+1", sandbox: SID } });
const cid = first.structuredContent.contextId;
const body = JSON.stringify({ code: "1+1", context: cid });

async function sdkOnce() {
  const r = await client.callTool({ name: "run_code", arguments: { code: "1+1", sandbox: SID } });
  if (r.content[0].text !== "2") throw new Error(JSON.stringify(r));
}
async function nativeOnce() {
  const r = await fetch(`${url}/v1/sandboxes/${SID}/execute`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body });
  const j = await r.json();
  if (j.results[0].text !== "2") throw new Error(JSON.stringify(j));
}
const out = { sdk: [], native: [] };
for (let i = 0; i < n + 50; i++) {
  for (const [k, fn] of [["native", nativeOnce], ["sdk", sdkOnce]]) {
    const t = performance.now();
    await fn();
    if (i >= 50) out[k].push(performance.now() - t);
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
