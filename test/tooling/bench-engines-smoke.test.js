// bench/engines.mjs cannot rot either: one run of every operation with tiny sizes, on the
// engines the environment names (Docker alone here; scripts/bench.sh adds the ssh and
// Podman columns). Asserts a well-formed result and nothing left behind, never a time.
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { labelledLeftovers } from "../helpers/docker.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

test("bench/engines.mjs, smoke-sized: completes and writes a well-formed JSON result", { timeout: 300_000 }, async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "anvia-bench-engines-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const out = path.join(dir, "result.json");
  const prefix = `esmoke${process.pid}`;
  const env = { ...process.env };
  delete env.ANVIA_BENCH_SSH_HOST;
  delete env.ANVIA_BENCH_PODMAN_HOST;
  if (env.DOCKER_HOST?.startsWith("unix://")) env.ANVIA_BENCH_DOCKER_HOST = env.DOCKER_HOST;
  const child = spawn(process.execPath, ["bench/engines.mjs", "--smoke", "--id-prefix", prefix, "--out", out], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (c) => (output += c));
  child.stderr.on("data", (c) => (output += c));
  const code = await new Promise((resolve) => child.on("exit", resolve));
  assert.equal(code, 0, output);
  const result = JSON.parse(await readFile(out, "utf8"));
  assert.deepEqual(result.errors, []);
  assert.deepEqual(Object.keys(result.config.engines), ["docker"]);
  assert.equal(Object.keys(result.operations).length, 13);
  for (const [key, op] of Object.entries(result.operations)) {
    assert.equal(op.docker.n, 1, key);
    assert.ok(Number.isFinite(op.docker.median), key);
  }
  assert.match(result.table, /Docker \(unix socket\)/);
  const left = await labelledLeftovers();
  assert.deepEqual(left.containers.filter((n) => n.includes(prefix)), []);
});
