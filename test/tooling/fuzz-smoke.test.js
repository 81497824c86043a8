// The libFuzzer harnesses (test/fuzz) keep building and keep passing: each is built into
// build-fuzz/ and run for a few seconds from its committed seeds. Any crash, leak report,
// sanitizer error or broken property fails its test, with the fuzzer's report. The long
// runs are `npm run fuzz` (scripts/fuzz.sh); this only proves the harnesses still work.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const fuzzDir = join(root, "test", "fuzz");
const outDir = join(root, "build-fuzz");
const SECONDS = 3;

const work = mkdtempSync(join(tmpdir(), "anvia-fuzz-smoke-"));
after(() => rmSync(work, { recursive: true, force: true }));

const targets = spawnSync("make", ["-s", "-C", fuzzDir, "list"], { encoding: "utf8" })
  .stdout.trim()
  .split(/\s+/)
  .filter(Boolean);

// The harnesses carry their own sanitizer runtime: nothing preloaded into this process
// (the sanitizer stage preloads gcc's libasan into node) may reach them.
const baseEnv = { ...process.env };
delete baseEnv.LD_PRELOAD;
delete baseEnv.ASAN_OPTIONS;
delete baseEnv.UBSAN_OPTIONS;
delete baseEnv.FUZZ_STRICT;
const sanitizerEnv = { ASAN_OPTIONS: "detect_leaks=1", UBSAN_OPTIONS: "print_stacktrace=1:halt_on_error=1" };

const REPORT = /ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:|FUZZ_CHECK failed|SUMMARY: /;

function runFuzzer(target) {
  const corpus = join(work, target);
  const args = [
    corpus,
    join(fuzzDir, "corpus", target),
    `-max_total_time=${SECONDS}`,
    "-timeout=10",
    "-rss_limit_mb=2048",
    `-artifact_prefix=${join(work, `${target}-`)}`,
  ];
  mkdirSync(corpus, { recursive: true });
  return new Promise((resolve) => {
    execFile(
      join(outDir, `fuzz_${target}`),
      args,
      {
        cwd: root,
        env: { ...baseEnv, ...sanitizerEnv },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 60_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? (error.code ?? error.signal) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

describe("fuzz harnesses", { concurrency: 2 }, () => {
  before(() => {
    const clang = spawnSync("clang", ["--version"], { encoding: "utf8" });
    assert.equal(clang.status, 0, "clang is needed for the fuzz harnesses (scripts/setup.sh installs it)");
    const build = spawnSync("make", ["-s", "-C", fuzzDir, "-j2", "all"], {
      encoding: "utf8",
      env: baseEnv,
      timeout: 300_000,
    });
    assert.equal(
      build.status,
      0,
      `building the harnesses failed (when a module of src/ calls something new, the harness's ` +
        `stubs file in test/fuzz may need it):\n${build.stdout}\n${build.stderr}`,
    );
  });

  test("there is a harness for each parser, each with seeds", () => {
    assert.ok(targets.length >= 12, `targets: ${targets.join(" ")}`);
    for (const t of targets) assert.ok(readdirSync(join(fuzzDir, "corpus", t)).length > 0, `no seeds for ${t}`);
  });

  for (const target of targets) {
    test(`fuzz_${target} runs ${SECONDS}s from its seeds without a finding`, async () => {
      const { code, output } = await runFuzzer(target);
      const report = output.split("\n").filter((l) => REPORT.test(l));
      const tail = output.split("\n").slice(-60).join("\n");
      assert.deepEqual(report, [], `fuzz_${target} reported:\n${tail}`);
      assert.equal(code, 0, `fuzz_${target} exited with ${code}:\n${tail}`);
      assert.match(output, /Done \d+ runs in \d+ second/, `fuzz_${target} did not finish:\n${tail}`);
    });
  }

  // The reproducers of the fuzzing findings (test/fuzz/FINDINGS.md, all fixed), run with
  // every check on: a regression makes them fail again.
  for (const target of targets) {
    const dir = join(fuzzDir, "corpus", target);
    for (const file of readdirSync(dir).filter((f) => f.startsWith("finding-"))) {
      test(`finding ${file} stays fixed (fuzz_${target})`, () => {
        const r = spawnSync(join(outDir, `fuzz_${target}`), [join(dir, file)], {
          encoding: "utf8",
          env: { ...baseEnv, ...sanitizerEnv, FUZZ_STRICT: "1" },
          timeout: 60_000,
        });
        const output = `${r.stdout}${r.stderr}`;
        assert.deepEqual(output.split("\n").filter((l) => REPORT.test(l)), [], output.split("\n").slice(-30).join("\n"));
        assert.equal(r.status, 0, output);
      });
    }
  }
});
