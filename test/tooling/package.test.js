// The installable package: `npm pack` holds exactly what a consumer needs (prebuilt
// linux-x64 and linux-arm64 binaries and the in-sandbox agent for both architectures), a fresh project installs the tarball without running any install
// script and uses it, its TypeScript type-checks against the installed types, and with
// the prebuilt binary absent and scripts allowed the install builds from source. Loading
// errors say what to install or how to build.
import test, { before } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { IMAGE } from "../helpers/docker.js";

const repo = fileURLToPath(new URL("../..", import.meta.url));
// A consumer sees none of this checkout's build selection or sanitizer settings.
const cleanEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(ANVIA_SANDBOX_BUILD|ANVIA_SANDBOX_ADDON|LD_PRELOAD|ASAN_OPTIONS|UBSAN_OPTIONS)$/.test(k)),
);
const execFileAsync = promisify(execFile);
const run = (file, args, options = {}) => execFileAsync(file, args, { env: cleanEnv, maxBuffer: 64 * 1024 * 1024, ...options });
const npm = (args, cwd, env = {}) =>
  run("npm", args, { cwd, env: { ...cleanEnv, ...env, npm_config_audit: "false", npm_config_fund: "false" } });

// The packed file list, pinned: no tests, benches, build directories or scratch files.
const EXPECTED_NON_SOURCE = [
  "package/LICENSE",
  "package/README.md",
  "package/bin/anvia-sandbox.js",
  "package/binding.gyp",
  "package/lib/cli/build.js",
  "package/lib/cli/cli.js",
  "package/lib/cli/image-context.js",
  "package/lib/client.js",
  "package/lib/errors.js",
  "package/lib/flow.js",
  "package/lib/handle.js",
  "package/lib/index.js",
  "package/lib/native.js",
  "package/lib/runtime.js",
  "package/lib/shell.js",
  "package/lib/terminal-tools.js",
  "package/lib/terminal.js",
  "package/lib/tools.js",
  "package/lib/tree.js",
  "package/lib/util.js",
  "package/lib/with-sandbox.js",
  "package/package.json",
  "package/prebuilds/agent/aarch64/anvia-agent",
  "package/prebuilds/agent/x86_64/anvia-agent",
  "package/prebuilds/linux-arm64/anvia_sandbox.napi.node",
  "package/prebuilds/linux-x64/anvia_sandbox.napi.node",
  "package/scripts/install.mjs",
  "package/types/index.d.ts",
];


function consumerApp() {
  // Code written for the original package: nothing in it knows about this one.
  return `
import { DockerSandboxClient, createDockerSandboxTools } from "@anvia/sandbox";
const client = new DockerSandboxClient();
const sandbox = await client.createSandbox({
  image: ${JSON.stringify(IMAGE)},
  workspace: { type: "ephemeral" },
  network: { mode: "none" },
  files: { "hello.txt": "hello from the consumer" },
});
try {
  const result = await sandbox.runtime.exec({ command: "cat", args: ["hello.txt"] });
  const tools = createDockerSandboxTools({ sandbox: sandbox.runtime, tools: ["list_files"] });
  const listing = await tools[0].call({}, {});
  console.log(JSON.stringify({ out: new TextDecoder().decode(result.stdout), exitCode: result.exitCode, files: listing.entries.map((e) => e.path) }));
} finally {
  await sandbox.destroy();
}
const { nativeFile } = await import(new URL("./node_modules/@anvia/sandbox/lib/native.js", import.meta.url));
console.log("binary " + nativeFile);
`;
}

async function pack(dest, env = {}) {
  mkdirSync(dest, { recursive: true });
  await npm(["pack", "--pack-destination", dest], repo, env);
  const tgz = readdirSync(dest).find((f) => f.endsWith(".tgz"));
  return join(dest, tgz);
}

function consumerProject(dir, tgz, extra = {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module", dependencies: { "@anvia/sandbox": `file:${tgz}` }, ...extra }, null, 2),
  );
  writeFileSync(join(dir, "app.mjs"), consumerApp());
}

