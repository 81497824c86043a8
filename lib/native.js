// Loads the native addon and hands it the error class it builds its errors with.
// Which binary: ANVIA_SANDBOX_ADDON (a path) when set, else the local release build,
// else the debug build.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { DockerSandboxError } from "./errors.js";

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL("..", import.meta.url));

function candidates() {
  const list = [];
  if (process.env.ANVIA_SANDBOX_ADDON) list.push(process.env.ANVIA_SANDBOX_ADDON);
  const order = process.env.ANVIA_SANDBOX_BUILD === "debug" ? ["Debug", "Release"] : ["Release", "Debug"];
  for (const dir of order) list.push(`${root}build/${dir}/anvia_sandbox.node`);
  return list;
}

function load() {
  const tried = [];
  for (const file of candidates()) {
    if (!existsSync(file)) {
      tried.push(`${file} (missing)`);
      continue;
    }
    return require(file);
  }
  throw new Error(
    `@anvia/sandbox: the native addon is not built. Run \`npm run build\` in ${root}. Looked for:\n  ${tried.join("\n  ")}`,
  );
}

export const native = load();
native.init(DockerSandboxError);

// Starts a prepared native operation and ties it to an AbortSignal: an abort cancels the
// native work at once, and the promise rejects with the signal's reason.
export async function runNative(token, signal, onEvent) {
  const promise = native.start(token, onEvent);
  if (signal === undefined) return promise;
  const onAbort = () => native.cancel(token, signal.reason ?? new DOMException("Aborted", "AbortError"));
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await promise;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
