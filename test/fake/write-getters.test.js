// writeFile copies its data before it reads anything else of the options, as the
// original's options.data.slice() did: a `path` getter that transfers (detaches) the data's
// buffer, and forces a garbage collection so its memory is gone, cannot make the addon read
// freed memory (the sanitizer stage would report it) or write anything but the bytes the
// data held when writeFile was called.
import test from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { HANG_MS, fakeSandbox } from "../helpers/fake-engine.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

test("a path getter that transfers the data's buffer: the bytes as they were are written", { timeout: HANG_MS }, async (t) => {
  const { fake, runtime } = await fakeSandbox(t);
  const size = 1 << 20;
  const data = new Uint8Array(size).fill(0x41);
  let transferred = false;
  const options = {
    data,
    get path() {
      structuredClone(data.buffer, { transfer: [data.buffer] }); // the clone is garbage at once
      gc();
      transferred = true;
      return "moved.txt";
    },
  };
  await runtime.writeFile(options);
  assert.ok(transferred, "the getter ran");
  assert.equal(data.byteLength, 0, "the caller's buffer is detached");
  const file = fake.state.files.get("/workspace/moved.txt");
  assert.ok(file, "the file was uploaded");
  assert.equal(file.content.length, size);
  assert.ok(file.content.every((b) => b === 0x41), "every byte as it was before the getter ran");
});
