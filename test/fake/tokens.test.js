// The native tokens are type-tagged: every entry point that takes a client, a sandbox or an
// operation token refuses every other kind of token (and anything else) with a TypeError,
// instead of reading one struct as another. Tokens are real ones, made against the fake
// engine; no operation is ever started with a wrong one.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, startFakeEngine } from "../helpers/fake-engine.js";
import { native } from "../helpers/native.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

// Entry point -> the kind of token its first argument must be, and the arguments after it.
const ENTRIES = {
  preparePull: ["client", { image: "x:1" }],
  prepareCreate: ["client", { image: "x:1", workspace: { type: "ephemeral" }, network: { mode: "none" } }],
  prepareResume: ["client", { id: "tok1" }],
  prepareStopContainer: ["sandbox"],
  prepareRemoveContainer: ["sandbox"],
  prepareRemoveVolume: ["sandbox"],
  sandboxOwnsVolume: ["sandbox"],
  prepareExec: ["sandbox", { command: "true" }],
  prepareReadFile: ["sandbox", { path: "a" }],
  prepareWriteFile: ["sandbox", { path: "a", text: "x" }, true],
  prepareListFiles: ["sandbox", {}],
  prepareStartProcess: ["sandbox", { command: "sleep" }],
  prepareStopProcess: ["sandbox", { processId: "p" }],
  prepareDisposeProcesses: ["sandbox"],
  listProcesses: ["sandbox"],
  processLogs: ["sandbox", "p", undefined],
  prepareWaitForPort: ["sandbox", { containerPort: 80 }],
  prepareWatchFiles: ["sandbox", {}],
  start: ["op"],
  cancel: ["op", new Error("stop")],
  control: ["op", 1],
};

test("every entry point refuses every wrong kind of token with a TypeError", T, async (t) => {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  fake.addContainer("tok1");
  const tokens = {};
  tokens.client = native.clientNew({ host: fake.host });
  const resumed = await native.start(native.prepareResume(tokens.client, { id: "tok1" }));
  tokens.sandbox = resumed.sandbox;
  tokens.op = native.prepareExec(tokens.sandbox, { command: "true" }); // never started
  const others = { object: {}, array: [], string: "token", number: 7, null: null, undefined: undefined };

  let checked = 0;
  for (const [name, [kind, ...rest]] of Object.entries(ENTRIES)) {
    assert.equal(typeof native[name], "function", `native.${name} exists`);
    const wrong = { ...others };
    for (const k of ["client", "sandbox", "op"]) if (k !== kind) wrong[k] = tokens[k];
    for (const [label, value] of Object.entries(wrong)) {
      assert.throws(
        () => native[name](value, ...rest),
        (e) => e instanceof TypeError && /^Expected (a|an) /.test(e.message),
        `native.${name}(${label}) must throw a TypeError`,
      );
      checked++;
    }
  }
  assert.ok(checked >= Object.keys(ENTRIES).length * 8, `${checked} calls checked`);

  // The right kinds still work, and the op token never started can still be started.
  assert.equal(typeof native.sandboxOwnsVolume(tokens.sandbox), "boolean");
  const started = native.start(tokens.op);
  assert.ok(started instanceof Promise);
  await started.catch(() => {}); // the fake engine's exec answer does not matter here
});
