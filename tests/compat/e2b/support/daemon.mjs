// daemon.mjs — a real sandboxd for one test file, and the E2B SDK pointed at it.
//
// The binary is $SANDBOXD_BUILD/sandboxd (default ../../../build). It listens on port 0 with
// a fresh state directory; the URL comes from its stderr line "listening on http://…".
// connect(id) is the one line a user changes: Sandbox.connect(id, {debug: true, sandboxUrl}).
// stop() sends SIGTERM, waits for the exit (SIGKILL after 10 s) and removes the state dir.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Sandbox } from "@e2b/code-interpreter";

const here = dirname(fileURLToPath(import.meta.url));
const buildDir = resolve(process.env.SANDBOXD_BUILD ?? join(here, "..", "..", "..", "..", "build"));

export async function startDaemon(extraArgs = []) {
  const stateDir = mkdtempSync(join(tmpdir(), "sandboxd-e2b-"));
  const proc = spawn(join(buildDir, "sandboxd"),
    ["--listen", "127.0.0.1:0", "--state-dir", stateDir, "--log-level", "warn", ...extraArgs],
    { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`sandboxd did not start in 20 s:\n${log}`)), 20000);
    proc.stderr.setEncoding("utf8");
    proc.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    proc.on("error", (e) => { clearTimeout(timer); fail(e); });
    proc.on("exit", (code) => { clearTimeout(timer); fail(new Error(`sandboxd exited (${code}):\n${log}`)); });
  });
  proc.stderr.resume();
  return {
    url,
    log: () => log,
    connect: (id, opts = {}) => Sandbox.connect(id, { debug: true, sandboxUrl: url, ...opts }),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((ok) => proc.once("exit", ok));
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), 10000);
        const code = await exited;
        clearTimeout(t);
        if (code !== 0) throw new Error(`sandboxd exited ${code} on SIGTERM:\n${log}`);
      }
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
