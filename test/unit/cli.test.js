// The command's plumbing, in process and around it: runCli's dependencies (the wizard,
// the build, the terminal check) as the original's tests use them, the build step's
// arguments, a failed build keeping the sources, the entry-point check (through a link
// as node_modules/.bin makes one; importing runs nothing), and what is loaded when: the
// wizard's @clack/prompts only when it prompts, the native addon only when it builds.
import test from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HELP_TEXT, runCli } from "../../lib/cli/cli.js";
import { isCliEntryPoint } from "../../bin/anvia-sandbox.js";
import { runCommand } from "../helpers/cli-scenarios.js";

const bin = fileURLToPath(new URL("../../bin/anvia-sandbox.js", import.meta.url));
const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));

function capture() {
  const out = { logs: [], warnings: [], errors: [], stdout: [], stderr: [] };
  out.io = {
    log: (m) => out.logs.push(m),
    warn: (m) => out.warnings.push(m),
    error: (m) => out.errors.push(m),
    stdout: (c) => out.stdout.push(Buffer.from(c).toString()),
    stderr: (c) => out.stderr.push(Buffer.from(c).toString()),
  };
  return out;
}

async function dir(t) {
  const d = await mkdtemp(join(tmpdir(), "anvia-cli-unit-"));
  t.after(() => rm(d, { recursive: true, force: true }));
  return d;
}

const deps = (extra = {}) => ({ isTTY: false, packageVersion: "0.5.0-test", buildImage: async () => {}, ...extra });

test("package.json names the command and the wizard's dependency as the original does", () => {
  assert.deepEqual(pkg.bin, { "anvia-sandbox": "./bin/anvia-sandbox.js" });
  assert.ok(pkg.files.includes("bin/"));
  assert.equal(pkg.dependencies["@clack/prompts"], "^1.7.0");
});

test("help, unknown commands, and flags given to no command", async () => {
  for (const argv of [[], ["--help"], ["-h"], ["create-image", "--help"]]) {
    const c = capture();
    assert.equal(await runCli(argv, process.cwd(), c.io, deps()), 0);
    assert.deepEqual(c.logs, [HELP_TEXT]);
  }
  const c = capture();
  assert.equal(await runCli(["other"], process.cwd(), c.io, deps()), 1);
  assert.deepEqual(c.errors, ["Unknown command: other"]);
  assert.deepEqual(c.logs, [HELP_TEXT]);
});

test("the build step gets the context, the tag, the docker path and the files to send", async (t) => {
  const cwd = await dir(t);
  const c = capture();
  const builds = [];
  const code = await runCli(
    ["create-image", "--name", "browser", "--runtime", "bun", "--feature", "playwright", "--docker-path", "/opt/docker"],
    cwd,
    c.io,
    deps({ buildImage: async (input) => builds.push(input) }),
  );
  assert.equal(code, 0);
  const contextPath = join(cwd, ".anvia", "sandbox-images", "browser");
  assert.equal(builds.length, 1);
  const { io, ...rest } = builds[0];
  assert.equal(io, c.io);
  assert.deepEqual(rest, {
    contextPath,
    tag: "anvia-sandbox-browser:latest",
    dockerPath: "/opt/docker",
    files: [".dockerignore", "Dockerfile", "anvia-sandbox.json", "package.json"],
  });
  const manifest = JSON.parse(await readFile(join(contextPath, "anvia-sandbox.json"), "utf8"));
  assert.deepEqual(manifest.generatedBy, { package: "@anvia/sandbox", version: "0.5.0-test" });
  assert.deepEqual(manifest.runtimes, ["node", "bun"]);
  const log = c.logs.join("\n");
  assert.match(log, /^Created \.anvia\/sandbox-images\/browser\nBuilt anvia-sandbox-browser:latest\n\nUse with @anvia\/sandbox:\n/);
  assert.match(log, /image: "anvia-sandbox-browser:latest",/);
});

test("a failed build keeps the generated sources, says why and prints no snippet", async (t) => {
  const cwd = await dir(t);
  const c = capture();
  const code = await runCli(["create-image", "--name", "failed", "--runtime", "node"], cwd, c.io, deps({
    buildImage: async () => {
      throw new Error("Docker build failed");
    },
  }));
  assert.equal(code, 1);
  assert.deepEqual(c.errors, ["Docker build failed"]);
  assert.match(await readFile(join(cwd, ".anvia/sandbox-images/failed/Dockerfile"), "utf8"), /^FROM node:/m);
  assert.doesNotMatch(c.logs.join("\n"), /Use with @anvia\/sandbox/);
});

