// The client's `transport` option and ANVIA_SANDBOX_TRANSPORT: validated when the client is
// made (no engine needed), before anything is sent.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient } from "../../lib/index.js";

test("transport accepts auto, agent and engine", () => {
  for (const transport of ["auto", "agent", "engine", undefined]) {
    assert.ok(new DockerSandboxClient({ transport }) instanceof DockerSandboxClient, String(transport));
  }
});

test("any other transport is a TypeError naming the choices", () => {
  for (const transport of ["ssh", "", "AGENT", 1, null, {}, ["agent"]]) {
    assert.throws(() => new DockerSandboxClient({ transport }), {
      name: "TypeError",
      message: 'transport must be "auto", "agent" or "engine".',
    }, String(transport));
  }
});

test("ANVIA_SANDBOX_TRANSPORT sets the default and is checked the same way", () => {
  const lib = JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)));
  const script = `import { DockerSandboxClient } from ${lib};
    try { new DockerSandboxClient(); console.log("ok"); } catch (e) { console.log(e.name + ": " + e.message); }
    try { new DockerSandboxClient({ transport: "engine" }); console.log("explicit ok"); } catch (e) { console.log(e.message); }`;
  const run = (value) =>
    spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...process.env, ANVIA_SANDBOX_TRANSPORT: value },
      encoding: "utf8",
    }).stdout.trim().split("\n");
  assert.deepEqual(run("agent"), ["ok", "explicit ok"]);
  assert.deepEqual(run("engine"), ["ok", "explicit ok"]);
  assert.deepEqual(run("bogus"), ['TypeError: ANVIA_SANDBOX_TRANSPORT must be "auto", "agent" or "engine".', "explicit ok"]);
});
