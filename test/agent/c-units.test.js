// The agent's C unit tests (test/agent/c/unit_tests.c: the wire codec, the path walk, the
// /proc parsers), built by scripts/build-agent.sh, run for every variant: the x86_64 musl
// build, the AddressSanitizer build, and the aarch64 build under qemu-aarch64-static.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { HANG, HANG_TIMEOUT_MS, SANITIZER_REPORT } from "./lib/agent.js";
import { buildDir, variants } from "./lib/variants.js";

test("the agent is built for x86_64 (and aarch64 when the cross compiler is there)", () => {
  // scripts/build-agent.sh installs what it needs; a missing build must fail here rather
  // than leave every protocol suite with nothing to run.
  const names = variants().map((v) => v.name);
  if (!process.env.ANVIA_AGENT_VARIANTS && process.env.ANVIA_SANDBOX_BUILD !== "asan") {
    assert.ok(names.includes("x86_64"), `built: ${names.join(", ")}`);
    assert.ok(names.includes("asan"), `built: ${names.join(", ")}`);
  }
  assert.ok(names.length > 0);
});

for (const v of variants()) {
  test(`C unit tests [${v.name}]`, HANG, async (t) => {
    const bin = join(buildDir, v.name, "agent-unit-tests");
    const cmd = v.runner ? [v.runner, bin] : [bin];
    const { code, out } = await new Promise((resolve) =>
      // The kill only bounds a hang (under qemu and a sanitizer, on a busy machine, the
      // tests take what they take), and comes before the test's own timeout.
      // sock_diag must answer on this machine's kernel, but not under qemu-user (which carries no
      // netlink family but route, uevent and audit): there the agent reads /proc instead.
      execFile(cmd[0], cmd.slice(1), { env: { ...v.env, ANVIA_DIAG_EXPECTED: v.emulated ? "0" : "1" }, timeout: HANG_TIMEOUT_MS / 2, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
        resolve({ code: err ? (err.code ?? err.signal) : 0, out: `${stdout}${stderr}` }),
      ),
    );
    assert.equal(code, 0, out);
    assert.doesNotMatch(out, SANITIZER_REPORT);
    const m = /^(\d+) passed, (\d+) failed$/m.exec(out);
    assert.ok(m, out);
    assert.equal(Number(m[2]), 0, out);
    assert.ok(Number(m[1]) > 200, out);
    t.diagnostic(out.trim().split("\n").slice(-3).join("; "));
  });
}
