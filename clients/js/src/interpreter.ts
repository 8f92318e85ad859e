/*
 * interpreter.ts — code contexts and runs of one sandbox (the `/contexts` and `/execute` routes).
 *
 * Two faces over the same calls: `CodeInterpreter` with `plain = false` returns class instances
 * (Execution, Result with formats()), as Cloudflare's `sandbox.runCode`; with `plain = true` it
 * returns plain data only (ExecutionResult, ResultData), as Cloudflare's `sandbox.interpreter.*`.
 *
 * Guarantees: callbacks fire while the code runs, in event order, each awaited before the next;
 * the returned execution equals what the plain route would have answered. Aborting `signal`
 * rejects with the signal's reason and interrupts the run's context when the SDK knows it (the
 * caller passed a context, or the daemon named it in an `X-Context-Id` header); cancelling a
 * `runCodeStream` before its `end` event does the same. `attach` re-attaches to a run by its
 * id (`Execution.id`, the `X-Execution-Id` of its request): the daemon replays its events and
 * follows it live, and the result is the same Execution as runCode's; leaving an attach early
 * only stops following.
 */
import { Execution, ExecutionCollector, Result } from "./execution.js";
import { eventStream, type EventStream } from "./sse.js";
import { definedOnly, segment, type Transport } from "./transport.js";
import type {
  AttachOptions,
  CodeContext,
  CreateContextOptions,
  ExecutionEvent,
  ExecutionResult,
  InterruptResult,
  Language,
  ResultData,
  RunCodeOptions,
} from "./types.js";

/** What the interpreter needs from its sandbox: a connection, its path, and get-or-create. */
export interface SandboxHandle {
  readonly transport: Transport;
  readonly path: string;
  ready(): Promise<void>;
}

interface RawContext {
  id: string;
  language: Language;
  cwd: string;
  createdAt: string;
  lastUsed: string;
  executionCount: number;
  state: CodeContext["state"];
}

/** Cloudflare's client accepts these aliases; the daemon knows only the three names. */
const LANGUAGE_ALIASES: Record<string, Language> = {
  python: "python", python3: "python",
  javascript: "javascript", js: "javascript", node: "javascript",
  typescript: "typescript", ts: "typescript",
};

function language(l: string | undefined): Language | undefined {
  if (l === undefined) return undefined;
  return LANGUAGE_ALIASES[l.toLowerCase()] ?? (l as Language);
}

function toContext(raw: RawContext): CodeContext {
  return { ...raw, createdAt: new Date(raw.createdAt), lastUsed: new Date(raw.lastUsed) };
}

function contextId(c: CodeContext | { id: string } | string): string {
  return typeof c === "string" ? c : c.id;
}

export class CodeInterpreter<E = Execution, R = Result> {
  constructor(private readonly sb: SandboxHandle, private readonly plain = false) {}

  private ctxPath(id?: string): string {
    return `${this.sb.path}/contexts${id === undefined ? "" : "/" + segment(id)}`;
  }

  /** Creates a context with its own state (default: python in /workspace). */
  async createCodeContext(opts: CreateContextOptions = {}): Promise<CodeContext> {
    await this.sb.ready();
    const body = { language: language(opts.language) ?? "python", cwd: opts.cwd, envVars: definedOnly(opts.envVars) };
    return toContext(await this.sb.transport.json<RawContext>("POST", this.ctxPath(), { json: body }));
  }

  /** Every context of the sandbox, default contexts included. */
  async listCodeContexts(): Promise<CodeContext[]> {
    await this.sb.ready();
    const r = await this.sb.transport.json<{ contexts: RawContext[] }>("GET", this.ctxPath());
    return r.contexts.map(toContext);
  }

  /** One context, with its current state and execution count. */
  async getCodeContext(context: CodeContext | string): Promise<CodeContext> {
    await this.sb.ready();
    return toContext(await this.sb.transport.json<RawContext>("GET", this.ctxPath(contextId(context))));
  }

  /** Deletes a context; a run in progress ends with it. */
  async deleteCodeContext(context: CodeContext | string): Promise<void> {
    await this.sb.ready();
    await this.sb.transport.json("DELETE", this.ctxPath(contextId(context)));
  }

  /** Fresh state, same id, cwd and envVars. */
  async restartCodeContext(context: CodeContext | string): Promise<CodeContext> {
    await this.sb.ready();
    return toContext(await this.sb.transport.json<RawContext>("POST", `${this.ctxPath(contextId(context))}/restart`));
  }

  /** Interrupts the context's current run (KeyboardInterrupt first; killed if it will not stop). */
  async interruptCodeContext(context: CodeContext | string): Promise<InterruptResult> {
    await this.sb.ready();
    return this.sb.transport.json<InterruptResult>("POST", `${this.ctxPath(contextId(context))}/interrupt`);
  }

  /**
   * Runs code and resolves when it has finished. An exception in the user's code is not a
   * rejection: it is `error` on the result. Rejects on API errors (typed) and on abort.
   */
  async runCode(code: string, opts: RunCodeOptions<R> = {}): Promise<E> {
    const streaming = Boolean(opts.stream || opts.signal || opts.onOutput || opts.onStdout ||
      opts.onStderr || opts.onResult || opts.onError);
    let raw: ExecutionResult;
    if (!streaming) {
      await this.sb.ready();
      raw = await this.sb.transport.json<ExecutionResult>("POST", `${this.sb.path}/execute`,
        { json: this.executeBody(code, opts) });
    } else {
      const run = this.events(code, opts);
      const collector = new ExecutionCollector(code, run.contextId());
      for await (const ev of run.events) {
        collector.add(ev);
        await this.fire(ev, opts);
      }
      raw = { ...collector.value, contextId: run.contextId() ?? collector.value.contextId };
      const eid = run.executionId();
      if (eid) raw.id = eid;
    }
    return (this.plain ? raw : new Execution(raw)) as E;
  }

