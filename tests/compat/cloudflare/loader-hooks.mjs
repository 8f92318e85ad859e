// loader-hooks.mjs — module resolution hooks registered by register.mjs:
//  - `cloudflare:workers` resolves to cf-workers-stub.mjs;
//  - a relative import that is not found is retried with ".js" appended
//    (@cloudflare/containers imports "./lib/container" without an extension).
const STUB = new URL("./cf-workers-stub.mjs", import.meta.url).href;

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "cloudflare:workers") return { url: STUB, shortCircuit: true };
  try {
    return await nextResolve(specifier, context);
  } catch (err) {
    if (err?.code === "ERR_MODULE_NOT_FOUND" && specifier.startsWith(".") && !specifier.endsWith(".js"))
      return nextResolve(specifier + ".js", context);
    throw err;
  }
}
