/*
 * execution.ts — what a run returns: Result (one output) and Execution (the whole run).
 *
 * Both are thin classes over plain data: their own enumerable fields are exactly the server's,
 * `toJSON()` gives that plain data back, and the conveniences (`formats()`, `output`, `success`,
 * `outputs`) are computed, never stored. `ExecutionCollector` turns a run's stream of events into
 * the same ExecutionResult the plain (non-streamed) route returns.
 */
import {
  RESULT_FORMATS,
  type ExecutionError,
  type ExecutionEvent,
  type ExecutionResult,
  type ResultData,
  type ResultFormat,
} from "./types.js";

/** One display or final value, with Cloudflare's `formats()`. */
export class Result implements ResultData {
  // `declare`: no own property unless the server sent the field (plain data stays plain)
  declare text?: string;
  declare html?: string;
  declare markdown?: string;
  declare svg?: string;
  declare png?: string;
  declare jpeg?: string;
  declare pdf?: string;
  declare latex?: string;
  declare json?: unknown;
  declare javascript?: string;
  declare data?: unknown;
  declare chart?: unknown;
  declare isMainResult?: boolean;
  declare extra?: Record<string, unknown>;

  constructor(raw: ResultData) {
    Object.assign(this, raw);
  }

  /** The formats this result carries, in Cloudflare's fixed order; empty values count as absent. */
  formats(): ResultFormat[] {
    return RESULT_FORMATS.filter((f) => Boolean(this[f]));
  }

  toJSON(): ResultData {
    return { ...this };
  }
}

/** A finished run: the server's data plus the conveniences the Cloudflare docs use. */
export class Execution implements ExecutionResult {
  declare id?: string;
  declare contextId?: string;
  declare code: string;
  declare executionCount?: number;
  declare results: Result[];
  declare logs: { stdout: string[]; stderr: string[] };
  declare error: ExecutionError | null;
  declare durationMs?: number;
  declare statePreserved?: boolean;
  declare truncated?: boolean;
  declare usage?: ExecutionResult["usage"];

  constructor(raw: ExecutionResult) {
    Object.assign(this, raw);
    this.code = raw.code;
    this.logs = raw.logs ?? { stdout: [], stderr: [] };
    this.error = raw.error ?? null;
    this.results = (raw.results ?? []).map((r) => (r instanceof Result ? r : new Result(r)));
  }

  /** All stdout, joined. */
  get output(): string {
    return this.logs.stdout.join("");
  }

  /** True when the code raised nothing. */
  get success(): boolean {
    return this.error == null;
  }

  /** The text of the main result (the cell's final value), if any. */
  get text(): string | undefined {
    return this.results.find((r) => r.isMainResult)?.text;
  }

  /** Every format present in any result, in Cloudflare's fixed order. */
  get formats(): ResultFormat[] {
    const seen = new Set(this.results.flatMap((r) => r.formats()));
    return RESULT_FORMATS.filter((f) => seen.has(f));
  }

  /** The first value of each format across the results: `outputs.png`, `outputs.html`, … */
  get outputs(): Pick<ResultData, ResultFormat> {
    const out: Record<string, unknown> = {};
    for (const r of this.results)
      for (const f of r.formats()) if (!(f in out)) out[f] = r[f];
    return out as Pick<ResultData, ResultFormat>;
  }

  toJSON(): ExecutionResult {
    return { ...this, results: this.results.map((r) => r.toJSON()) };
  }
}

/** Folds a run's events into an ExecutionResult, as the plain route would have answered. */
export class ExecutionCollector {
  readonly value: ExecutionResult;

  constructor(code: string, contextId?: string) {
    this.value = {
      code, results: [], logs: { stdout: [], stderr: [] }, error: null,
      ...(contextId ? { contextId } : {}),
    };
  }

  add(ev: ExecutionEvent): void {
    const v = this.value;
    switch (ev.type) {
      case "stdout":
      case "stderr":
        v.logs[ev.type].push(ev.text);
        break;
      case "result": {
        const { type: _t, ...r } = ev;
        v.results.push(r);
        break;
      }
      case "error": {
        const { type: _t, ...e } = ev;
        v.error = e;
        break;
      }
      case "end":
        v.executionCount = ev.executionCount;
        v.durationMs = ev.durationMs;
        v.statePreserved = ev.statePreserved;
        if (ev.usage) v.usage = ev.usage;
        break;
    }
  }
}