// What `npm pack`'s prepack script places in prebuilds/ (on this machine, the self-contained
// binaries of scripts/prebuilt/build.sh, minutes to make the first time), made once here
// into a scratch folder: the packs below then find it in the cache, and no test's timeout
// includes the build. (npm test makes it in a stage of its own before this file runs.)
before(async () => {
  const scratch = mkdtempSync(join(tmpdir(), "anvia-prebuild-"));
  try {
    await run("bash", [join(repo, "scripts/prebuild.sh"), join(scratch, "prebuilds")], { timeout: 3_600_000 });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}, { timeout: 3_700_000 });

test("npm pack holds exactly the package; installed without scripts it works from the prebuilt binary and type-checks", { timeout: 600_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), "anvia-pack-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const tgz = await pack(join(work, "dist"));
  const files = spawnSync("tar", ["-tzf", tgz], { encoding: "utf8" }).stdout.trim().split("\n").sort();
  assert.deepEqual(files.filter((f) => !f.startsWith("package/src/")), EXPECTED_NON_SOURCE);
  const sources = files.filter((f) => f.startsWith("package/src/"));
  // Every file under src/, the agent's sources and notes included (a source build needs them).
  const repoSources = readdirSync(join(repo, "src"), { recursive: true })
    .filter((f) => statSync(join(repo, "src", f)).isFile())
    .map((f) => `package/src/${f}`)
    .sort();
  assert.deepEqual(sources, repoSources);
  assert.equal(readdirSync(repo).includes("prebuilds"), false, "postpack removed the prebuilt binary from the checkout");

  const app = join(work, "app");
  consumerProject(app, tgz);
  // No install script may run: the prebuilt binary must be enough.
  await npm(["install", "--ignore-scripts"], app);
  const { stdout } = await run(process.execPath, ["app.mjs"], { cwd: app });
  const [json, binary] = stdout.trim().split("\n");
  assert.deepEqual(JSON.parse(json), { out: "hello from the consumer", exitCode: 0, files: ["hello.txt"] });
  assert.match(binary, /node_modules\/@anvia\/sandbox\/prebuilds\/linux-x64\/anvia_sandbox\.napi\.node$/);
  // The command, through the link npm made for it.
  const cli = await run(join(app, "node_modules/.bin/anvia-sandbox"), ["create-image", "--name", "packed", "--runtime", "node", "--dry-run"], { cwd: app });
  assert.match(cli.stdout, /^Would create \.anvia\/sandbox-images\/packed\n\n--- Dockerfile\n/);

  // The consumer's TypeScript, written the way the original's docs use the package.
  cpSync(join(repo, "test/types/consumer.ts"), join(app, "consumer.ts"));
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "ES2022",
        lib: ["ES2022", "esnext.disposable"],
        module: "nodenext",
        moduleResolution: "nodenext",
        types: ["node"],
        typeRoots: [join(repo, "node_modules/@types")],
        exactOptionalPropertyTypes: true,
        skipLibCheck: false,
      },
      files: ["consumer.ts"],
    }),
  );
  const tsc = spawnSync(process.execPath, [join(repo, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: app, encoding: "utf8", env: cleanEnv });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);

  // Loading errors: no binary for the platform, and a binary missing its shared libraries.
  rmSync(join(app, "node_modules/@anvia/sandbox/prebuilds"), { recursive: true });
  const none = spawnSync(process.execPath, ["-e", "import('@anvia/sandbox')"], { cwd: app, encoding: "utf8", env: cleanEnv });
  assert.notEqual(none.status, 0);
  assert.match(none.stderr, /no native addon for linux-x64/);
  assert.match(none.stderr, /npm rebuild @anvia\/sandbox/);
  assert.match(none.stderr, /libcurl4-openssl-dev libssl-dev libarchive-dev libjansson-dev/);
  const stub = join(work, "stub");
  mkdirSync(stub);
  writeFileSync(join(stub, "dep.c"), "int anvia_missing_dep(void) { return 1; }\n");
  writeFileSync(join(stub, "addon.c"), "int anvia_missing_dep(void); int anvia_use(void) { return anvia_missing_dep(); }\n");
  const cc = (args) => assert.equal(spawnSync("gcc", args, { cwd: stub }).status, 0, `gcc ${args.join(" ")}`);
  cc(["-shared", "-fPIC", "-o", "libcurl-anvia-missing.so.4", "-Wl,-soname,libcurl-anvia-missing.so.4", "dep.c"]);
  cc(["-shared", "-fPIC", "-o", "addon.node", "addon.c", "-L.", "-l:libcurl-anvia-missing.so.4"]);
  unlinkSync(join(stub, "libcurl-anvia-missing.so.4"));
  const missing = spawnSync(process.execPath, ["-e", "import('@anvia/sandbox')"], {
    cwd: app,
    encoding: "utf8",
    env: { ...cleanEnv, ANVIA_SANDBOX_ADDON: join(stub, "addon.node") },
  });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /needs shared libraries that are not installed/);
  assert.match(missing.stderr, /apt-get install libcurl4 libarchive13 libjansson4/);
});

test("with no prebuilt binary and scripts allowed, the install builds the addon from source", { timeout: 900_000 }, async (t) => {
  const work = mkdtempSync(join(tmpdir(), "anvia-source-"));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const tgz = await pack(join(work, "dist"), { ANVIA_SANDBOX_NO_PREBUILT: "1" });
  const files = spawnSync("tar", ["-tzf", tgz], { encoding: "utf8" }).stdout;
  assert.doesNotMatch(files, /prebuilds/);
  const app = join(work, "app");
  consumerProject(app, tgz, { allowScripts: { "@anvia/sandbox": true } });
  await npm(["install", "--foreground-scripts"], app);
  const { stdout } = await run(process.execPath, ["app.mjs"], { cwd: app });
  const [json, binary] = stdout.trim().split("\n");
  assert.deepEqual(JSON.parse(json), { out: "hello from the consumer", exitCode: 0, files: ["hello.txt"] });
  assert.match(binary, /node_modules\/@anvia\/sandbox\/build\/Release\/anvia_sandbox\.node$/);
});
