/*
 * types.ts — the shapes of the sandboxd HTTP API v1 (shared/API.md) as the SDK exposes them.
 *
 * Everything here is plain data: it survives JSON.stringify and structuredClone. Field names are
 * the server's (camelCase); where the SDK turns a field into something richer (ISO strings into
 * Dates on CodeContext) the type says so. Optional fields are present only when the server sent them.
 */

/** Languages a code context can run. */
export type Language = "python" | "javascript" | "typescript";

/** Where the daemon is and how to authenticate to it. */
export interface ConnectionOptions {
  /** Base URL of the daemon, e.g. `http://127.0.0.1:7878`. */
  url: string;
  /** Bearer token, when the daemon was started with `--token`. */
  token?: string;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

/** Options for the sandbox itself, sent with the get-or-create `PUT`. */
export interface SandboxOptions {
  limits?: Partial<SandboxLimits>;
  network?: "none" | "host";
  env?: Record<string, string>;
}

export interface SandboxLimits {
  memoryMb: number;
  pids: number;
  cpus: number;
  diskMb: number;
  timeoutMs: number;
  [key: string]: number;
}

/** `GET /v1/sandboxes/{id}`. */
export interface SandboxInfo {
  id: string;
  createdAt: string;
  network: "none" | "host";
  limits: SandboxLimits;
  usage: { memoryBytes: number; processes: number; contexts: number };
}

/* ---- code contexts ---- */

export interface CreateContextOptions {
  language?: Language;
  /** Working directory of the context (default `/workspace`). */
  cwd?: string;
  /** Environment of the context's process; `undefined` values are skipped. */
  envVars?: Record<string, string | undefined>;
  /** Accepted for Cloudflare compatibility; unused (as in Cloudflare's client). */
  timeout?: number;
}

/** A code context, as Cloudflare's CodeContext: dates are Date objects. */
export interface CodeContext {
  readonly id: string;
  readonly language: Language;
  readonly cwd: string;
  readonly createdAt: Date;
  readonly lastUsed: Date;
  /** How many runs the context has finished since it was (re)started. */
  readonly executionCount: number;
  readonly state: "idle" | "busy" | "dead" | "starting";
}

/** `POST …/contexts/{cid}/interrupt`. */
export interface InterruptResult {
  interrupted: boolean;
  statePreserved: boolean;
}

/* ---- running code ---- */

/** The formats a Result can carry, in Cloudflare's fixed order (the order `formats()` lists). */
export const RESULT_FORMATS = [
  "text", "html", "png", "jpeg", "svg", "latex", "markdown", "javascript", "json", "chart",
] as const;
export type ResultFormat = (typeof RESULT_FORMATS)[number];

/** One display or the final expression value of a run; fields present only with a value. */
export interface ResultData {
  text?: string;
  html?: string;
  markdown?: string;
  svg?: string;
  /** base64 */
  png?: string;
  /** base64 */
  jpeg?: string;
  /** base64 */
  pdf?: string;
  latex?: string;
  json?: unknown;
  javascript?: string;
  data?: unknown;
  chart?: unknown;
  /** True for the cell's final expression value. */
  isMainResult?: boolean;
  /** MIME types not listed above, keyed by MIME type. */
  extra?: Record<string, unknown>;
}

/** The error the user's code raised (never thrown by the SDK: it is part of the Execution). */
export interface ExecutionError {
  name: string;
  message: string;
  traceback: string[];
}

/** What a run produced, as plain data (what `sandbox.interpreter.runCode` returns). */
export interface ExecutionResult {
  id?: string;
  contextId?: string;
  code: string;
  executionCount?: number;
  results: ResultData[];
  logs: { stdout: string[]; stderr: string[] };
  error: ExecutionError | null;
  durationMs?: number;
  /** False when the context was killed (timeout past its grace, out of memory, interrupt). */
  statePreserved?: boolean;
  /** True when the server dropped output past its cap. */
  truncated?: boolean;
  /** This run's CPU time and peak memory (null when the daemon cannot know them). */
  usage?: RunUsage;
}

/** What one run used: CPU ms of the context's process, its peak resident memory in bytes. */
export interface RunUsage {
  cpuMs: number | null;
  peakMemoryBytes: number | null;
}

/** A chunk of stdout/stderr, as Cloudflare's OutputMessage. */
export interface OutputMessage {
  text: string;
  /** When the SDK received it (epoch ms). */
  timestamp: number;
}

/** The events of a streamed run, in the order they happen; `end` is always last. */
export type ExecutionEvent =
  | { type: "stdout"; text: string }
  | { type: "stderr"; text: string }
  | ({ type: "result" } & ResultData)
  | ({ type: "error" } & ExecutionError)
  | { type: "end"; executionCount: number; durationMs: number; statePreserved: boolean; usage?: RunUsage };

/** Callbacks fired while the code runs. Their promises are awaited in order. */
export interface RunCallbacks<R = ResultData> {
  /** Every stdout and stderr chunk; `stream` says which. */
  onOutput?: (text: string, stream: "stdout" | "stderr") => void | Promise<void>;
  onStdout?: (output: OutputMessage) => void | Promise<void>;
  onStderr?: (output: OutputMessage) => void | Promise<void>;
  onResult?: (result: R) => void | Promise<void>;
  onError?: (error: ExecutionError) => void | Promise<void>;
}

export interface RunCodeOptions<R = ResultData> extends RunCallbacks<R> {
  /** A context (or its id); without one the sandbox's default context for `language`. */
  context?: CodeContext | string;
  language?: Language;
  /** Environment for this run only. */
  envVars?: Record<string, string | undefined>;
  /** Server-enforced timeout in ms (0 = none; default: the daemon's). */
  timeout?: number;
  /** Aborting ends the request and interrupts the run (when its context is known). */
  signal?: AbortSignal;
  /** Accepted for Cloudflare compatibility: callbacks always stream. */
  stream?: boolean;
}

/** Options of `attach`: the callbacks of runCode, where to start, and a signal. */
export interface AttachOptions<R = ResultData> extends RunCallbacks<R> {
  /** Replay only the events after this id (default: from the start). */
  after?: number;
  /** Aborting stops following; the run itself goes on (cancel it with cancelExecution). */
  signal?: AbortSignal;
}

/* ---- commands ---- */

export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Server-enforced timeout in ms. */
  timeout?: number;
  stdin?: string;
  signal?: AbortSignal;
  /** Accepted for Cloudflare compatibility: `onOutput` always streams. */
  stream?: boolean;
  /** Every output chunk while the command runs (Cloudflare's argument order). */
  onOutput?: (stream: "stdout" | "stderr", data: string) => void | Promise<void>;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  success: boolean;
  durationMs: number;
  timedOut: boolean;
  truncated?: boolean;
}

