// Loads the native addon and hands it the error class it builds its errors with.
// Which binary: ANVIA_SANDBOX_ADDON (a path) when set; ANVIA_SANDBOX_BUILD=debug or asan
// picks that local build; otherwise the release build, then the debug build.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { DockerSandboxError } from "./errors.js";

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL("..", import.meta.url));

const builds = {
  release: `${root}build/Release/anvia_sandbox.node`,
  debug: `${root}build-debug/build/Debug/anvia_sandbox.node`,
  asan: `${root}build-asan/build/Debug/anvia_sandbox.node`,
};

function candidates() {
  if (process.env.ANVIA_SANDBOX_ADDON) return [process.env.ANVIA_SANDBOX_ADDON];
  const wanted = process.env.ANVIA_SANDBOX_BUILD;
  if (wanted !== undefined && wanted !== "") {
    if (!(wanted in builds)) throw new Error(`@anvia/sandbox: ANVIA_SANDBOX_BUILD must be release, debug or asan (got ${wanted}).`);
    return [builds[wanted]];
  }
  return [builds.release, builds.debug];
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
