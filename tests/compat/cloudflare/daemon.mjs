// daemon.mjs — a real sandboxd for the tests: $SANDBOXD_BUILD/sandboxd (default ../../../build)
// on a free loopback port with its own temporary state directory; stop() sends SIGTERM and
// fails unless the daemon exits 0 (a clean shutdown is part of every test file).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxClient, CodeInterpreter } from "@cloudflare/sandbox";

const here = path.dirname(fileURLToPath(import.meta.url));
const BUILD = process.env.SANDBOXD_BUILD || path.join(here, "..", "..", "..", "build");

export async function startDaemon(...flags) {
  const state = mkdtempSync(path.join(tmpdir(), "sbx-cf-"));
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
    // The real client, pointed at sandboxd exactly as docs/compat.md tells users to.
    client(sandboxId, headers = {}) {
      return new SandboxClient({ baseUrl: url, defaultHeaders: { "X-Sandbox-Id": sandboxId, ...headers } });
    },
    interpreter(sandboxId, headers = {}) {
      return new CodeInterpreter(this.client(sandboxId, headers).interpreter);
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
