// daemon.mjs — a real sandboxd for the MCP tests: $SANDBOXD_BUILD/sandboxd (default
// ../../../build) on a free loopback port with its own temporary state directory, and
// the official SDK's Client connected to it over Streamable HTTP (/mcp) or over stdio
// (`sbx mcp`). stop() sends SIGTERM and fails unless the daemon exits 0.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const BUILD = process.env.SANDBOXD_BUILD || path.join(here, "..", "..", "..", "build");

export async function startDaemon(...flags) {
  const state = mkdtempSync(path.join(tmpdir(), "sbx-mcp-"));
  const proc = spawn(path.join(BUILD, "sandboxd"),
    ["--listen", "127.0.0.1:0", "--state-dir", path.join(state, "state"), ...flags],
    { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("sandboxd did not start:\n" + log)), 30000);
    const onData = (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", onData);
    proc.on("exit", (code) => reject(new Error(`sandboxd exited ${code}:\n${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    log: () => log,
    // The SDK's client over Streamable HTTP, as docs/mcp.md tells agent frameworks to.
    async httpClient(token) {
      const client = new Client({ name: "sandboxd-test", version: "1.0.0" });
      const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), opts));
      return client;
    },
    // The SDK's client launching `sbx mcp`, as a desktop agent's config does.
    async stdioClient(token) {
      const client = new Client({ name: "sandboxd-test", version: "1.0.0" });
      const env = { ...process.env, SANDBOXD_URL: url };
      if (token) env.SANDBOXD_TOKEN = token;
      await client.connect(new StdioClientTransport({
        command: path.join(BUILD, "sbx"), args: ["mcp"], env, stderr: "pipe",
      }));
      return client;
    },
    async stop() {
      const exited = new Promise((resolve) => proc.once("exit", (code, sig) => resolve({ code, sig })));
      proc.kill("SIGTERM");
      const { code, sig } = await exited;
      rmSync(state, { recursive: true, force: true });
      if (code !== 0) throw new Error(`sandboxd exited ${code ?? sig} on SIGTERM:\n${log}`);
    },
  };
}

// The text contents of a tool result, joined.
export function texts(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}
