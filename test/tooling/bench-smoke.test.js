// The benchmark cannot rot: one run of every operation, four ways (the agent and engine
// transports, the docker CLI path, dockerode), with tiny sizes,
// against the real engine. It asserts that the run completes and writes a well-formed
// result, never a time.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { labelledLeftovers } from "../helpers/docker.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

const OPERATIONS = [
  "createSandbox",
  "destroy",
  "execTrue",
  "execStdout",
  "execStdin",
  "writeTextFileSmall",
  "writeTextFileLarge",
  "readFileSmall",
  "readFileLarge",
  "listFiles",
  "startProcess",
  "stopProcess",
  "waitForPort",
];
const IMPLS = ["agent", "engine", "cli", "dockerode"];
const RATIOS = ["cliOverEngine", "dockerodeOverEngine", "engineOverAgent", "cliOverAgent"];
// One target per line of bench/README.md's table, tree transfers included.
const TARGETS = 22;

test("npm run bench, smoke-sized: completes and writes a well-formed JSON result", { timeout: 600_000 }, async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "anvia-bench-smoke-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = path.join(dir, "result.json");
  const prefix = `smoke${process.pid}`;

  const child = spawn(process.execPath, ["--expose-gc", "bench/run.mjs", "--smoke", "--id-prefix", prefix, "--out", out], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c) => (stdout += c));
  child.stderr.on("data", (c) => (stderr += c));
  const code = await new Promise((resolve) => child.on("close", resolve));
  assert.equal(code, 0, `bench exited with ${code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`);

  // The terminal table.
  assert.match(stdout, /operation\s+runs\s+this package\s+docker CLI\s+dockerode\s+CLI\/engine\s+dockerode\/engine\s+engine\/agent\s+CLI\/agent/);
  assert.match(stdout, /targets \(reported, not asserted\)/);

  const result = JSON.parse(await readFile(out, "utf8"));
  assert.equal(result.schema, 1);
  assert.ok(!Number.isNaN(Date.parse(result.date)));
  for (const field of ["cpuModel", "kernel", "dockerServerVersion", "nodeVersion"]) {
    assert.equal(typeof result.machine[field], "string", `machine.${field}`);
  }
  assert.ok(Number.isInteger(result.machine.cores) && result.machine.cores > 0);
  assert.deepEqual(result.errors, []);

  assert.deepEqual(Object.keys(result.operations).sort(), [...OPERATIONS].sort());
  for (const key of OPERATIONS) {
    const op = result.operations[key];
    assert.equal(typeof op.label, "string", key);
    assert.equal(op.runs, 1, key);
    for (const impl of IMPLS) {
      assert.equal(op[impl].n, 1, `${key}.${impl}.n`);
      for (const stat of ["median", "p95", "min", "max"]) {
        assert.ok(Number.isFinite(op[impl][stat]) && op[impl][stat] > 0, `${key}.${impl}.${stat}`);
      }
      assert.equal(op.samplesMs[impl].length, 1, `${key}.samplesMs.${impl}`);
    }
    for (const ratio of [...RATIOS, "cliOverPackage", "dockerodeOverPackage"]) {
      assert.ok(Number.isFinite(op.ratios[ratio].median) && op.ratios[ratio].median > 0, `${key}.ratios.${ratio}`);
    }
  }

  const { execStream, eventLoopDelay, leak, agentLeak, agentFirstCall, tree, watchLatency, terminalLatency } = result.extras;
  // Terminals: every keystroke timed to its echo, through the agent and the engine path.
  for (const impl of ["agent", "engine"]) {
    assert.equal(terminalLatency[impl]?.keystrokeToEchoMs?.n, terminalLatency.runs, `terminalLatency.${impl}: ${JSON.stringify(terminalLatency[impl])}`);
    assert.ok(terminalLatency[impl].keystrokeToEchoMs.median > 0, `terminalLatency.${impl}.keystrokeToEchoMs`);
  }
  // watchFiles through the agent: every write timed to its event.
  assert.equal(watchLatency.agent.writeToEventMs.n, watchLatency.runs, "watchLatency runs");
  assert.ok(watchLatency.agent.writeToEventMs.median > 0, "watchLatency.agent.writeToEventMs");
  for (const impl of IMPLS) {
    assert.ok(execStream[impl].median > 0, `execStream.${impl}`);
    assert.ok(Number.isFinite(eventLoopDelay[impl].p99Ms), `eventLoopDelay.${impl}.p99Ms`);
    assert.ok(Number.isFinite(eventLoopDelay[impl].maxMs), `eventLoopDelay.${impl}.maxMs`);
  }
  assert.ok(leak.execs > 0 && Number.isInteger(leak.before.openFds) && Number.isInteger(leak.after.openFds));
  assert.ok(leak.before.rssBytes > 0 && leak.after.rssBytes > 0);
  // The agent's own measurements: its leak run reads the agent process in the container,
  // and its first call is measured against the engine client's on fresh sandboxes.
  assert.equal(agentLeak.transport, "agent");
  assert.ok(agentLeak.operations > 0 && Number.isInteger(agentLeak.before.openFds) && Number.isInteger(agentLeak.after.openFds));
  assert.ok(agentLeak.agentProcess.before.vmRssKiB > 0 && agentLeak.agentProcess.after.vmRssKiB > 0, "the agent's VmRSS");
  assert.equal(agentLeak.agentProcess.samePid, true, "one agent served the whole leak run");
  for (const impl of ["agent", "engine"]) {
    assert.equal(agentFirstCall[impl].firstExecMs.n, agentFirstCall.runs, `agentFirstCall.${impl}`);
    assert.ok(Number.isFinite(agentFirstCall[impl].oneTimeMs.median), `agentFirstCall.${impl}.oneTimeMs`);
  }
  for (const dir of ["import", "export"]) {
    assert.ok(tree[dir].package.n > 0 && tree[dir].cp.n > 0, `tree.${dir}`);
    assert.ok(Number.isFinite(tree[dir].ratios.cpOverPackage.median), `tree.${dir}.ratios`);
  }

  assert.deepEqual(
    result.targets.map((x) => typeof x.pass),
    result.targets.map(() => "boolean"),
  );
  assert.equal(result.targets.length, TARGETS, result.targets.map((x) => x.name).join("\n"));

  // Every sandbox the four columns created is gone.
  const left = await labelledLeftovers();
  const ours = (name) => name.includes(`anvia-sandbox-${prefix}-`);
  assert.deepEqual(left.containers.filter(ours), []);
  assert.deepEqual(left.volumes.filter(ours), []);
});

