// daemon.mjs — a real sandboxd for the Cloudflare tests (tests/support/daemon.mjs) and the real
// client pointed at it.
import { SandboxClient, CodeInterpreter } from "@cloudflare/sandbox";
import { runDaemon } from "../../support/daemon.mjs";

export async function startDaemon(...flags) {
  const d = await runDaemon("sbx-cf-", flags);
  const url = d.url;
  return {
    ...d,
    // The real client, pointed at sandboxd exactly as docs/compat.md tells users to.
    client(sandboxId, headers = {}) {
      return new SandboxClient({ baseUrl: url, defaultHeaders: { "X-Sandbox-Id": sandboxId, ...headers } });
    },
    interpreter(sandboxId, headers = {}) {
      return new CodeInterpreter(this.client(sandboxId, headers).interpreter);
    },
  };
}
