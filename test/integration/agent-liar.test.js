// A lying agent in a real container (issue 23): test/agent/c/liar.c, a static program that
// speaks the agent's protocol, planted the way root in a sandbox would plant it (over
// /.anvia/agent-<hash>, then the running agent killed), so the next call starts it. The
// host under test is the real addon in this process, which runs no double, so its RSS is
// the host's own: each lie ends in a typed error (or the caller's abort), and memory stays
// within a few MiB. The lies are test/helpers/liar-cases.js; the same program behind the
// fake engine, for the sanitizer stage without Docker: test/fake/agent-liar.test.js.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec } from "../helpers/docker.js";
import { LIAR } from "../helpers/hostile-agent.js";
import { liarCases } from "../helpers/liar-cases.js";

const T = { timeout: 120_000 };
// RSS growth allowed, in MiB: the sanitizer stage's redzones, 16 MiB quarantine and shadow
// memory (measured 23.3 MiB there against 5.1 MiB on the release build) get four times.
const bound = process.env.ANVIA_SANDBOX_BUILD === "asan" ? 64 : 16;
// Short, as a case waits for it; long enough for the set-up's commands on a busy machine.
const commandTimeoutMs = 10_000;
const client = new DockerSandboxClient({ transport: "agent" });
const tmp = mkdtempSync(join(tmpdir(), "anvia-liar-"));
let sandbox, rt, container;

// Says what the liar does at its next request, as root in the container.
async function lie(mode) {
  const r = await dockerExec(container, ["sh", "-c", `printf '%s\\n' "$1" > /.anvia/liar.mode`, "sh", mode]);
  assert.equal(r.exitCode, 0, r.stderr);
}
const seen = async () => (await dockerExec(container, ["sh", "-c", "cat /.anvia/liar.seen 2>/dev/null || true"])).stdout;

before(async () => {
  assert.ok(existsSync(LIAR), `${LIAR} (scripts/build-agent.sh builds it)`);
  sandbox = await client.createSandbox(baseOptions({ runtime: { commandTimeoutMs } }));
  rt = sandbox.runtime;
  container = `anvia-sandbox-${sandbox.id}`;
  await rt.writeFile({ path: "liar", data: readFileSync(LIAR) }); // through the real agent
  await lie("never");
  // Root replaces the agent's binary and kills the agent that runs this very command.
  const planted = await rt
    .exec({
      command: "sh",
      args: ["-c", 'a=$(printf "%s" /.anvia/agent-*); cp liar "$a.new" && chmod 755 "$a.new" && mv -f "$a.new" "$a" && kill -9 $PPID'],
    })
    .catch((e) => e);
  assert.ok(planted instanceof DockerSandboxError, "the call whose agent was killed fails with a typed error");
});
after(async () => {
  await sandbox?.destroy();
  rmSync(tmp, { recursive: true, force: true });
});

for (const c of liarCases) test(c.name, T, () => c.run({ rt, lie, seen, tmp, bound, commandTimeoutMs }));
