// The static liar (test/agent/c/liar.c) behind the fake engine (issue 23): the program the
// real-container suite plants (test/integration/agent-liar.test.js) is here the agent the
// fake engine starts for each hijacked exec (test/helpers/hostile-agent.js serveLiar), so
// its lies (test/helpers/liar-cases.js) reach the real addon without Docker, in the
// sanitizer stage too. This process also runs the fake engine, which copies every byte
// both ways: the RSS bound is the fake-engine suites' (64 MiB, 128 under the sanitizer).
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HANG_MS, startFakeEngine, DockerSandboxClient } from "../helpers/fake-engine.js";
import { fakeAgentDir, serveLiar, LIAR } from "../helpers/hostile-agent.js";
import { liarCases } from "../helpers/liar-cases.js";

const T = { timeout: HANG_MS };
const bound = process.env.ANVIA_SANDBOX_BUILD === "asan" ? 128 : 64;
const commandTimeoutMs = 3000;
const dir = mkdtempSync(join(tmpdir(), "anvia-fake-liar-"));
const tmp = join(dir, "host");
fakeAgentDir({ after });
let fake, rt;

const lie = async (mode) => writeFileSync(join(dir, "liar.mode"), `${mode}\n`);
const seen = async () => (existsSync(join(dir, "liar.seen")) ? readFileSync(join(dir, "liar.seen"), "utf8") : "");

before(async () => {
  assert.ok(existsSync(LIAR), `${LIAR} (scripts/build-agent.sh builds it)`);
  writeFileSync(join(dir, "liar.mode"), "never\n");
  mkdirSync(tmp);
  fake = await startFakeEngine();
  fake.addContainer("liar", { running: true, labels: { "anvia.sandbox.runtime.command-timeout-ms": String(commandTimeoutMs) } });
  serveLiar(fake, dir);
  const client = new DockerSandboxClient({ host: fake.host, transport: "agent" });
  rt = (await client.resumeSandbox({ id: "liar" })).runtime;
});
after(async () => {
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

for (const c of liarCases) test(c.name, T, () => c.run({ rt, lie, seen, tmp, bound, commandTimeoutMs }));