// bench/runtimes.mjs (runc, runsc, crun, both transports): one run of each call, and a
// result with every runtime the daemon has and every operation.
test("bench/runtimes.mjs, smoke-sized: every runtime and operation in a well-formed result", { timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "anvia-bench-runtimes-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = path.join(dir, "runtimes.json");
  const code = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, "bench/runtimes.mjs"), "--runs", "1", "--warmup", "0", "--json", out], { stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", resolve);
  });
  assert.equal(code, 0);
  const result = JSON.parse(await readFile(out, "utf8"));
  assert.ok(result.config.runtimes.includes("default"), JSON.stringify(result.config));
  for (const name of result.config.runtimes) {
    for (const transport of ["agent", "engine"]) {
      for (const op of ["execTrue", "writeTextFile", "readFile", "listFiles"]) {
        const r = result.results[`${name}/${transport}/${op}`];
        assert.ok(r && r.n === 1 && r.median > 0, `${name}/${transport}/${op}: ${JSON.stringify(r)}`);
      }
    }
  }
  // Its sandboxes (bench-rt-<runtime>-...) are gone; other suites may run beside it.
  const left = await labelledLeftovers();
  const ours = (name) => name.includes("anvia-sandbox-bench-rt-");
  assert.deepEqual([...left.containers.filter(ours), ...left.volumes.filter(ours)], []);
});
