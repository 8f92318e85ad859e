// cf-workers-stub.mjs — what @cloudflare/sandbox and @cloudflare/containers import from
// `cloudflare:workers`, as empty stand-ins: only the Durable Object side uses them.
export class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}
export class WorkerEntrypoint {}
export class RpcTarget {}
export const env = {};
export const tracing = { enterSpan: (_name, fn, ...args) => fn(...args) };
