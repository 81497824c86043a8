// `anvia-sandbox create-image` against the original CLI's captured behaviour
// (test/fixtures/create-image/README.md): every scenario of upstream.json run with
// bin/anvia-sandbox.js must give the same exit code, stdout, stderr and files, byte for
// byte (the help text, every refusal, the generated build contexts, --dry-run, --no-build,
// --force, links and foreign directories); every wizard session of wizard.json, typed into
// a pseudo-terminal, the same transcript, exit code and files.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runScenario, runWizardSession } from "../helpers/cli-scenarios.js";

const fixtures = new URL("../fixtures/create-image/", import.meta.url);
const { scenarios } = JSON.parse(readFileSync(new URL("upstream.json", fixtures), "utf8"));
const { sessions } = JSON.parse(readFileSync(new URL("wizard.json", fixtures), "utf8"));
const command = [process.execPath, fileURLToPath(new URL("../../bin/anvia-sandbox.js", import.meta.url))];

// Runs `items` through `fn` a few at a time (each is a child process).
async function pool(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

test("every scenario gives what the original gave, byte for byte", { timeout: 180_000 }, async (t) => {
  assert.ok(scenarios.length >= 80);
  const results = await pool(scenarios, 4, (s) => runScenario(s, command));
  scenarios.forEach((s, i) => assert.deepEqual(results[i], s.expected, `scenario ${s.name}`));
  // What the fixtures hold is what the issue asks about: a few spot checks.
  const byName = Object.fromEntries(scenarios.map((s, i) => [s.name, results[i]]));
  assert.equal(byName.help.code, 0);
  assert.match(byName.help.stdout, /^Usage:\n {2}pnpm dlx @anvia\/sandbox create-image \[options\]\n/);
  assert.equal(byName["unknown-command"].code, 1);
  assert.equal(byName["force-foreign-directory"].code, 1);
  assert.deepEqual(Object.keys(byName.everything.files).map((f) => f.split("/").pop()).sort(), [
    ".dockerignore",
    "Dockerfile",
    "anvia-sandbox.json",
    "package.json",
    "pyproject.toml",
  ]);
});

test("every wizard session types into the same prompts and ends as the original's did", { timeout: 240_000 }, async (t) => {
  assert.ok(sessions.length >= 9);
  const codes = new Set(sessions.map((s) => s.expected.code));
  assert.deepEqual([...codes].sort(), [0, 1, 130]);
  const results = await pool(sessions, 2, (s) => runWizardSession(s, command));
  sessions.forEach((s, i) => {
    const { failedStep, ...got } = results[i];
    assert.equal(failedStep, null, `session ${s.name}: a prompt did not show`);
    assert.deepEqual(got, s.expected, `session ${s.name}`);
  });
});

// CI runners set CI=true, and some users NO_COLOR: either turns the prompts' colour off,
// which changes what they redraw. The sessions must not depend on the caller's environment.
test("a wizard session's transcript does not depend on the caller's colour or CI variables", { timeout: 60_000 }, async () => {
  const session = sessions.find((s) => s.name === "complete-no-build-flag");
  const env = { ...process.env, CI: "true", NO_COLOR: "1", FORCE_COLOR: "0", NODE_DISABLE_COLORS: "1", TERM: "dumb" };
  const { failedStep, ...got } = await runWizardSession(session, command, { env });
  assert.equal(failedStep, null);
  assert.deepEqual(got, session.expected);
});
