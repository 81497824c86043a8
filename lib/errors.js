// The one error class of the package. Native code builds its errors with this class
// (lib/native.js hands it over at load), so `instanceof DockerSandboxError`, `code`,
// `details` and `cause` behave the same whichever side raised the error.
import { spawn } from "node:child_process";
import { inspect } from "node:util";

// `code` and `details` are class fields, as in the original's compiled class: they become
// own keys first (details even when undefined), then the constructor sets `name`, so the
// own keys are `code, details, name` in the original's order (Object.keys, JSON.stringify).
export class DockerSandboxError extends Error {
  code;
  details;
  constructor(message, code, details, options) {
    super(message, options);
    this.name = "DockerSandboxError";
    this.code = code;
    this.details = details;
  }
}

// TextDecoder("utf-8", { fatal: true }): invalid bytes throw the platform's TypeError.
export function decodeUtf8(bytes) {
  return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
}

// The error the original got from Node when an argument of a docker CLI command held a
// NUL byte: child_process.spawn refused it at once with its own TypeError
// (ERR_INVALID_ARG_VALUE, "The argument 'args[<position>]' must be a string without null
// bytes. Received <util.inspect of the argument>"). The native side finds such an
// argument where the original would have put it and asks for this error. It is Node's
// own, made the way the original got it: spawn validates its arguments before anything
// else, and `options` here is not an object, so nothing can ever be spawned (without a
// NUL, spawn throws ERR_INVALID_ARG_TYPE for the options instead, and the same error is
// built by hand).
export function nullByteArgumentError(position, value) {
  const args = new Array(position).fill("");
  args.push(value);
  try {
    spawn("docker", args, 0);
  } catch (error) {
    if (error?.code === "ERR_INVALID_ARG_VALUE") return error;
  }
  let shown = inspect(value);
  if (shown.length > 128) shown = `${shown.slice(0, 128)}...`;
  const error = new TypeError(`The argument 'args[${position}]' must be a string without null bytes. Received ${shown}`);
  error.code = "ERR_INVALID_ARG_VALUE";
  return error;
}
