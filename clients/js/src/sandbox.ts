/*
 * sandbox.ts — one sandbox: get-or-create, code (via interpreter.ts), commands, files, processes.
 *
 * `getSandbox(url, id)` sends nothing; the sandbox is created by a `PUT` on its first use (as
 * Cloudflare's `getSandbox(env.Sandbox, id)` starts its container lazily), once per Sandbox
 * object, again after `destroy()`. A failed `PUT` is retried by the next call, not cached.
 * Method names and argument orders are Cloudflare's where it has the method.
 */
import { SandboxdError, ValidationError } from "./errors.js";
import { Execution, Result } from "./execution.js";
import { CodeInterpreter, type PlainCodeInterpreter, type SandboxHandle } from "./interpreter.js";
import { eventStream, type EventStream } from "./sse.js";
import { definedOnly, sandboxPath, segment, Transport } from "./transport.js";
import type {
  CodeContext,
  ConnectionOptions,
  CreateContextOptions,
  ExecEvent,
  ExecOptions,
  ExecResult,
  ExecutionEvent,
  FileEntry,
  InterruptResult,
  ListFilesResult,
  ProcessInfo,
  ProcessLogEvent,
  ProcessLogs,
  ProcessOptions,
  ReadFileOptions,
  ReadFileResult,
  RunCodeOptions,
  AttachOptions,
  SandboxInfo,
  SandboxOptions,
  StdinWrite,
  WriteFileOptions,
  WriteFileResult,
} from "./types.js";

const WORKSPACE = "/workspace";

/** A sandbox path as the files route takes it: relative to /workspace when under it. */
function filesRoute(base: string, path: string): string {
  let p = path;
  if (p === WORKSPACE || p === WORKSPACE + "/") p = "";
  else if (p.startsWith(WORKSPACE + "/")) p = p.slice(WORKSPACE.length + 1);
  // A URL cannot carry "." or ".." segments (fetch resolves them, even as %2E, and would send
  // the request to another route or sandbox): "." is dropped, ".." refused as the daemon would.
  const segs = p.split("/").filter((s) => s !== "." && s !== "");
  if (segs.includes(".."))
    throw new ValidationError(`path '${path}' contains '..' (paths may not climb)`, "VALIDATION_FAILED", 400);
  const enc = segs.map(encodeURIComponent).join("/");
  return `${base}/files/${enc}`;
}

/** The absolute path of `name` inside the sandbox directory `dir`. */
function joinPath(dir: string, name: string): string {
  const abs = dir.startsWith("/") ? dir : `${WORKSPACE}/${dir}`;
  return `${abs.replace(/\/+$/, "")}/${name}`;
}