  /** Re-attaches to a run by its id: its events from the start (or after `opts.after`), then
   * live until it ends, through the same callbacks as runCode; resolves to the same result. */
  async attach(executionId: string, opts: AttachOptions<R> = {}): Promise<E> {
    const run = this.attachEvents(executionId, opts);
    const collector = new ExecutionCollector("");
    for await (const ev of run.events) {
      collector.add(ev);
      await this.fire(ev, opts);
    }
    const raw: ExecutionResult = { ...collector.value, id: executionId };
    const cid = run.contextId();
    if (cid) raw.contextId = cid;
    return (this.plain ? raw : new Execution(raw)) as E;
  }

  /** The events of `attach` as a stream (also async-iterable); `end` is last. */
  attachStream(executionId: string, opts: AttachOptions<R> = {}): EventStream<ExecutionEvent> {
    return eventStream(this.attachEvents(executionId, opts).events);
  }

  /** Cancels a queued run or interrupts a running one. */
  async cancelExecution(executionId: string): Promise<{ id: string; cancelled: boolean; interrupted: boolean }> {
    await this.sb.ready();
    return this.sb.transport.json("DELETE", `${this.sb.path}/executions/${segment(executionId)}`);
  }

  private attachEvents(executionId: string, opts: AttachOptions<R>):
      { events: AsyncGenerator<ExecutionEvent>; contextId: () => string | undefined } {
    let cid: string | undefined;
    const self = this;
    async function* gen(): AsyncGenerator<ExecutionEvent> {
      await self.sb.ready();
      const after = opts.after === undefined ? "" : `?after=${Math.max(0, Math.floor(opts.after))}`;
      const { headers, messages } = await self.sb.transport.sse("GET",
        `${self.sb.path}/executions/${segment(executionId)}/events${after}`, { signal: opts.signal });
      cid = headers.get("x-context-id") ?? undefined;
      for await (const m of messages) {
        if (m.event === "dropped") continue; // a notice of events no longer kept, not a run event
        yield { type: m.event, ...(JSON.parse(m.data) as object) } as ExecutionEvent;
      }
    }
    return { events: gen(), contextId: () => cid };
  }

  /** Runs code and returns its events as a stream (also async-iterable); `end` is last. */
  runCodeStream(code: string, opts: RunCodeOptions<R> = {}): EventStream<ExecutionEvent> {
    return eventStream(this.events(code, opts).events);
  }

  private executeBody(code: string, opts: RunCodeOptions<R>): Record<string, unknown> {
    return {
      code,
      context: opts.context === undefined ? undefined : contextId(opts.context),
      language: language(opts.language),
      envVars: definedOnly(opts.envVars),
      timeoutMs: opts.timeout,
    };
  }

  /** Calls the callbacks for one event, in order, awaiting each. */
  private async fire(ev: ExecutionEvent, opts: RunCodeOptions<R>): Promise<void> {
    switch (ev.type) {
      case "stdout":
      case "stderr": {
        if (!ev.text) return;
        await opts.onOutput?.(ev.text, ev.type);
        const cb = ev.type === "stdout" ? opts.onStdout : opts.onStderr;
        await cb?.({ text: ev.text, timestamp: Date.now() });
        return;
      }
      case "result": {
        if (!opts.onResult) return;
        const { type: _t, ...data } = ev;
        await opts.onResult((this.plain ? data : new Result(data)) as R);
        return;
      }
      case "error": {
        const { type: _t, ...err } = ev;
        await opts.onError?.(err);
        return;
      }
    }
  }

  /**
   * The run's events. `contextId()` is known from the start when the caller named a context,
   * else once the daemon's response headers name it. Leaving the loop early (or an abort)
   * interrupts the run when the context is known.
   */
  private events(code: string, opts: RunCodeOptions<R>):
      { events: AsyncGenerator<ExecutionEvent>; contextId: () => string | undefined;
        executionId: () => string | undefined } {
    let cid = opts.context === undefined ? undefined : contextId(opts.context);
    let eid: string | undefined;
    const self = this;
    async function* gen(): AsyncGenerator<ExecutionEvent> {
      const signal = opts.signal;
      signal?.throwIfAborted();
      let ended = false;
      let interrupting: Promise<unknown> | undefined;
      const interrupt = () => {
        if (!ended && cid && !interrupting)
          interrupting = self.interruptCodeContext(cid).catch(() => undefined);
      };
      signal?.addEventListener("abort", interrupt, { once: true });
      try {
        await self.sb.ready();
        const { headers, messages } = await self.sb.transport.sse("POST", `${self.sb.path}/execute`,
          { json: self.executeBody(code, opts), signal });
        cid ??= headers.get("x-context-id") ?? undefined;
        eid = headers.get("x-execution-id") ?? undefined;
        if (signal?.aborted) interrupt();
        for await (const m of messages) {
          const data = JSON.parse(m.data) as object;
          const ev = { type: m.event, ...data } as ExecutionEvent;
          if (ev.type === "end") ended = true;
          yield ev;
        }
      } catch (e) {
        if (signal?.aborted) {
          interrupt();
          await interrupting;
          throw signal.reason;
        }
        throw e;
      } finally {
        signal?.removeEventListener("abort", interrupt);
        if (!ended) interrupt(); // the consumer stopped early: do not leave the run going
        await interrupting;
      }
    }
    return { events: gen(), contextId: () => cid, executionId: () => eid };
  }
}

export type PlainCodeInterpreter = CodeInterpreter<ExecutionResult, ResultData>;
