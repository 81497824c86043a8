// withSandbox(client, options, callback): creates a sandbox, runs the callback with it and
// always destroys it, whether the callback returned, threw, or the caller aborted
// (options.abortSignal: creation stops, or the callback is abandoned and the sandbox
// destroyed at once, which also cancels the runtime operations it had in flight). When
// destroying fails, nothing is lost (the pattern of ../shared seed 004's SandboxRunError):
// after a successful callback the error is a DockerSandboxCleanupError, after a failed one
// a DockerSandboxRunError keeping both the callback's error and the cleanup's; both keep
// the sandbox and a retryCleanup() that destroys it again.
import { isRecord } from "./util.js";

export class DockerSandboxCleanupError extends Error {
  sandbox;
  constructor(sandbox, cleanupError) {
    super(`Unable to clean up sandbox: ${sandbox.id}`, { cause: cleanupError });
    this.name = "DockerSandboxCleanupError";
    this.sandbox = sandbox;
  }

  get cleanupError() {
    return this.cause;
  }

  retryCleanup() {
    return this.sandbox.destroy();
  }
}

export class DockerSandboxRunError extends Error {
  primaryError;
  cleanupError;
  sandbox;
  constructor(sandbox, primaryError, cleanupError) {
    super(`Sandbox callback and cleanup both failed: ${sandbox.id}`, { cause: primaryError });
    this.name = "DockerSandboxRunError";
    this.primaryError = primaryError;
    this.cleanupError = cleanupError;
    this.sandbox = sandbox;
  }

  retryCleanup() {
    return this.sandbox.destroy();
  }
}

// The callback's promise, or the abort reason as soon as the signal fires.
function untilAborted(promise, signal) {
  if (signal === undefined) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason ?? new DOMException("Aborted", "AbortError"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

export async function withSandbox(client, options, callback) {
  if (client === null || typeof client !== "object" || typeof client.createSandbox !== "function") {
    throw new TypeError("client must be a DockerSandboxClient.");
  }
  if (!isRecord(options)) throw new TypeError("options must be an object.");
  if (typeof callback !== "function") throw new TypeError("callback must be a function.");
  const signal = options.abortSignal;
  const sandbox = await client.createSandbox(options);
  let failed = false;
  let primary;
  let result;
  try {
    const run = Promise.resolve().then(() => callback(sandbox));
    run.catch(() => undefined); // abandoned on abort: its later failure is not unhandled
    result = await untilAborted(run, signal);
  } catch (error) {
    failed = true;
    primary = error;
  }
  try {
    await sandbox.destroy();
  } catch (cleanupError) {
    if (failed) throw new DockerSandboxRunError(sandbox, primary, cleanupError);
    throw new DockerSandboxCleanupError(sandbox, cleanupError);
  }
  if (failed) throw primary;
  return result;
}
