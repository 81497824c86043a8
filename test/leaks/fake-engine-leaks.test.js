// Memory and descriptors over long runs, against the fake engine (it answers at once, so
// the measurement is the library's and the run takes seconds; it runs in its own process
// so its bookkeeping does not count):
//  - 10,000 mixed operations on one sandbox (exec, write, read, list, streams broken
//    early, aborted calls), after a warm-up of 20,000 (malloc arenas and V8's heap settle
//    during the first 20,000 or so, measured: +10 MiB, then +0.1 MiB per 10,000): RSS grows
//    less than 8 MiB and no descriptor is left open;
//  - a smaller run under valgrind memcheck: no definite leak and no invalid access with a
//    frame in our addon. (Node allocates a 40-byte wrapper per external; the few externals
//    still alive at exit, the client and sandbox handles, show as "definitely lost" in
//    Node's own frames. Those are not ours and do not grow with the work done.)
import test from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
const workload = fileURLToPath(new URL("../helpers/leak-run.mjs", import.meta.url));
const mib = (n) => (n / 1048576).toFixed(1);

test("10,000 mixed operations: RSS grows less than 8 MiB, no descriptor leaks", { timeout: 600_000 }, async (t) => {
  // Under the sanitizer build (scripts/test-asan.sh), ASan's quarantine holds freed memory
  // up to its size (16 MiB there) and fills during the run whatever the library does: the
  // workload runs without it, so RSS is the library's again (the other suites keep it).
  const env = { ...process.env };
  if (env.ASAN_OPTIONS) env.ASAN_OPTIONS = env.ASAN_OPTIONS.replace(/(^|:)quarantine_size_mb=\d+/, "$1quarantine_size_mb=0");
  const { stdout } = await run(process.execPath, [workload, "10000", "20000"], { env });
  const { before, after } = JSON.parse(stdout.trim().split("\n").at(-1));
  t.diagnostic(`RSS ${mib(before.rss)} -> ${mib(after.rss)} MiB, fds ${before.fds} -> ${after.fds}`);
  assert.ok(after.rss - before.rss < 8 * 1048576, `RSS grew ${mib(after.rss - before.rss)} MiB over 10,000 operations`);
  assert.ok(after.fds <= before.fds, `open descriptors grew from ${before.fds} to ${after.fds}`);
});

test("valgrind memcheck: no definite leak and no invalid access in the addon", { timeout: 900_000 }, async (t) => {
  assert.equal(spawnSync("valgrind", ["--version"]).status, 0, "valgrind is installed on every machine of this kind");
  const result = spawnSync(
    "valgrind",
    ["--leak-check=full", "--show-leak-kinds=definite", "--errors-for-leak-kinds=definite", "--num-callers=30", "--trace-children=no",
     process.execPath, workload, "400", "40"],
    // The sanitizer build cannot run under valgrind: this test checks the release or debug build.
    { env: { ...process.env, LD_PRELOAD: "", ANVIA_SANDBOX_BUILD: process.env.ANVIA_SANDBOX_BUILD === "asan" ? "debug" : process.env.ANVIA_SANDBOX_BUILD ?? "" }, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
  );
  assert.equal(result.status, 0, result.stderr.slice(-4000));
  const report = result.stderr;
  // Records are separated by blank "==pid== " lines; keep those that mention our addon.
  const records = report.split(/\n==\d+== \n/).filter((r) => /anvia_sandbox\.node/.test(r));
  const invalid = records.filter((r) => /Invalid (read|write|free)|uninitialised|Mismatched free/.test(r));
  const definite = records.filter((r) => /definitely lost/.test(r) && !/operator new\(unsigned long\)[^\n]*\n[^\n]*napi_create_external/.test(r));
  t.diagnostic(report.split("\n").filter((l) => /definitely lost:|ERROR SUMMARY/.test(l)).join(" | "));
  assert.deepEqual(invalid, [], "invalid accesses in the addon");
  assert.deepEqual(definite, [], "definite leaks from the addon");
});
