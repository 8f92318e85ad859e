// daemon.mjs — a real sandboxd for one Node test file (the compatibility suites under
// tests/compat/ share it): $SANDBOXD_BUILD/sandboxd (default build/ of this checkout) on a
// free loopback port with its own temporary state directory. The URL comes from its line
// "listening on http://127.0.0.1:PORT". stop() sends SIGTERM (SIGKILL after 20 s), removes
// the state directory, and fails unless the daemon exited 0: a clean shutdown is part of
// every test file.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const BUILD = path.resolve(process.env.SANDBOXD_BUILD || path.join(here, "..", "..", "build"));

export async function runDaemon(prefix, flags = []) {
  const state = mkdtempSync(path.join(tmpdir(), prefix));
  const proc = spawn(path.join(BUILD, "sandboxd"),
    ["--listen", "127.0.0.1:0", "--state-dir", path.join(state, "state"), ...flags],
    { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("sandboxd did not start in 30 s:\n" + log)), 30000);
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
    proc.on("error", (e) => { clearTimeout(timer); reject(e); });
    proc.on("exit", (code) => { clearTimeout(timer); reject(new Error(`sandboxd exited ${code}:\n${log}`)); });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log: () => log,
    async stop() {
      let result = { code: proc.exitCode, sig: proc.signalCode };
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((resolve) => proc.once("exit", (code, sig) => resolve({ code, sig })));
        proc.kill("SIGTERM");
        const t = setTimeout(() => proc.kill("SIGKILL"), 20000);
        result = await exited;
        clearTimeout(t);
      }
      rmSync(state, { recursive: true, force: true });
      if (result.code !== 0) throw new Error(`sandboxd exited ${result.code ?? result.sig} on SIGTERM:\n${log}`);
    },
  };
}