/** Events of `execStream`, named as Cloudflare's ExecEvent (`complete` carries the exit). */
export type ExecEvent =
  | { type: "stdout"; data: string }
  | { type: "stderr"; data: string }
  | { type: "complete"; exitCode: number; durationMs: number; timedOut: boolean };

/* ---- files ---- */

export interface WriteFileOptions {
  /** `base64`: `content` is base64 text and the decoded bytes are written. */
  encoding?: "utf-8" | "utf8" | "base64";
}

export interface WriteFileResult {
  path: string;
  size: number;
}

export interface ReadFileOptions {
  /** `base64` always returns base64; by default text is UTF-8 and other bytes base64. */
  encoding?: "utf-8" | "utf8" | "base64";
}

export interface ReadFileResult {
  path: string;
  content: string;
  encoding: "utf-8" | "base64";
  isBinary: boolean;
  size: number;
}

export interface FileEntry {
  name: string;
  type: "file" | "dir" | "symlink";
  size: number;
  mtime: string | number;
  /** The entry's path inside the sandbox (added by the SDK). */
  absolutePath: string;
}

export interface ListFilesResult {
  path: string;
  files: FileEntry[];
}

/* ---- background processes ---- */

export interface ProcessOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Keep a stdin pipe open for writeStdin (else the process's stdin is /dev/null). */
  stdin?: boolean;
}

/** What writeStdin answers. */
export interface StdinWrite {
  id: string;
  accepted: number;
  open: boolean;
  held: number;
}

export interface ProcessInfo {
  id: string;
  pid: number;
  command: string;
  status: string;
  exitCode?: number | null;
  [key: string]: unknown;
}

export interface ProcessLogs {
  stdout: string;
  stderr: string;
}

/** Events of `streamProcessLogs`: output chunks, then how the process ended. */
export type ProcessLogEvent =
  | { type: "stdout"; data: string }
  | { type: "stderr"; data: string }
  | { type: "exit"; [key: string]: unknown };
