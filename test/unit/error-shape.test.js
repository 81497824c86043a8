// DockerSandboxError has the original's shape: the same own keys in the same order (so
// Object.keys, JSON.stringify and util.inspect agree), `details` an own key even when
// undefined, `cause` where it was given.
//
// The reference below is the original's class as its dist code builds it. The seed
// (dist/index.js of 1.0.0-rc.10) imports it from a chunk that is not part of the seed and
// shows only how it is called: `new DockerSandboxError(message, code, details, { cause })`.
// Its compiled form declares `code` and `details` as class fields and sets `name` in the
// constructor, which is what gives the key order observed on the original (issue 13,
// item 10): `code, details, name`.
import test from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";

import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import native from "../helpers/native.js";

class ReferenceDockerSandboxError extends Error {
  code;
  details;
  constructor(message, code, details, options) {
    super(message, options);
    this.name = "DockerSandboxError";
    this.code = code;
    this.details = details;
  }
}

function shape(error) {
  return {
    keys: Object.keys(error),
    own: Object.getOwnPropertyNames(error).filter((k) => k !== "stack"),
    json: JSON.stringify(error),
    hasDetails: Object.hasOwn(error, "details"),
    descriptors: Object.fromEntries(
      Object.getOwnPropertyNames(error)
        .filter((k) => k !== "stack")
        .map((k) => {
          const d = Object.getOwnPropertyDescriptor(error, k);
          return [k, { enumerable: d.enumerable, writable: d.writable, configurable: d.configurable }];
        }),
    ),
  };
}

// util.inspect without the stack frames (an error settled from a libuv callback has none).
function inspected(error) {
  return inspect(error).replace(/\n\s+at [^\n]*/g, "").replace(/ReferenceDockerSandboxError/g, "DockerSandboxError");
}

const cases = [
  ["no details", ["Sandbox path cannot be empty.", "invalid_path"]],
  ["details", ["Sandbox x is not running (stopped).", "invalid_state", { state: "stopped" }]],
  ["details and cause", ["Docker CLI was not found.", "docker_unavailable", undefined, { cause: new Error("ENOENT") }]],
  ["null details", ["m", "timeout", null]],
];

for (const [name, args] of cases) {
  test(`a DockerSandboxError built by the shim has the original's shape: ${name}`, () => {
    assert.deepEqual(shape(new DockerSandboxError(...args)), shape(new ReferenceDockerSandboxError(...args)));
    assert.equal(inspected(new DockerSandboxError(...args)), inspected(new ReferenceDockerSandboxError(...args)));
  });
}

test("Object.keys is code, details, name; details is an own key when undefined", () => {
  const error = new DockerSandboxError("m", "invalid_path");
  assert.deepEqual(Object.keys(error), ["code", "details", "name"]);
  assert.ok(Object.hasOwn(error, "details"));
  assert.equal(JSON.stringify(error), '{"code":"invalid_path","name":"DockerSandboxError"}');
  assert.equal(JSON.stringify(new DockerSandboxError("m", "port", { a: 1 })), '{"code":"port","details":{"a":1},"name":"DockerSandboxError"}');
});

test("errors the addon raises have the same shape", async () => {
  let raised;
  try {
    native.normalizeSandboxPath("", false);
  } catch (error) {
    raised = error;
  }
  assert.ok(raised instanceof DockerSandboxError);
  assert.deepEqual(shape(raised), shape(new ReferenceDockerSandboxError("Sandbox path cannot be empty.", "invalid_path")));

  // An engine error, with details, through a client that reaches no engine.
  const client = new DockerSandboxClient({ host: "unix:///nonexistent/anvia-shape.sock" });
  const error = await client.resumeSandbox({ id: "shape" }).then(
    () => assert.fail("resumed without an engine"),
    (e) => e,
  );
  assert.ok(error instanceof DockerSandboxError);
  assert.deepEqual(Object.keys(error), ["code", "details", "name"]);
  const reference = new ReferenceDockerSandboxError(error.message, error.code, error.details, error.cause === undefined ? undefined : { cause: error.cause });
  assert.deepEqual(shape(error), shape(reference));
});
