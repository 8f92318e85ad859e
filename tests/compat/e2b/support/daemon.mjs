// daemon.mjs — a real sandboxd for one E2B test file (tests/support/daemon.mjs), and the E2B
// SDK pointed at it: connect(id) is the one line a user changes,
// Sandbox.connect(id, {debug: true, sandboxUrl}).
import { Sandbox } from "@e2b/code-interpreter";
import { runDaemon } from "../../../support/daemon.mjs";

export async function startDaemon(extraArgs = []) {
  const d = await runDaemon("sbx-e2b-", ["--log-level", "warn", ...extraArgs]);
  return {
    ...d,
    connect: (id, opts = {}) => Sandbox.connect(id, { debug: true, sandboxUrl: d.url, ...opts }),
  };
}
