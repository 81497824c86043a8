// createSandbox with an initial file that is also a directory (listed in `directories`, or
// the parent of another entry): refused with a clear error naming it, before any request
// reaches the engine (nothing is created, so nothing needs rolling back).
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, DockerSandboxError, startFakeEngine } from "../helpers/fake-engine.js";

const cases = [
  [{ files: { a: "x" }, directories: ["a"] }, "a"],
  [{ files: { "a/b": "x" }, directories: ["a/b/"] }, "a/b"],
  [{ files: { a: "x", "a/b": "y" } }, "a"],
  [{ files: { "d/a": "x" }, directories: ["d/a/c"] }, "d/a"],
  [{ files: { "a.txt": "x", a: "y", "a-b/c": "z", "a/../a/x": "w" } }, "a"],
];

for (const [extra, path] of cases) {
  test(`createSandbox ${JSON.stringify(extra)}: "${path}" is named, and no request is made`, { timeout: HANG_MS }, async (t) => {
    const fake = await startFakeEngine();
    t.after(() => fake.close());
    const client = new DockerSandboxClient({ host: fake.host });
    const options = { image: "img", workspace: { type: "ephemeral" }, network: { mode: "none" }, ...extra };
    await assert.rejects(client.createSandbox(options), (error) => {
      assert.ok(error instanceof DockerSandboxError, String(error));
      assert.equal(error.code, "docker_command_failed");
      assert.equal(error.message, `Sandbox path names a directory, not a file: ${path}`);
      return true;
    });
    assert.deepEqual(fake.requests, []);
  });
}

test("createSandbox with files and directories that do not collide is not refused", { timeout: HANG_MS }, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addImage?.("img");
  const client = new DockerSandboxClient({ host: fake.host });
  const options = {
    image: "img",
    workspace: { type: "ephemeral" },
    network: { mode: "none" },
    files: { "a.txt": "x", "a-b/c": "y", "d/e": "z" },
    directories: ["a", "d", "d/f"],
  };
  // Whatever the fake engine answers next, the refusal above is not what comes back.
  await client.createSandbox(options).then(
    (box) => box.destroy(),
    (error) => assert.doesNotMatch(String(error.message), /names a directory/),
  );
});
