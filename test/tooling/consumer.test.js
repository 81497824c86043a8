// Consumers on systems that have nothing but the C library (issue 16). The package is
// packed with the self-contained prebuilt binaries (scripts/prebuilt/build.sh), then:
//  - x64: in a container made from a minimal Debian bullseye (glibc 2.31; no libcurl,
//    libarchive, jansson, libssl3 or compiler) with this machine's own Node binary, the
//    tarball is installed offline with install scripts blocked, and a script creates a
//    sandbox on the host's engine (its socket mounted in), runs a command, writes and reads
//    a file, and destroys it;
//  - arm64: Debian's arm64 Node runs under qemu-aarch64-static (-L to an arm64 root, no
//    binfmt_misc needed), the package's loader picks the arm64 binary, and it gives exactly
//    what the x64 binary gives: its pure functions (paths, endpoints) and a file written and
//    read back through a fake engine (tar through libarchive both ways); neither binary
//    has the unit tests' natives.
// Nothing is skipped: a missing prerequisite fails with what to install. The environments
// are made once and cached (scripts/prebuilt/consumer-env.sh): about a minute each.
import test, { before } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { IMAGE } from "../helpers/docker.js";
import { startFakeEngine } from "../helpers/fake-engine.js";
import { TEST_NATIVES } from "../helpers/test-natives.js";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(ANVIA_SANDBOX_BUILD|ANVIA_SANDBOX_ADDON|LD_PRELOAD|ASAN_OPTIONS|UBSAN_OPTIONS)$/.test(k)),
);
const execFileAsync = promisify(execFile);
const run = (file, args, options = {}) => execFileAsync(file, args, { env: cleanEnv, maxBuffer: 64 * 1024 * 1024, ...options });
const npm = (args, cwd) => run("npm", args, { cwd, env: { ...cleanEnv, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" } });
const MiB = 1024 * 1024;

function socketPath() {
  const host = process.env.DOCKER_HOST;
  if (host === undefined || host === "") return "/var/run/docker.sock";
  if (host.startsWith("unix://")) return host.slice("unix://".length);
  return undefined;
}

function prerequisites() {
  const missing = [];
  const has = (cmd) => spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" }).status === 0;
  if (process.getuid?.() !== 0) missing.push("root (chroot into the build root, mmdebstrap)");
  if (process.platform !== "linux" || process.arch !== "x64") missing.push(`a Linux x86_64 machine (this is ${process.platform}-${process.arch})`);
  for (const [cmd, pkg] of [["mmdebstrap", "mmdebstrap"], ["docker", "docker.io"], ["qemu-aarch64-static", "qemu-user-static"], ["readelf", "binutils"]]) {
    if (!has(cmd)) missing.push(`${cmd} (apt-get install ${pkg})`);
  }
  if (!existsSync("/usr/include/node/node_api.h")) missing.push("the Node headers in /usr/include/node");
  if (!existsSync(join(repo, "node_modules/zod/package.json"))) missing.push("node_modules/zod (npm install)");
  const sock = socketPath();
  if (sock === undefined) missing.push(`a unix-socket engine (DOCKER_HOST=${process.env.DOCKER_HOST} cannot be mounted into a container)`);
  else if (spawnSync("docker", ["image", "inspect", IMAGE], { env: cleanEnv }).status !== 0) {
    missing.push(`a Docker engine that answers and has ${IMAGE} (bash scripts/setup.sh)`);
  }
  return missing;
}

// The package's runtime dependencies and theirs, as this checkout's node_modules has them.
function runtimeDependencies() {
  const seen = new Set();
  const visit = (pkgJson) => {
    for (const name of Object.keys(JSON.parse(readFileSync(pkgJson, "utf8")).dependencies ?? {})) {
      if (seen.has(name)) continue;
      seen.add(name);
      visit(join(repo, "node_modules", name, "package.json"));
    }
  };
  visit(join(repo, "package.json"));
  return [...seen].sort();
}

// Packed once for every test here. Not with `npm pack` in the checkout: package.test.js
// packs there at the same time (the suites run two at a time), and each pack's prepack and
// postpack add and remove the checkout's prebuilds/. So: the package's own file list, copied
// to a scratch folder, its prebuilds/ filled by the prepack script itself
// (scripts/prebuild.sh DIR, made to use the self-contained build), packed with scripts off.
const work = mkdtempSync(join(tmpdir(), "anvia-consumer-"));
let tgz;
let zodTgz;
let depTgzs; // { name, file }: every runtime dependency, packed for installs with no registry
let extracted;
let consumerImage;
let arm64Root;

before(async () => {
  const missing = prerequisites();
  if (missing.length > 0) {
    assert.fail(`consumer tests need (install with scripts/setup.sh or by hand):\n  - ${missing.join("\n  - ")}`);
  }
  const pkg = join(work, "pkg");
  mkdirSync(pkg);
  const { stdout } = await npm(["pack", "--dry-run", "--json", "--ignore-scripts"], repo);
  for (const { path } of JSON.parse(stdout)[0].files) {
    if (path.startsWith("prebuilds/")) continue;
    mkdirSync(dirname(join(pkg, path)), { recursive: true });
    cpSync(join(repo, path), join(pkg, path));
  }
  const started = Date.now();
  await run("bash", [join(repo, "scripts/prebuild.sh"), join(pkg, "prebuilds")], {
    timeout: 3_600_000,
    env: { ...cleanEnv, ANVIA_SANDBOX_PREBUILT: "self-contained" },
  });
  console.log(`# self-contained binaries ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const dist = join(work, "dist");
  mkdirSync(dist);
  await npm(["pack", "--ignore-scripts", "--pack-destination", dist], pkg);
  tgz = join(dist, readdirSync(dist).find((f) => f.endsWith(".tgz")));
  // What the package depends on at run time (zod; @clack/prompts and its own
  // dependencies, for the create-image wizard), for installs with no registry: packed
  // from this checkout's own node_modules.
  depTgzs = [];
  for (const name of runtimeDependencies()) {
    const { stdout: packed } = await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dist, join(repo, "node_modules", name)], repo);
    depTgzs.push({ name, file: join(dist, JSON.parse(packed)[0].filename) });
  }
  zodTgz = depTgzs.find((d) => d.name === "zod").file;
  extracted = join(work, "extracted");
  mkdirSync(extracted);
  await run("tar", ["-xzf", tgz, "-C", extracted]);
  // The environments the consumers run in, made here too (about a minute each the first
  // time), so that no test's own timeout includes them.
  const { stdout: envs } = await run("bash", [join(repo, "scripts/prebuilt/consumer-env.sh"), "all"], { timeout: 3_600_000 });
  consumerImage = envs.match(/^image (\S+)$/m)[1];
  arm64Root = envs.match(/^arm64-root (\S+)$/m)[1];
}, { timeout: 7_300_000 });

test.after(() => rmSync(work, { recursive: true, force: true }));

test("the tarball is under 10 MiB and holds self-contained binaries for linux-x64 and linux-arm64", async (t) => {
  const size = statSync(tgz).size;
  const binaries = ["linux-x64", "linux-arm64"].map((p) => join(extracted, "package/prebuilds", p, "anvia_sandbox.napi.node"));
  for (const b of binaries) assert.ok(existsSync(b), `${b} is packed`);
  t.diagnostic(`tarball ${(size / MiB).toFixed(2)} MiB; binaries ${binaries.map((b) => `${(statSync(b).size / MiB).toFixed(2)} MiB`).join(", ")}`);
  assert.ok(size < 10 * MiB, `the tarball is ${size} bytes`);
  // NEEDED only the C library's parts, no GLIBC_ version above 2.31, nothing left undefined
  // for another library, only the module entry points exported.
  const { stdout } = await run("bash", [join(repo, "scripts/prebuilt/check.sh"), ...binaries]);
  t.diagnostic(stdout.trim().replaceAll("\n", " | "));
  assert.match(stdout, /check: ok/);
  assert.match(stdout, /Advanced Micro Devices X86-64/);
  assert.match(stdout, /AArch64/);
});

// Runs inside the consumer container: code written for the original package.
const CONSUMER_APP = `
import { readFileSync } from "node:fs";
import { DockerSandboxClient } from "@anvia/sandbox";
const report = { node: process.version, glibc: process.report.getReport().header.glibcVersionRuntime };
const client = new DockerSandboxClient();
const sandbox = await client.createSandbox({ image: process.argv[2], workspace: { type: "ephemeral" }, network: { mode: "none" } });
report.id = sandbox.id;
try {
  const r = await sandbox.runtime.exec({ command: "sh", args: ["-c", "echo hello from the sandbox; cat /etc/debian_version >/dev/null && echo debian"] });
  report.exec = { stdout: new TextDecoder().decode(r.stdout), exitCode: r.exitCode };
  await sandbox.runtime.writeTextFile({ path: "notes/from-bullseye.txt", text: "written by a consumer on glibc " + report.glibc });
  report.read = await sandbox.runtime.readTextFile({ path: "notes/from-bullseye.txt" });
  const cat = await sandbox.runtime.exec({ command: "cat", args: ["notes/from-bullseye.txt"] });
  report.cat = new TextDecoder().decode(cat.stdout);
} finally {
  await sandbox.destroy();
}
report.state = sandbox.state;
const { nativeFile } = await import(new URL("./node_modules/@anvia/sandbox/lib/native.js", import.meta.url));
report.binary = nativeFile;
console.log(JSON.stringify(report));
`;

// Before installing: what the container lacks (the point of the test).
const CONTAINER_SCRIPT = `set -e
for lib in libcurl.so.4 libarchive.so.13 libjansson.so.4 libssl.so.3; do
  if ls /lib/*/$lib* /usr/lib/*/$lib* /usr/local/lib/$lib* >/dev/null 2>&1; then echo "unexpected: $lib"; exit 3; fi
done
for cc in cc gcc clang; do if command -v $cc >/dev/null; then echo "unexpected: $cc"; exit 3; fi; done
echo "bare: no libcurl, libarchive, jansson, libssl3 or compiler"
npm install --offline --ignore-scripts --no-audit --no-fund >/dev/null
node app.mjs "$1"
`;

test("x64: installed offline with scripts blocked in bare Debian bullseye, a sandbox is created, used and destroyed on the host's engine", { timeout: 900_000 }, async (t) => {
  const image = consumerImage;
  const ctx = join(work, "x64");
  mkdirSync(ctx);
  cpSync(tgz, join(ctx, "anvia-sandbox.tgz"));
  const dependencies = { "@anvia/sandbox": "file:anvia-sandbox.tgz" };
  for (const { name, file } of depTgzs) {
    const local = `${name.replace("@", "").replace("/", "-")}.tgz`;
    cpSync(file, join(ctx, local));
    dependencies[name] = `file:${local}`;
  }
  writeFileSync(join(ctx, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module", dependencies }, null, 2));
  writeFileSync(join(ctx, "app.mjs"), CONSUMER_APP);
  writeFileSync(join(ctx, "run.sh"), CONTAINER_SCRIPT);
  const name = `anvia-consumer-${process.pid}-${Date.now()}`;
  // No network at all: npm has no registry to reach, and the engine is reached through
  // its socket.
  await run("docker", ["create", "--name", name, "--network", "none", "-v", `${socketPath()}:/var/run/docker.sock`, "-w", "/work", image, "bash", "/work/run.sh", IMAGE]);
  t.after(() => spawnSync("docker", ["rm", "-f", name], { env: cleanEnv }));
  await run("docker", ["cp", `${ctx}/.`, `${name}:/work`]);
  const started = Date.now();
  const result = spawnSync("docker", ["start", "-a", name], { encoding: "utf8", env: cleanEnv, timeout: 600_000 });
  assert.equal(result.status, 0, `the consumer container failed:\n${result.stdout}\n${result.stderr}`);
  const lines = result.stdout.trim().split("\n");
  assert.equal(lines[0], "bare: no libcurl, libarchive, jansson, libssl3 or compiler");
  const report = JSON.parse(lines.at(-1));
  t.diagnostic(`in the container: node ${report.node}, glibc ${report.glibc}, install + sandbox round trip ${((Date.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(report.glibc, "2.31");
  assert.equal(report.node, process.version);
  assert.deepEqual(report.exec, { stdout: "hello from the sandbox\ndebian\n", exitCode: 0 });
  assert.equal(report.read, "written by a consumer on glibc 2.31");
  assert.equal(report.cat, report.read);
  assert.equal(report.state, "destroyed");
  assert.equal(report.binary, "/work/node_modules/@anvia/sandbox/prebuilds/linux-x64/anvia_sandbox.napi.node");
  // The sandbox is gone from the host's engine.
  const left = spawnSync("docker", ["ps", "-a", "-q", "--filter", `name=anvia-sandbox-${report.id}`], { encoding: "utf8", env: cleanEnv });
  assert.equal(left.stdout.trim(), "");
});

// Runs under both architectures; the arm64 output must equal the x64 output. The binary's
// pure functions that ship (the unit tests' natives are in debug builds only), and its
// tar writing and reading through libarchive by the public API: a file written and read
// back on a fake engine (test/helpers/fake-engine.js, run by this test) over its socket.
const PURE_SCRIPT = `
const [nativeJs, indexJs, host, testNatives] = process.argv.slice(2);
const { native, nativeFile } = await import(nativeJs);
const { DockerSandboxClient } = await import(indexJs);
const out = {
  arch: process.arch,
  binary: nativeFile.split("/node_modules/")[1],
  testNatives: JSON.parse(testNatives).filter((n) => typeof native[n] === "function"),
  normalize: [native.normalizeSandboxPath("a//b/../c/", false), native.normalizeSandboxPath(".", true)],
  endpoint: native.resolveEndpoint("unix:///run/other.sock", {}),
};
let error;
try { native.normalizeSandboxPath("../escape", false); } catch (e) { error = e.constructor.name + ": " + e.message; }
out.escape = error;
const client = new DockerSandboxClient({ host, transport: "engine" });
const sandbox = await client.resumeSandbox({ id: "fake1" });
await sandbox.runtime.writeTextFile({ path: process.arch + "-ñ.txt", text: "eñe\\nsecond line\\n" });
out.read = await sandbox.runtime.readTextFile({ path: process.arch + "-ñ.txt" });
console.log(JSON.stringify(out));
`;

test("arm64: under qemu, the loader picks the arm64 binary and it answers as the x64 binary does (pure functions, a file through a fake engine)", { timeout: 900_000 }, async (t) => {
  const root = arm64Root;
  // An installed copy (what npm would lay out): the package and zod in node_modules.
  const app = join(work, "arm64");
  const modules = join(app, "node_modules");
  mkdirSync(join(modules, "@anvia"), { recursive: true });
  cpSync(join(extracted, "package"), join(modules, "@anvia/sandbox"), { recursive: true });
  mkdirSync(join(modules, "zod"));
  await run("tar", ["-xzf", zodTgz, "-C", join(modules, "zod"), "--strip-components=1"]);
  writeFileSync(join(app, "pure.mjs"), PURE_SCRIPT);
  const native = join(modules, "@anvia/sandbox/lib/native.js");
  const index = join(modules, "@anvia/sandbox/lib/index.js");
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("fake1");

  const x64 = await run(process.execPath, ["pure.mjs", native, index, fake.host, JSON.stringify(TEST_NATIVES)], { cwd: app });
  const arm64Node = join(root, "usr/bin/node");
  const version = await run("qemu-aarch64-static", ["-L", root, arm64Node, "-p", "process.version + ' ' + process.arch + ' napi ' + process.versions.napi"], { timeout: 300_000 });
  const started = Date.now();
  const arm = await run("qemu-aarch64-static", ["-L", root, arm64Node, "pure.mjs", native, index, fake.host, JSON.stringify(TEST_NATIVES)], { cwd: app, timeout: 600_000 });
  t.diagnostic(`arm64 node under qemu: ${version.stdout.trim()}; script ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const a = JSON.parse(arm.stdout);
  const x = JSON.parse(x64.stdout);
  assert.equal(a.arch, "arm64");
  assert.equal(x.arch, "x64");
  assert.equal(a.binary, "@anvia/sandbox/prebuilds/linux-arm64/anvia_sandbox.napi.node");
  assert.equal(x.binary, "@anvia/sandbox/prebuilds/linux-x64/anvia_sandbox.napi.node");
  assert.deepEqual(a.testNatives, [], "the unit tests' natives ship in the arm64 binary");
  assert.equal(a.read, "eñe\nsecond line\n");
  assert.match(a.escape, /Error/);
  // What each binary's tar writer sent (libarchive on each architecture), entry by entry.
  const upload = (arch) => fake.state.uploads.filter((u) => u.entries.some((e) => e.name === `${arch}-ñ.txt`)).map((u) => u.entries.map(({ name, mode, content }) => ({ name: name.replace(arch, "ARCH"), mode, content: content?.toString() })));
  assert.deepEqual(upload("arm64"), upload("x64"));
  assert.equal(upload("x64").length, 1);
  delete a.arch; delete a.binary; delete x.arch; delete x.binary;
  assert.deepEqual(a, x);
});