test("the wizard's answers replace the flags; a tag or directory it leaves open keeps the flag's; cancelled is 130", async (t) => {
  const cwd = await dir(t);
  const seen = [];
  const builds = [];
  const answers = { name: "wizard", runtimes: ["python"], features: [], apt: ["git"], npm: [], uv: [], build: true };
  const code = await runCli(["create-image", "--tag", "from:flag", "--output", "from-flag"], cwd, capture().io, deps({
    isTTY: true,
    prompt: async (options) => {
      seen.push(options);
      return answers;
    },
    buildImage: async (input) => builds.push(input),
  }));
  assert.equal(code, 0);
  assert.equal(seen[0].tag, "from:flag");
  assert.equal(builds[0].tag, "from:flag");
  assert.equal(builds[0].contextPath, join(cwd, "from-flag"));
  const manifest = JSON.parse(await readFile(join(cwd, "from-flag/anvia-sandbox.json"), "utf8"));
  assert.deepEqual([manifest.name, manifest.runtimes, manifest.packages.apt], ["wizard", ["python"], ["git"]]);

  const cancelled = await runCli(["create-image"], cwd, capture().io, deps({ isTTY: true, prompt: async () => undefined }));
  assert.equal(cancelled, 130);
  // Without a terminal the wizard is never asked.
  const c = capture();
  let asked = false;
  const refused = await runCli(["create-image", "--name", "x"], cwd, c.io, deps({ prompt: async () => (asked = true) }));
  assert.equal(refused, 1);
  assert.equal(asked, false);
  assert.deepEqual(c.errors, ["Non-interactive create-image requires --name and at least one --runtime or --feature."]);
});

test("the entry point runs only as the program Node started, also through a link", async (t) => {
  const d = await dir(t);
  const link = join(d, "anvia-sandbox");
  await symlink(bin, link);
  const viaLink = await runCommand([process.execPath, link], ["--help"], { cwd: d });
  assert.equal(viaLink.code, 0);
  assert.equal(viaLink.stdout, `${HELP_TEXT}\n`);
  // Imported, it runs nothing.
  const imported = await runCommand(
    [process.execPath, "--input-type=module", "-e", `import(${JSON.stringify(pathToFileURL(bin).href)}).then((m) => console.log(typeof m.runCli, process.exitCode))`],
    [],
    { cwd: d },
  );
  assert.deepEqual([imported.code, imported.stdout], [0, "function undefined\n"]);
  assert.equal(isCliEntryPoint(link, pathToFileURL(bin).href), true);
  assert.equal(isCliEntryPoint(bin, pathToFileURL(bin).href), true);
  assert.equal(isCliEntryPoint(join(d, "missing"), pathToFileURL(bin).href), false);
  assert.equal(isCliEntryPoint(undefined, pathToFileURL(bin).href), false);
  await writeFile(join(d, "other.js"), "");
  assert.equal(isCliEntryPoint(join(d, "other.js"), pathToFileURL(bin).href), false);
});

test("@clack/prompts loads only when the wizard prompts, the native addon only when a build runs", async (t) => {
  const d = await dir(t);
  // A resolve hook that refuses both, so any load of them fails the command.
  const hooks = join(d, "hooks.mjs");
  await writeFile(
    hooks,
    `export async function resolve(specifier, context, next) {
  if (specifier.startsWith("@clack/") || specifier.endsWith("/native.js") || specifier.endsWith(".node")) throw new Error("loaded: " + specifier);
  return next(specifier, context);
}\n`,
  );
  const register = join(d, "register.mjs");
  await writeFile(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  const run = (argv) => runCommand([process.execPath, "--import", pathToFileURL(register).href, bin], argv, { cwd: d });
  for (const argv of [
    ["--help"],
    ["create-image", "--name", "lazy", "--runtime", "node", "--dry-run"],
    ["create-image", "--name", "lazy", "--runtime", "node", "--no-build"],
    ["create-image"], // no terminal: refused before any prompt
  ]) {
    const r = await run(argv);
    assert.doesNotMatch(r.stderr, /loaded:/, `${argv.join(" ")}: ${r.stderr}`);
  }
  assert.ok((await stat(join(d, ".anvia/sandbox-images/lazy/Dockerfile"))).isFile(), "--no-build wrote the context");
  // A build does load the addon (and so fails under the hook).
  const r = await run(["create-image", "--name", "builds", "--runtime", "node"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /loaded: .*native\.js/);
});
