// Loads the native addon and hands it the error class it builds its errors with.
// Which binary, in order:
//  1. ANVIA_SANDBOX_ADDON (a path), or ANVIA_SANDBOX_BUILD=release|debug|asan (that local
//     build of a source checkout);
//  2. the prebuilt binary shipped in the package for this platform
//     (prebuilds/<platform>-<arch>/anvia_sandbox.napi.node);
//  3. a source build (build/Release, made by the install script or `npm run build`), then
//     a debug build of a checkout.
// A binary that exists but cannot load (a missing shared library) is reported with what to
// install; no binary at all is reported with how to build one.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { DockerSandboxError } from "./errors.js";

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL("..", import.meta.url));
const platform = `${process.platform}-${process.arch}`;

const builds = {
  release: `${root}build/Release/anvia_sandbox.node`,
  debug: `${root}build-debug/build/Debug/anvia_sandbox.node`,
  asan: `${root}build-asan/build/Debug/anvia_sandbox.node`,
};
const prebuilt = `${root}prebuilds/${platform}/anvia_sandbox.napi.node`;

function candidates() {
  if (process.env.ANVIA_SANDBOX_ADDON) return [process.env.ANVIA_SANDBOX_ADDON];
  const wanted = process.env.ANVIA_SANDBOX_BUILD;
  if (wanted !== undefined && wanted !== "") {
    if (!(wanted in builds)) throw new Error(`@anvia/sandbox: ANVIA_SANDBOX_BUILD must be release, debug or asan (got ${wanted}).`);
    return [builds[wanted]];
  }
  return [prebuilt, builds.release, builds.debug];
}

const RUNTIME_PACKAGES = "libcurl4 libarchive13 libjansson4";
const BUILD_PACKAGES = "build-essential python3 libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev";

function load() {
  const tried = [];
  for (const file of candidates()) {
    if (!existsSync(file)) {
      tried.push(`${file} (missing)`);
      continue;
    }
    try {
      return { addon: require(file), file };
    } catch (error) {
      const missingLibrary = /cannot open shared object file|libcurl|libarchive|libjansson/.test(error.message);
      throw new Error(
        missingLibrary
          ? `@anvia/sandbox: the native addon ${file} needs shared libraries that are not installed:\n  ${error.message}\n` +
            `On Debian and Ubuntu: apt-get install ${RUNTIME_PACKAGES}`
          : `@anvia/sandbox: the native addon ${file} does not load on this system (${platform}): ${error.message}\n` +
            `Build it from source: npm rebuild @anvia/sandbox (needs ${BUILD_PACKAGES}).`,
        { cause: error },
      );
    }
  }
  throw new Error(
    `@anvia/sandbox: no native addon for ${platform}. The package ships a prebuilt binary for linux-x64; ` +
      `elsewhere it is built from source at install time. Build it now with: npm rebuild @anvia/sandbox ` +
      `(on Debian and Ubuntu it needs: apt-get install ${BUILD_PACKAGES}). Looked for:\n  ${tried.join("\n  ")}`,
  );
}

const loaded = load();
export const native = loaded.addon;
export const nativeFile = loaded.file;
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
