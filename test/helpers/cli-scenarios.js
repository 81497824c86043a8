// Runs `anvia-sandbox` scenarios (test/fixtures/create-image/upstream.json) as a user
// would: a fresh directory, the scenario's set-up, then the command in a child process
// without a terminal, and reports the exit code, stdout, stderr and every file left in
// the directory. The same runner captured upstream's outputs (the fixture's README says
// how) and runs ours, so the two are compared on exactly the same terms.
//
// A scenario: { name, argv, setup?: [step] }. Paths are relative to the working
// directory, `<ROOT>/work`; "<ROOT>" in argv stands for the scenario's root directory.
// Set-up steps:
//   { mkdir }  { write, text }  { symlink, target }  { rename, to }  { remove }
//   { run: argv }   a prior run of the same command (its exit code must be 0)
// The result's outputs have the root directory replaced by "<ROOT>".
import { spawn } from "node:child_process";
import { lstat, mkdir, mkdtemp, readFile, readdir, readlink, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function runCommand(command, argv, { cwd, env = process.env, timeoutMs = 30_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], [...command.slice(1), ...argv], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const out = [];
    const err = [];
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (c) => out.push(c));
    child.stderr.on("data", (c) => err.push(c));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
    });
  });
}

// Every file and link below `dir`, by path relative to it: text, or { symlink: target }
// (directories appear through what they hold; an empty one as { directory: true }).
export async function collectTree(dir, prefix = "") {
  const out = {};
  const names = (await readdir(dir)).sort();
  if (names.length === 0 && prefix !== "") out[prefix.slice(0, -1)] = { directory: true };
  for (const name of names) {
    const path = join(dir, name);
    const rel = prefix + name;
    const st = await lstat(path);
    if (st.isSymbolicLink()) out[rel] = { symlink: await readlink(path) };
    else if (st.isDirectory()) Object.assign(out, await collectTree(path, `${rel}/`));
    else out[rel] = await readFile(path, "utf8");
  }
  return out;
}

function substitute(value, root) {
  return value.replaceAll("<ROOT>", root);
}

function anonymize(value, root) {
  return value.replaceAll(root, "<ROOT>");
}

async function applyStep(step, cwd, command, env) {
  const at = (p) => join(cwd, p);
  if (step.mkdir !== undefined) await mkdir(at(step.mkdir), { recursive: true });
  else if (step.write !== undefined) {
    await mkdir(dirname(at(step.write)), { recursive: true });
    await writeFile(at(step.write), step.text);
  } else if (step.symlink !== undefined) {
    await mkdir(dirname(at(step.symlink)), { recursive: true });
    await symlink(step.target, at(step.symlink));
  } else if (step.rename !== undefined) await rename(at(step.rename), at(step.to));
  else if (step.remove !== undefined) await rm(at(step.remove));
  else if (step.run !== undefined) {
    const r = await runCommand(command, step.run, { cwd, env });
    if (r.code !== 0) throw new Error(`set-up run ${JSON.stringify(step.run)} exited ${r.code}: ${r.stderr}`);
  } else throw new Error(`unknown set-up step ${JSON.stringify(step)}`);
}

// A fresh root with its working directory `work` set up as `item` says; `run(cwd, root)`
// runs there, and the root is removed afterwards.
async function inScratch(item, command, env, run) {
  const root = await mkdtemp(join(tmpdir(), "anvia-cli-"));
  try {
    const cwd = join(root, "work");
    await mkdir(cwd);
    for (const step of item.setup ?? []) await applyStep(step, cwd, command, env);
    return await run(cwd, root);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

// What decides whether Node.js colours a terminal (util.getColorDepth, which the prompts'
// styleText follows). The transcripts were captured in colour, and colour changes which
// lines a prompt redraws (a selected option looks the same active or not without it), so
// a session runs in an xterm with none of these from the caller: CI=true, which CI runners
// set, or NO_COLOR would otherwise change the transcript.
const COLOR_VARIABLES = ["NO_COLOR", "NODE_DISABLE_COLORS", "FORCE_COLOR", "CI", "TMUX", "TEAMCITY_VERSION", "TERM_PROGRAM", "COLORTERM"];

/** `env` without the variables that decide terminal colour, and TERM=xterm. */
export function terminalEnv(env) {
  const out = { ...env, TERM: "xterm" };
  for (const name of COLOR_VARIABLES) delete out[name];
  return out;
}

/**
 * Runs one wizard session (test/fixtures/create-image/wizard.json): after the session's
 * set-up (as a scenario's), `command` with its argv in a pseudo-terminal of 120 columns
 * (test/helpers/pty-run.py), typing each step's keys once its prompt shows. Resolves to
 * { code, output (the terminal transcript, escapes removed), files, failedStep }.
 */
export function runWizardSession(session, command, { env = process.env } = {}) {
  return inScratch(session, command, env, async (cwd, root) => {
    const spec = { argv: [...command, ...session.argv], cwd, env: terminalEnv(env), columns: 120, rows: 40, timeout: 30, steps: session.steps };
    const r = await runCommand(["python3", fileURLToPath(new URL("./pty-run.py", import.meta.url))], [JSON.stringify(spec)], { cwd, timeoutMs: 40_000 });
    if (r.code !== 0) throw new Error(`pty-run.py failed (${r.code}): ${r.stderr}`);
    const out = JSON.parse(r.stdout);
    if (out.timedOut) throw new Error(`the session did not end; output so far:\n${out.output}`);
    return { code: out.code, output: anonymize(out.output, root), files: await collectTree(root), failedStep: out.failedStep };
  });
}

/** Runs one scenario with `command` (argv prefix, e.g. [process.execPath, "bin/anvia-sandbox.js"]). */
export function runScenario(scenario, command, { env = process.env } = {}) {
  return inScratch(scenario, command, env, async (cwd, root) => {
    const r = await runCommand(command, scenario.argv.map((a) => substitute(a, root)), { cwd, env });
    return { code: r.code, stdout: anonymize(r.stdout, root), stderr: anonymize(r.stderr, root), files: await collectTree(root) };
  });
}
