/*
 * sandboxd — the TypeScript/JavaScript SDK for the sandboxd code-interpreter daemon.
 *
 * Entry point: `getSandbox(url, id)`. The API mirrors Cloudflare's Sandbox SDK (runCode,
 * createCodeContext, exec, files, processes) over sandboxd's HTTP API v1. No runtime
 * dependencies: Node ≥ 18's fetch, web streams and AbortSignal.
 */
export { getSandbox, Sandbox } from "./sandbox.js";
export { CodeInterpreter, type PlainCodeInterpreter } from "./interpreter.js";
export { Execution, Result } from "./execution.js";
export { parseSSEStream, type EventStream } from "./sse.js";
export * from "./errors.js";
export * from "./types.js";
