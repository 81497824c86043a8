// A lying agent in a real container (issue 23): test/agent/c/liar.c, a static program that
// speaks the agent's protocol, planted the way root in a sandbox would plant it (over
// /.anvia/agent-<hash>, then the running agent killed), so the next call starts it. The
// host under test is the real addon in this process, which runs no double, so its RSS is
// the host's own: each lie ends in a typed error, the connection ends as a protocol
// violation (the next call starts the agent binary again: here the liar, as /.anvia/liar.mode
// says), and memory stays within a few MiB. The same lies behind the fake engine, for
// the sanitizer stage: test/fake/hostile-agent.test.js.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec } from "../helpers/docker.js";
import { expectCode, mib } from "../helpers/fake-engine.js";

const T = { timeout: 120_000 };
// RSS growth allowed, in MiB: the sanitizer stage's redzones, 16 MiB quarantine and shadow
// memory (measured 23.3 MiB there against 5.1 MiB on the release build) get four times.
const BOUND = process.env.ANVIA_SANDBOX_BUILD === "asan" ? 64 : 16;
const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
const LIAR = fileURLToPath(new URL(`../../build-agent/${arch}/liar`, import.meta.url));
const client = new DockerSandboxClient({ transport: "agent" });
let sandbox, rt, container;

// Says what the liar does from its next start, as root in the container.
async function lie(mode) {
  const r = await dockerExec(container, ["sh", "-c", `printf '%s\\n' "$1" > /.anvia/liar.mode`, "sh", mode]);
  assert.equal(r.exitCode, 0, r.stderr);
}

before(async () => {
  assert.ok(existsSync(LIAR), `${LIAR} (scripts/build-agent.sh builds it)`);
  sandbox = await client.createSandbox(baseOptions());
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
after(() => sandbox?.destroy());

test("endless listing records within the host's credit: refused at the 100001st entry, RSS within a few MiB", T, async () => {
  await lie("list-flood");
  const rss = process.memoryUsage().rss;
  await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent more listing entries than the 100000 asked for/);
  const grown = mib(process.memoryUsage().rss - rss);
  console.log(`# RSS growth under an endless listing: ${grown.toFixed(1)} MiB`);
  assert.ok(grown < BOUND, `RSS grew ${grown.toFixed(1)} MiB`);
});

test("a reply for a request id the host never sent ends the connection", T, async () => {
  await lie("wrong-id");
  await expectCode(rt.listFiles({ path: "." }), "docker_command_failed", /sandbox agent sent a frame for no request/);
});

test("a WINDOW returning more credit than the host sent is a protocol violation", T, async () => {
  await lie("window-lie");
  const rss = process.memoryUsage().rss;
  await expectCode(rt.writeFile({ path: "f.bin", data: new Uint8Array(4 << 20) }), "docker_command_failed", /sandbox agent sent a WINDOW for more bytes than it was sent/);
  assert.ok(mib(process.memoryUsage().rss - rss) < BOUND);
});

test("a reply that never comes: the caller's abort ends the call with its reason", T, async () => {
  await lie("never");
  const seen = async () => (await dockerExec(container, ["sh", "-c", "cat /.anvia/liar.seen 2>/dev/null || true"])).stdout;
  const before = (await seen()).split("\n").filter((l) => l === "LIST").length;
  const reason = new Error("the caller gave up");
  const controller = new AbortController();
  const call = rt.listFiles({ path: ".", abortSignal: controller.signal });
  // Aborted once the liar holds the request (it notes each one it gets), not before.
  while ((await seen()).split("\n").filter((l) => l === "LIST").length === before) await new Promise((r) => setTimeout(r, 50));
  controller.abort(reason);
  await assert.rejects(call, (e) => e === reason);
});
