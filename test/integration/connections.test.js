// Connections to the engine are kept alive and reused, and a burst of concurrent requests
// does not leave dozens of idle descriptors behind (at most a small pool stays open).
import test from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { DockerSandboxClient } from "../../lib/index.js";
import { baseOptions } from "../helpers/docker.js";

const openFds = () => readdirSync("/proc/self/fd").length;

test("a burst of 48 concurrent execs leaves at most a small pool of idle connections", { timeout: 180_000 }, async (t) => {
  const client = new DockerSandboxClient();
  const sandbox = await client.createSandbox(baseOptions());
  t.after(() => sandbox.destroy());
  await sandbox.runtime.exec({ command: "true" });
  const before = openFds();
  const results = await Promise.all(Array.from({ length: 48 }, (_, i) => sandbox.runtime.exec({ command: "echo", args: [String(i)] })));
  assert.ok(results.every((r, i) => new TextDecoder().decode(r.stdout) === `${i}\n`));
  await sandbox.runtime.exec({ command: "true" });
  const after = openFds();
  t.diagnostic(`open descriptors ${before} -> ${after}`);
  assert.ok(after - before <= 10, `descriptors grew from ${before} to ${after} after the burst`);
  // Sequential requests reuse one connection: no growth at all.
  for (let i = 0; i < 20; i++) await sandbox.runtime.exec({ command: "true" });
  assert.equal(openFds(), after);
});