function toBytes(content: string | Uint8Array | ArrayBuffer, encoding?: string): Uint8Array {
  if (content instanceof Uint8Array) return content;
  if (content instanceof ArrayBuffer) return new Uint8Array(content);
  if (encoding === "base64") {
    const bin = atob(content);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  return new TextEncoder().encode(content);
}

function toBase64(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

export class Sandbox implements SandboxHandle {
  readonly id: string;
  readonly transport: Transport;
  readonly path: string;
  /** The same code-interpreter methods, returning plain data (Cloudflare's `sandbox.interpreter`). */
  readonly interpreter: PlainCodeInterpreter;
  private readonly code: CodeInterpreter;
  private readonly options: SandboxOptions;
  private created?: Promise<void>;

  constructor(conn: ConnectionOptions, id: string, options: SandboxOptions = {}) {
    this.id = id;
    this.transport = new Transport(conn);
    this.path = sandboxPath(id);
    this.options = options;
    this.code = new CodeInterpreter(this);
    this.interpreter = new CodeInterpreter(this, true) as PlainCodeInterpreter;
  }

  /** Creates the sandbox if it does not exist yet (once per object; retried after a failure). */
  ready(): Promise<void> {
    this.created ??= this.transport.json("PUT", this.path, { json: this.options }).then(
      () => undefined,
      (e) => {
        this.created = undefined;
        throw e;
      });
    return this.created;
  }

  /** The sandbox's limits and usage. */
  async info(): Promise<SandboxInfo> {
    await this.ready();
    return this.transport.json<SandboxInfo>("GET", this.path);
  }

  /** Ends every process and removes the workspace. The next call creates the sandbox afresh. */
  async destroy(): Promise<void> {
    this.created = undefined;
    try {
      await this.transport.json("DELETE", this.path);
    } catch (e) {
      if (!(e instanceof SandboxdError && e.code === "SANDBOX_NOT_FOUND")) throw e;
    }
  }

  /* ---- code (see interpreter.ts) ---- */

  createCodeContext(opts?: CreateContextOptions): Promise<CodeContext> {
    return this.code.createCodeContext(opts);
  }
  listCodeContexts(): Promise<CodeContext[]> {
    return this.code.listCodeContexts();
  }
  getCodeContext(context: CodeContext | string): Promise<CodeContext> {
    return this.code.getCodeContext(context);
  }
  deleteCodeContext(context: CodeContext | string): Promise<void> {
    return this.code.deleteCodeContext(context);
  }
  restartCodeContext(context: CodeContext | string): Promise<CodeContext> {
    return this.code.restartCodeContext(context);
  }
  interruptCodeContext(context: CodeContext | string): Promise<InterruptResult> {
    return this.code.interruptCodeContext(context);
  }
  runCode(code: string, opts?: RunCodeOptions<Result>): Promise<Execution> {
    return this.code.runCode(code, opts);
  }
  runCodeStream(code: string, opts?: RunCodeOptions<Result>): EventStream<ExecutionEvent> {
    return this.code.runCodeStream(code, opts);
  }
  /** Re-attach to a run by its id (`Execution.id`): replayed, then followed to its end. */
  attach(executionId: string, opts?: AttachOptions<Result>): Promise<Execution> {
    return this.code.attach(executionId, opts);
  }
  attachStream(executionId: string, opts?: AttachOptions<Result>): EventStream<ExecutionEvent> {
    return this.code.attachStream(executionId, opts);
  }
  /** Cancel a queued run or interrupt a running one, by its id. */
  cancelExecution(executionId: string): Promise<{ id: string; cancelled: boolean; interrupted: boolean }> {
    return this.code.cancelExecution(executionId);
  }

  /* ---- commands ---- */

  private execBody(command: string, opts: ExecOptions): Record<string, unknown> {
    return { command, cwd: opts.cwd, env: definedOnly(opts.env), timeoutMs: opts.timeout, stdin: opts.stdin };
  }

  /** Runs a shell command to completion; `onOutput` gets its output as it is printed. */
  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    if (!opts.onOutput && !opts.stream && !opts.signal) {
      await this.ready();
      return this.transport.json<ExecResult>("POST", `${this.path}/exec`, { json: this.execBody(command, opts) });
    }
    const out = { stdout: "", stderr: "" };
    let end: Extract<ExecEvent, { type: "complete" }> | undefined;
    for await (const ev of this.execEvents(command, opts)) {
      if (ev.type === "complete") end = ev;
      else {
        out[ev.type] += ev.data;
        await opts.onOutput?.(ev.type, ev.data);
      }
    }
    if (!end) throw new SandboxdError("the exec stream ended without its exit event", "NETWORK_ERROR");
    return { ...out, exitCode: end.exitCode, success: end.exitCode === 0 && !end.timedOut,
      durationMs: end.durationMs, timedOut: end.timedOut };
  }

  /** Runs a shell command, returning its events as a stream (also async-iterable). */
  execStream(command: string, opts: ExecOptions = {}): EventStream<ExecEvent> {
    return eventStream(this.execEvents(command, opts));
  }

  private async *execEvents(command: string, opts: ExecOptions): AsyncGenerator<ExecEvent> {
    await this.ready();
    const { messages } = await this.transport.sse("POST", `${this.path}/exec`,
      { json: this.execBody(command, opts), signal: opts.signal });
    for await (const m of messages) {
      const d = JSON.parse(m.data) as { text?: string; exitCode: number; durationMs: number; timedOut: boolean };
      if (m.event === "stdout" || m.event === "stderr") yield { type: m.event, data: d.text ?? "" };
      else if (m.event === "exit")
        yield { type: "complete", exitCode: d.exitCode, durationMs: d.durationMs, timedOut: d.timedOut };
    }
  }

  /* ---- files ---- */

  /** Writes a file (parents created). `encoding: "base64"` decodes a base64 `content` first. */
  async writeFile(path: string, content: string | Uint8Array | ArrayBuffer,
                  opts: WriteFileOptions = {}): Promise<WriteFileResult> {
    await this.ready();
    return this.transport.json<WriteFileResult>("PUT", filesRoute(this.path, path),
      { body: toBytes(content, opts.encoding) });
  }

  /** Reads a file: UTF-8 text as is, anything else (or `encoding: "base64"`) as base64. */
  async readFile(path: string, opts: ReadFileOptions = {}): Promise<ReadFileResult> {
    const bytes = await this.readFileBytes(path);
    let text: string | undefined;
    if (opts.encoding !== "base64") {
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        /* not UTF-8: base64 */
      }
    }
    return text !== undefined
      ? { path, content: text, encoding: "utf-8", isBinary: false, size: bytes.length }
      : { path, content: toBase64(bytes), encoding: "base64", isBinary: true, size: bytes.length };
  }

  /** A file's raw bytes. */
  async readFileBytes(path: string): Promise<Uint8Array> {
    await this.ready();
    const res = await this.transport.request("GET", filesRoute(this.path, path));
    return new Uint8Array(await res.arrayBuffer());
  }

  /** The entries of a directory (default /workspace), each with its absolute path. */
  async listFiles(path = WORKSPACE): Promise<ListFilesResult> {
    await this.ready();
    const r = await this.transport.json<{ entries: Omit<FileEntry, "absolutePath">[] }>(
      "GET", filesRoute(this.path, path));
    return { path, files: r.entries.map((e) => ({ ...e, absolutePath: joinPath(path, e.name) })) };
  }

  async deleteFile(path: string): Promise<void> {
    await this.ready();
    await this.transport.request("DELETE", filesRoute(this.path, path));
  }

  /** Creates a directory and its parents. */
  async mkdir(path: string, _opts: { recursive?: boolean } = {}): Promise<void> {
    await this.ready();
    await this.transport.request("POST", `${this.path}/files:mkdir`, { json: { path } });
  }

  async moveFile(from: string, to: string): Promise<void> {
    await this.ready();
    await this.transport.request("POST", `${this.path}/files:move`, { json: { from, to } });
  }

  /** Cloudflare's name for moveFile. */
  renameFile(oldPath: string, newPath: string): Promise<void> {
    return this.moveFile(oldPath, newPath);
  }

  /* ---- background processes ---- */

  private procPath(id?: string): string {
    return `${this.path}/processes${id === undefined ? "" : "/" + segment(id)}`;
  }

  /** Starts a command in the background; it runs until it exits, is killed, or the sandbox ends. */
  async startProcess(command: string, opts: ProcessOptions = {}): Promise<ProcessInfo> {
    await this.ready();
    return this.transport.json<ProcessInfo>("POST", this.procPath(),
      { json: { command, cwd: opts.cwd, env: definedOnly(opts.env), stdin: opts.stdin || undefined } });
  }

  /**
   * Writes to the stdin of a process started with `{stdin: true}` (strings as UTF-8, bytes as
   * base64); `{eof: true}` closes it after `data`. Past --process-stdin-bytes unread by the
   * process the daemon answers 429 (LimitReachedError) and nothing of the write was written.
   */
  async writeStdin(id: string, data: string | Uint8Array, opts: { eof?: boolean } = {}): Promise<StdinWrite> {
    await this.ready();
    const json: Record<string, unknown> = typeof data === "string"
      ? { data }
      : { data: toBase64(data), encoding: "base64" };
    if (opts.eof) json.eof = true;
    return this.transport.json<StdinWrite>("POST", `${this.procPath(id)}/stdin`, { json });
  }

  async listProcesses(): Promise<ProcessInfo[]> {
    await this.ready();
    const r = await this.transport.json<ProcessInfo[] | { processes: ProcessInfo[] }>("GET", this.procPath());
    return Array.isArray(r) ? r : r.processes;
  }

  async getProcess(id: string): Promise<ProcessInfo> {
    await this.ready();
    return this.transport.json<ProcessInfo>("GET", this.procPath(id));
  }

  /** The output so far. */
  async getProcessLogs(id: string): Promise<ProcessLogs> {
    await this.ready();
    return this.transport.json<ProcessLogs>("GET", `${this.procPath(id)}/logs`);
  }

  /** Follows a process's output until it exits (stream, also async-iterable). */
  streamProcessLogs(id: string, opts: { signal?: AbortSignal } = {}): EventStream<ProcessLogEvent> {
    const self = this;
    async function* gen(): AsyncGenerator<ProcessLogEvent> {
      await self.ready();
      const { messages } = await self.transport.sse("GET", `${self.procPath(id)}/logs`, { signal: opts.signal });
      for await (const m of messages) {
        const d = JSON.parse(m.data) as Record<string, unknown>;
        yield (m.event === "stdout" || m.event === "stderr"
          ? { type: m.event, data: String(d.text ?? d.data ?? "") }
          : { ...d, type: m.event }) as ProcessLogEvent;
      }
    }
    return eventStream(gen());
  }

  /** Ends a background process. */
  async killProcess(id: string): Promise<void> {
    await this.ready();
    await this.transport.request("DELETE", this.procPath(id));
  }
}

/**
 * The sandbox `id` on the daemon at `conn` (a URL, or `{url, token}`), created on first use.
 * The drop-in for Cloudflare's `getSandbox(env.Sandbox, id)`.
 */
export function getSandbox(conn: string | ConnectionOptions, id: string, options?: SandboxOptions): Sandbox {
  return new Sandbox(typeof conn === "string" ? { url: conn } : conn, id, options);
}
