// Small checks shared by the handle and its runtime, worded as the original words them.
import { DockerSandboxError } from "./errors.js";

export function invalidState(id, state) {
  return new DockerSandboxError(`Sandbox ${id} is not running (${state}).`, "invalid_state", { state });
}

export function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function assertOptionsObject(value) {
  if (!isRecord(value)) throw new TypeError("options must be an object.");
}

export function assertNonEmptyString(value, name) {
  if (typeof value !== "string" || value.length === 0) throw new TypeError(`${name} must be a non-empty string.`);
}

export function assertNonNegativeSafeInteger(value, name) {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative safe integer.`);
}
