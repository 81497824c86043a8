// Small checks shared by the handle and its runtime, worded as the original words them.
import { DockerSandboxError } from "./errors.js";

export function invalidState(id, state) {
  return new DockerSandboxError(`Sandbox ${id} is not running (${state}).`, "invalid_state", { state });
}

export function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
