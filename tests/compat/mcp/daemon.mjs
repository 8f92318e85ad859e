// daemon.mjs — a real sandboxd for the MCP tests (tests/support/daemon.mjs), and the official
// SDK's Client connected to it over Streamable HTTP (/mcp) or over stdio (`sbx mcp`).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import path from "node:path";

import { BUILD, runDaemon } from "../../support/daemon.mjs";

export { BUILD };

export async function startDaemon(...flags) {
  const d = await runDaemon("sbx-mcp-", flags);
  const url = d.url;
  return {
    ...d,
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
  };
}

// The text contents of a tool result, joined.
export function texts(result) {
  return result.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}
