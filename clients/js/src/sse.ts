/*
 * sse.ts — Server-Sent Events: bytes in, messages out; and typed event streams.
 *
 * `readSSE` follows the WHATWG parsing rules the daemon relies on: lines end in LF, CRLF or CR;
 * a blank line ends a message; several `data:` lines are joined with LF; lines starting with `:`
 * are comments. It holds at most one unfinished message in memory, whatever the stream's size.
 * `eventStream` wraps an async generator as a ReadableStream that is also async-iterable in
 * every Node ≥ 18 and whose cancel() runs the generator's cleanup (its `finally`).
 */

export interface SSEMessage {
  event: string;
  id: string;
  data: string;
}

/** Yields each message of an SSE byte stream; a final message without a blank line is kept. */
export async function* readSSE(body: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let event = "";
  let id = "";
  let data: string[] = [];
  let any = false;

  function* lines(flush: boolean): Generator<string> {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      // a lone CR at the end might be the first half of CRLF: wait for the next chunk
      if (!m || (m[0] === "\r" && m.index === buf.length - 1 && !flush)) break;
      yield buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
    }
    if (flush && buf) {
      yield buf;
      buf = "";
    }
  }
  function take(line: string): SSEMessage | undefined {
    if (line === "") {
      const msg = any ? { event: event || "message", id, data: data.join("\n") } : undefined;
      event = "";
      data = [];
      any = false;
      return msg;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "id") id = value;
    else if (field === "data") data.push(value);
    else return undefined;
    any = true;
    return undefined;
  }

  try {
    for (;;) {
      const { value, done } = await reader.read();
      buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (const line of lines(done)) {
        const msg = take(line);
        if (msg) yield msg;
      }
      if (done) break;
    }
    const last = take("");
    if (last) yield last;
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A ReadableStream of objects that is also an AsyncIterable of them. */
export type EventStream<T> = ReadableStream<T> & AsyncIterable<T>;

/** Wraps a generator as an EventStream; cancelling the stream returns the generator. */
export function eventStream<T>(gen: AsyncGenerator<T>): EventStream<T> {
  const stream = new ReadableStream<T>({
    async pull(controller) {
      try {
        const { value, done } = await gen.next();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (e) {
        controller.error(e);
      }
    },
    async cancel() {
      await gen.return(undefined);
    },
  }, { highWaterMark: 0 });
  const s = stream as EventStream<T>;
  if (typeof s[Symbol.asyncIterator] !== "function") {
    // Node 18.0–18.x without ReadableStream async iteration: add it.
    Object.defineProperty(s, Symbol.asyncIterator, {
      value: async function* () {
        const reader = stream.getReader();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) return;
            yield value;
          }
        } finally {
          reader.releaseLock();
        }
      },
    });
  }
  return s;
}

/**
 * Cloudflare's `parseSSEStream`: iterates the events of a stream this SDK returned (passed
 * through), or parses an SSE byte stream into `{type, ...data}` objects.
 */
export async function* parseSSEStream<T = Record<string, unknown>>(
  stream: ReadableStream<unknown> | AsyncIterable<unknown>,
): AsyncGenerator<T> {
  const it = stream as AsyncIterable<unknown> & ReadableStream<unknown>;
  let bytes: ReadableStream<Uint8Array> | undefined;
  if (typeof it.getReader === "function") {
    // Peek at the first chunk: bytes mean raw SSE, objects mean one of our event streams.
    const reader = it.getReader();
    const head = await reader.read();
    if (head.done) return;
    if (head.value instanceof Uint8Array) {
      let pending: Uint8Array | undefined = head.value;
      bytes = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (pending) {
            c.enqueue(pending);
            pending = undefined;
            return;
          }
          const r = await reader.read();
          if (r.done) c.close();
          else c.enqueue(r.value as Uint8Array);
        },
        cancel: () => reader.cancel(),
      });
    } else {
      yield head.value as T;
      try {
        for (;;) {
          const r = await reader.read();
          if (r.done) return;
          yield r.value as T;
        }
      } finally {
        reader.releaseLock();
      }
    }
  } else {
    for await (const v of it) yield v as T;
    return;
  }
  for await (const m of readSSE(bytes)) {
    let data: unknown = m.data;
    try {
      data = JSON.parse(m.data);
    } catch {
      /* keep the text */
    }
    yield (typeof data === "object" && data !== null
      ? { type: m.event, ...(data as object) }
      : { type: m.event, data }) as T;
  }
}
