// Issue 23, item 7: what the package itself runs as root in a container must not be
// chosen by the container's environment. The read-only placement of the agent ran
// `sh -c` as uid 0 with the container's environment, so `sh`, `cat`, `chmod` and `mv`
// came from its PATH: a non-root user whose PATH holds a directory it can write (a venv
// in the workspace) planted `cat` there and had it run as root at the next placement.
// The same for the fork's copy helper (`cp` as root from the image's PATH). Now both name
// every program by its absolute path and run with a fixed environment over the
// container's: PATH of system directories, the C locale, and empty values over ENV,
// BASH_ENV, SHELLOPTS, BASHOPTS, CDPATH and the loader's variables.
//
// The placement is checked three ways: the exec's body (User, Cmd, Env) as the fake
// engine recorded it; the script through shellcheck; and the script run here by /bin/sh
// with the environment the engine would give it (the container's, the exec's over it)
// and a PATH whose first directory holds a planted cat, chmod and mv.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HANG_MS, DockerSandboxClient, startFakeEngine, until, answerFork } from "../helpers/fake-engine.js";
import native, { standInAgent } from "../helpers/native.js";

const T = { timeout: HANG_MS };

const ROOT_ENV = [
  "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
  "LC_ALL=C",
  "ENV=",
  "BASH_ENV=",
  "SHELLOPTS=",
  "BASHOPTS=",
  "CDPATH=",
  "LD_PRELOAD=",
  "LD_LIBRARY_PATH=",
  "LD_AUDIT=",
];

const { work, bytes: AGENT_BYTES } = standInAgent(test, "anvia-root-execs-", Buffer.from("#!/bin/true\nnot really the agent\n"));

// What a hostile user left where its PATH looks first, and where ENV and BASH_ENV point.
const planted = join(work, "venv-bin");
const marker = join(work, "ran-as-root");
mkdirSync(planted);
for (const name of ["sh", "cat", "chmod", "mv", "test", "["]) {
  writeFileSync(join(planted, name), `#!/bin/sh\necho ${name} >> '${marker}'\n`);
  chmodSync(join(planted, name), 0o755);
}
writeFileSync(join(work, "rc"), `echo rc >> '${marker}'\n`);
const CONTAINER_ENV = [`PATH=${planted}:/usr/local/bin:/usr/bin:/bin`, `ENV=${join(work, "rc")}`, `BASH_ENV=${join(work, "rc")}`, "LD_PRELOAD=", "HOME=/workspace"];

async function placementExec(t) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.route("GET", "/version", { status: 200, json: { ApiVersion: "1.41", Version: "20.10.0-fake", Arch: "amd64" } });
  const c = fake.addContainer("ro", { running: true, user: "1000:1000" });
  c.HostConfig.ReadonlyRootfs = true;
  c.Config.Env = CONTAINER_ENV;
  const client = new DockerSandboxClient({ host: fake.host, transport: "agent" });
  const sandbox = await client.resumeSandbox({ id: "ro" });
  // The agent never answers here (the fake runs no binary): only the placement matters.
  sandbox.runtime.exec({ command: "true" }).catch(() => {});
  const req = await until(() => fake.seen("POST", "/containers/anvia-sandbox-ro/exec").find((r) => r.json().Cmd?.[3] === "anvia-place-agent"));
  const body = req.json();
  await until(() => fake.seen("POST", /^\/exec\/[^/]+\/start$/).length > 0);
  return { body, sandbox };
}

test("placement: absolute programs, a fixed environment, as root", T, async (t) => {
  const { body, sandbox } = await placementExec(t);
  assert.equal(body.User, "0");
  assert.equal(body.Cmd[0], "/bin/sh");
  assert.equal(body.Cmd[1], "-c");
  assert.match(body.Cmd[4], /^\/\.anvia\/agent-[0-9a-f]{16}$/);
  for (const entry of ROOT_ENV) assert.ok(body.Env.includes(entry), `${entry} in ${JSON.stringify(body.Env)}`);
  // Every command of the script is a shell builtin or an absolute path.
  const script = body.Cmd[2];
  for (const line of script.split("\n").filter(Boolean)) {
    for (const part of line.split(/&&|\|\|/)) {
      const word = part.trim().split(/\s+/)[0];
      assert.ok(["set", "[", "t=/.anvia/.agent.$$"].includes(word) || word.startsWith("/"), `"${word}" in: ${line}`);
    }
  }
  await sandbox.stop().catch(() => {});
});

test("placement: the script passes shellcheck", T, async (t) => {
  const { body } = await placementExec(t);
  const found = spawnSync("shellcheck", ["--version"]);
  if (found.error) return t.skip("shellcheck is not installed");
  const r = spawnSync("shellcheck", ["-s", "sh", "-"], { input: body.Cmd[2] });
  assert.equal(r.status, 0, r.stdout.toString());
});

test("placement: run with the container's environment, nothing planted on its PATH or named by ENV runs", T, async (t) => {
  const { body } = await placementExec(t);
  // The script as the container would run it, /.anvia being a directory here.
  const tmpfs = join(work, "tmpfs");
  mkdirSync(tmpfs, { recursive: true });
  const script = body.Cmd[2].replaceAll("/.anvia", tmpfs);
  const target = body.Cmd[4].replace("/.anvia", tmpfs);
  // The engine's environment for an exec: the container's, with the exec's entries over it.
  const env = {};
  for (const kv of [...CONTAINER_ENV, ...body.Env]) {
    const i = kv.indexOf("=");
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  // (A planted sh that reads nothing makes the write of the input fail with EPIPE.)
  const r = spawnSync(body.Cmd[0], [body.Cmd[1], script, body.Cmd[3], target], { env, input: AGENT_BYTES });
  assert.equal(existsSync(marker), false, existsSync(marker) ? `ran as root: ${readFileSync(marker, "utf8")}` : "");
  assert.equal(r.status, 0, `${r.error ?? ""} ${r.stderr}`);
  assert.deepEqual(readFileSync(target), AGENT_BYTES);
  assert.equal(statSync(target).mode & 0o777, 0o755);
});

test("fork: the copy helper runs /bin/cp with the fixed environment", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  answerFork(fake);
  const c = fake.addContainer("par", { running: true, user: "1000:1000" });
  c.Image = "sha256:base";
  c.Config.Env = CONTAINER_ENV;
  const sandbox = await new DockerSandboxClient({ host: fake.host, transport: "engine" }).resumeSandbox({ id: "par" });
  await sandbox.fork({ id: "kid" });
  const helper = fake.seen("POST", "/containers/create").map((r) => r.json()).find((b) => b.HostConfig?.CapAdd?.includes("DAC_OVERRIDE"));
  assert.deepEqual(helper.Entrypoint, ["/bin/cp"]);
  assert.equal(helper.User, "0:0");
  assert.deepEqual(helper.Env, ROOT_ENV);
});
