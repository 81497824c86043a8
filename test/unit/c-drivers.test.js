// The standalone C drivers of the pure modules (test/c): built with -Werror and run plain,
// then with AddressSanitizer + UBSan and leak checking. Each driver exits non-zero on the
// first failed check, with the check's text.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("../c", import.meta.url));
// The drivers carry their own sanitizer runtime: nothing preloaded into node reaches them.
const env = { ...process.env };
delete env.LD_PRELOAD;
delete env.ASAN_OPTIONS;
delete env.UBSAN_OPTIONS;

for (const target of ["run", "asan"]) {
  test(`test/c drivers (make ${target})`, { timeout: 120_000 }, () => {
    const r = spawnSync("make", ["-s", "-C", dir, target], { encoding: "utf8", env });
    assert.equal(r.status, 0, `make ${target} failed:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /pure_driver: all checks passed/);
    assert.match(r.stdout, /[1-9][0-9]* passed, 0 failed/);
  });
}
