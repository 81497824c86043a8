// Sandbox paths are bounded (issue 13, item 2): a path longer than 4096 bytes or deeper
// than 256 components, normalized, is refused with invalid_path before any request (an
// LLM's tool call could otherwise make one probe per component, all at once). A path at
// the bounds still works.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, expectCode, fakeSandbox, startFakeEngine } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const HUGE = "a/".repeat(20000) + "x";

/** 256 components, 4096 bytes: 255 of 15 bytes and one of 16, and 255 separators. */
const AT_BOUNDS = [...Array.from({ length: 255 }, (_, i) => `d${String(i).padStart(14, "0")}`), "f".repeat(16)].join("/");
/** One component more than the bound (257), well under 4096 bytes. */
const TOO_DEEP = "d/".repeat(256) + "x";
/** One byte more than the bound (4097), 2 components. */
const TOO_LONG = "d/" + "x".repeat(4095);

test("the paths used below are what they claim", () => {
  assert.equal(Buffer.byteLength(AT_BOUNDS), 4096);
  assert.equal(AT_BOUNDS.split("/").length, 256);
  assert.equal(TOO_DEEP.split("/").length, 257);
  assert.equal(Buffer.byteLength(TOO_LONG), 4097);
});

test("a path of 20000 components is refused at once on every runtime call, with no request", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "deep1" });
  const before = fake.requests.length;
  /** Every runtime call with `path`, each refused with `message`: how long they all took. */
  const refuseAll = async (path, message) => {
    const started = performance.now();
    await expectCode(runtime.writeTextFile({ path, text: "x" }), "invalid_path", message);
    await expectCode(runtime.writeFile({ path, data: new Uint8Array(1) }), "invalid_path", message);
    await expectCode(runtime.readFile({ path }), "invalid_path", message);
    await expectCode(runtime.readTextFile({ path }), "invalid_path", message);
    await expectCode(runtime.readTextFilePage({ path }), "invalid_path", message);
    await expectCode(runtime.listFiles({ path }), "invalid_path", message);
    await expectCode(runtime.exec({ command: "true", cwd: path }), "invalid_path", message);
    await expectCode(runtime.startProcess({ command: "true", cwd: path }), "invalid_path", message);
    await expectCode(
      (async () => {
        for await (const event of runtime.execStream({ command: "true", cwd: path })) void event;
      })(),
      "invalid_path",
      message,
    );
    return performance.now() - started;
  };
  // "At once" whatever the machine's speed: refusing it costs about what refusing a path
  // one byte over the bound costs (the quickest of three interleaved rounds of each, so a
  // busy moment does not count), not time that grows with its 20000 components.
  let huge = Infinity;
  let justOver = Infinity;
  for (let i = 0; i < 3; i++) {
    huge = Math.min(huge, await refuseAll(HUGE, /^Sandbox path is too long: 40001 bytes \(at most 4096\)\.$/));
    justOver = Math.min(justOver, await refuseAll(TOO_LONG, /^Sandbox path is too long: 4097 bytes \(at most 4096\)\.$/));
  }
  assert.equal(fake.requests.length, before, "no request was made");
  assert.ok(huge < 10 * justOver + 50, `refused in ${huge.toFixed(1)} ms, a path one byte over the bound in ${justOver.toFixed(1)} ms`);
  t.diagnostic(`refused in ${huge.toFixed(2)} ms; one byte over the bound: ${justOver.toFixed(2)} ms`);
});

test("one component or one byte over the bounds is refused", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "deep2" });
  const before = fake.requests.length;
  const deep = /^Sandbox path is too deep: 257 components \(at most 256\)\.$/;
  await expectCode(runtime.writeTextFile({ path: TOO_DEEP, text: "x" }), "invalid_path", deep);
  await expectCode(runtime.readFile({ path: TOO_DEEP }), "invalid_path", deep);
  await expectCode(runtime.listFiles({ path: TOO_DEEP }), "invalid_path", deep);
  await expectCode(runtime.exec({ command: "true", cwd: TOO_DEEP }), "invalid_path", deep);
  await expectCode(runtime.writeTextFile({ path: TOO_LONG, text: "x" }), "invalid_path", /^Sandbox path is too long: 4097 bytes/);
  await expectCode(runtime.exec({ command: "true", cwd: TOO_LONG }), "invalid_path", /too long/);
  // Bounds apply to the normalized path: what normalizes short is accepted.
  await expectCode(runtime.exec({ command: "true", cwd: `${"./".repeat(3000)}../x` }), "invalid_path", /cannot leave the workspace/);
  assert.equal(fake.requests.length, before, "no request was made");
});

test("the original's own path errors keep their messages, even for a long path", T, async (t) => {
  const { runtime } = await fakeSandbox(t, { id: "deep3" });
  await expectCode(runtime.readFile({ path: `/${HUGE}` }), "invalid_path", /^Sandbox path must be relative: \/a\/a\//);
  await expectCode(runtime.readFile({ path: `${HUGE}\0` }), "invalid_path", /^Sandbox path cannot contain null bytes\.$/);
  await expectCode(runtime.readFile({ path: `${"../".repeat(5000)}x` }), "invalid_path", /^Sandbox path cannot leave the workspace: /);
});

test("a path at the bounds (256 components, 4096 bytes) works: write, read, list, exec cwd", T, async (t) => {
  const { fake, runtime } = await fakeSandbox(t, { id: "deep4" });
  const heads = () => fake.seen("HEAD", "/archive").length;
  let mark = heads();
  await runtime.writeTextFile({ path: AT_BOUNDS, text: "deep" });
  // At most one probe per parent directory: 255 for a maximal path.
  assert.ok(heads() - mark <= 255, `ancestor probes of the write: ${heads() - mark}`);
  const upload = fake.state.uploads.at(-1);
  assert.ok(upload, "the file was uploaded");
  fake.addFile(`/workspace/${AT_BOUNDS}`, "deep");
  mark = heads();
  assert.equal(await runtime.readTextFile({ path: AT_BOUNDS }), "deep");
  assert.ok(heads() - mark <= 255, `ancestor probes of the read: ${heads() - mark}`);
  await runtime.listFiles({ path: AT_BOUNDS });
  const result = await runtime.exec({ command: "true", cwd: AT_BOUNDS });
  assert.equal(result.status, "exited");
  const created = fake.seen("POST", /\/containers\/[^/]+\/exec$/).at(-1);
  assert.equal(created.json().WorkingDir, `/workspace/${AT_BOUNDS}`);
});

test("createSandbox refuses a file or directory path over the bounds before any request", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  const client = new DockerSandboxClient({ host: fake.host });
  const base = { image: "fake:latest", workspace: { type: "ephemeral" }, network: { mode: "none" } };
  await expectCode(client.createSandbox({ ...base, files: { [HUGE]: "x" } }), "invalid_path", /^Sandbox path is too long/);
  await expectCode(client.createSandbox({ ...base, directories: [TOO_DEEP] }), "invalid_path", /^Sandbox path is too deep/);
  assert.equal(fake.requests.length, 0, "no request was made");
});
