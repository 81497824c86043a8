// The agent builds the protocol tests run against: the x86_64 musl build, the
// AddressSanitizer build (x86_64 glibc), and the aarch64 build under qemu-aarch64-static
// when the emulator is installed. scripts/build-agent.sh is run once per test process (it
// is incremental and serializes concurrent callers). ANVIA_AGENT_VARIANTS=x86_64,asan
// selects a subset. In the project's sanitizer stage (ANVIA_SANDBOX_BUILD=asan, which
// runs every suite a second time) only the asan variant runs: the others ran in the
// release stage already.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const buildDir = join(root, "build-agent");

let built = null;
export function buildAgent() {
  if (built) return built;
  const r = spawnSync("bash", [join(root, "scripts", "build-agent.sh"), "--quiet"], { encoding: "utf8", env: baseEnv() });
  built = { status: r.status, output: `${r.stdout}${r.stderr}` };
  if (r.status !== 0) throw new Error(`scripts/build-agent.sh failed:\n${built.output}`);
  return built;
}

function which(cmd) {
  for (const dir of (process.env.PATH ?? "/usr/bin:/bin").split(":")) {
    const p = join(dir || ".", cmd);
    if (existsSync(p)) return p;
  }
  return null;
}

// The environment the agent starts with: the test process's, minus what the project's
// sanitizer stage preloads into node (it must not reach the agent or its children).
export function baseEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.LD_PRELOAD;
  delete env.ASAN_OPTIONS;
  delete env.UBSAN_OPTIONS;
  return env;
}

export function variants() {
  buildAgent();
  const all = [
    { name: "x86_64", bin: join(buildDir, "x86_64", "anvia-agent"), env: baseEnv(), native: true },
    {
      name: "asan",
      bin: join(buildDir, "asan", "anvia-agent"),
      env: baseEnv({
        ASAN_OPTIONS: "detect_leaks=1:halt_on_error=1:abort_on_error=0",
        UBSAN_OPTIONS: "halt_on_error=1:print_stacktrace=1",
      }),
      sanitizer: true,
    },
  ];
  const qemu = which("qemu-aarch64-static");
  if (qemu) all.push({ name: "aarch64", bin: join(buildDir, "aarch64", "anvia-agent"), runner: qemu, env: baseEnv(), emulated: true });
  const want =
    process.env.ANVIA_AGENT_VARIANTS?.split(",").filter(Boolean) ??
    (process.env.ANVIA_SANDBOX_BUILD === "asan" ? ["asan"] : undefined);
  return all.filter((v) => existsSync(v.bin) && (!want || want.includes(v.name)));
}

// On tmpfs when there is one: creating thousands of files on this machine's disk takes
// seconds, on tmpfs milliseconds.
const TMP = (() => {
  try {
    accessSync("/dev/shm", constants.W_OK);
    return "/dev/shm";
  } catch {
    return tmpdir();
  }
})();

export function tempWorkdir(prefix = "anvia-agent-test-") {
  const dir = mkdtempSync(join(TMP, prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
