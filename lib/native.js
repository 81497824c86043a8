// Loads the native addon and hands it the error class it builds its errors with, and the
// builder of Node's TypeError for a NUL byte in a command's argument (errors.js).
// Which binary, in order:
//  1. ANVIA_SANDBOX_ADDON (a path), or ANVIA_SANDBOX_BUILD=release|debug|asan (that local
//     build of a source checkout);
//  2. the prebuilt binary shipped in the package for this platform, architecture and C
//     library (prebuilds/<platform>-<arch>/anvia_sandbox.napi.node: linux-x64 and
//     linux-arm64, glibc; self-contained, see scripts/prebuilt/). There is none for musl;
//  3. a source build (build/Release, made by the install script or `npm run build`), then
//     a debug build of a checkout.
// A binary that exists but cannot load (a missing shared library, too old a glibc) is
// reported with what to do; no binary at all is reported naming the platform and how to
// build one.
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { DockerSandboxError, nullByteArgumentError } from "./errors.js";

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL("..", import.meta.url));

// The C library Node runs on (Linux only): the ELF interpreter named near the start of
// Node's own executable tells, without spawning anything; the diagnostic report otherwise.
function linuxLibc() {
  try {
    const head = Buffer.alloc(4096);
    const fd = openSync(process.execPath, "r");
    try {
      readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
    const text = head.toString("latin1");
    if (text.includes("/ld-musl-")) return "musl";
    if (text.includes("/ld-linux")) return "glibc";
  } catch {}
  return process.report?.getReport?.().header?.glibcVersionRuntime ? "glibc" : "musl";
}
const libc = process.platform === "linux" ? linuxLibc() : "";
const platform = `${process.platform}-${process.arch}`;
const platformName = libc === "musl" ? `${platform} (musl libc)` : platform;
const PREBUILT = ["linux-x64", "linux-arm64"]; // glibc

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
  // The prebuilt binaries link glibc: on musl only a source build can load.
  return libc === "musl" ? [builds.release, builds.debug] : [prebuilt, builds.release, builds.debug];
}

const RUNTIME_PACKAGES = "libcurl4 libarchive13 libjansson4";
const BUILD_PACKAGES = "build-essential python3 libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev";
const BUILD_HINT =
  libc === "musl"
    ? "on Alpine it needs: apk add build-base python3 curl-dev openssl-dev libarchive-dev jansson-dev"
    : process.platform === "darwin"
      ? "on macOS it needs the Xcode command line tools and: brew install pkg-config curl openssl@3 libarchive jansson"
      : `on Debian and Ubuntu it needs: apt-get install ${BUILD_PACKAGES}`;

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
      const oldGlibc = /GLIBC_[0-9.]+' not found/.test(error.message);
      const missingLibrary = !oldGlibc && /cannot open shared object file|libcurl|libarchive|libjansson/.test(error.message);
      throw new Error(
        missingLibrary
          ? `@anvia/sandbox: the native addon ${file} needs shared libraries that are not installed:\n  ${error.message}\n` +
            `On Debian and Ubuntu: apt-get install ${RUNTIME_PACKAGES}`
          : `@anvia/sandbox: the native addon ${file} does not load on this system (${platformName})` +
            `${oldGlibc ? ", whose glibc is older than the binary needs" : ""}: ${error.message}\n` +
            `Build it from source: npm rebuild @anvia/sandbox (${BUILD_HINT}).`,
        { cause: error },
      );
    }
  }
  const shipped =
    libc === "musl"
      ? `The package ships prebuilt binaries for glibc only (${PREBUILT.join(", ")}), none for musl`
      : PREBUILT.includes(platform)
        ? `The package ships a prebuilt binary for ${platform}, but it is not in this installation`
        : `The package ships prebuilt binaries only for ${PREBUILT.join(" and ")} (glibc); elsewhere it is built from source when install scripts run`;
  throw new Error(
    `@anvia/sandbox: no native addon for ${platformName}. ${shipped}. ` +
      `Build it now with: npm rebuild @anvia/sandbox (${BUILD_HINT}). Looked for:\n  ${tried.join("\n  ")}`,
  );
}

const loaded = load();
export const native = loaded.addon;
export const nativeFile = loaded.file;
native.init(DockerSandboxError, nullByteArgumentError);
// The in-sandbox agent's static binaries (<dir>/<arch>/anvia-agent): the package's, or a
// checkout's build (scripts/build-agent.sh); ANVIA_SANDBOX_AGENT_DIR names another place.
const agentDirs = [`${root}prebuilds/agent`, `${root}build-agent`];
native.setAgentDir(process.env.ANVIA_SANDBOX_AGENT_DIR || (agentDirs.find((dir) => existsSync(dir)) ?? agentDirs[0]));

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
