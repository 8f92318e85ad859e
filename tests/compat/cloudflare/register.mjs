// register.mjs — lets plain Node load @cloudflare/sandbox: `node --import ./register.mjs app.mjs`.
// The package imports `cloudflare:workers` (a Workers-only module) and @cloudflare/containers
// uses extensionless relative imports; loader-hooks.mjs fixes both. Nothing the route clients
// (SandboxClient, CodeInterpreter) call needs the real Workers runtime.
import { register } from "node:module";

register("./loader-hooks.mjs", import.meta.url);
