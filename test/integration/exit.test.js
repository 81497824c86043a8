// Leaving while work is live: process.exit() with operations, streams and managed
// processes in flight exits cleanly; a worker thread that is terminated mid-operation
// tears its addon instance down without crashing the process; and a script that forgets
// to clean up still ends once its in-flight operations have (a live managed process is
// the documented exception: it keeps Node running until the sandbox is stopped or
// destroyed, as the original's child processes did).
import test from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { IMAGE, labelledLeftovers, api } from "../helpers/docker.js";

const lib = fileURLToPath(new URL("../../lib/index.js", import.meta.url));
const libUrl = pathToFileURL(lib).href;

function runScript(source, timeoutMs = 60_000) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { env: process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    const started = performance.now();
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started });
    });
  });
}

async function removeById(id) {
  for (const c of (await labelledLeftovers(id)).containers) await api("DELETE", `/containers${c}?force=1`);
  for (const v of (await labelledLeftovers(id)).volumes) await api("DELETE", `/volumes/${v}`);
}

test("process.exit() with execs, streams, reads and managed processes in flight exits cleanly", { timeout: 120_000 }, async () => {
  const id = `exit-${process.pid}-${Date.now() % 100000}`;
  const result = await runScript(`
    import { DockerSandboxClient } from ${JSON.stringify(lib)};
    const client = new DockerSandboxClient();
    const sb = await client.createSandbox({ id: ${JSON.stringify(id)}, image: ${JSON.stringify(IMAGE)}, workspace: { type: "ephemeral" }, network: { mode: "none" } });
    await sb.runtime.startProcess({ command: "sleep", args: ["600"] });
    sb.runtime.exec({ command: "sleep", args: ["30"] }).catch(() => {});
    sb.runtime.exec({ command: "cat", input: new Uint8Array(4 << 20) }).catch(() => {});
    sb.runtime.readFile({ path: "nothing" }).catch(() => {});
    (async () => { for await (const e of sb.runtime.execStream({ command: "sh", args: ["-c", "yes | head -c 100000000"] })) {} })().catch(() => {});
    setTimeout(() => { console.log("exiting"); process.exit(0); }, 700);
  `);
  await removeById(id);
  assert.equal(result.signal, null, `killed by ${result.signal}: ${result.stderr}`);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /exiting/);
  assert.doesNotMatch(result.stderr, /Segmentation|Aborted|core dumped|FATAL|Assertion/);
});

test("a worker thread terminated mid-operation tears its instance down without crashing", { timeout: 120_000 }, async () => {
  const id = `worker-${process.pid}-${Date.now() % 100000}`;
  const result = await runScript(`
    import { Worker } from "node:worker_threads";
    const code = \`
      import { DockerSandboxClient } from ${JSON.stringify(libUrl)};
      import { parentPort } from "node:worker_threads";
      const client = new DockerSandboxClient();
      const sb = await client.createSandbox({ id: ${JSON.stringify(id)}, image: ${JSON.stringify(IMAGE)}, workspace: { type: "ephemeral" }, network: { mode: "none" } });
      sb.runtime.exec({ command: "sleep", args: ["30"] }).catch(() => {});
      (async () => { for await (const e of sb.runtime.execStream({ command: "sh", args: ["-c", "yes | head -c 100000000"] })) {} })().catch(() => {});
      parentPort.postMessage("busy");
    \`;
    const worker = new Worker(new URL("data:text/javascript," + encodeURIComponent(code)));
    worker.on("error", (e) => { console.error("worker error", e); process.exitCode = 2; });
    await new Promise((resolve) => worker.once("message", resolve));
    await new Promise((r) => setTimeout(r, 300));
    await worker.terminate();
    // The addon still works on the main thread after a worker's instance went away.
    const { DockerSandboxClient } = await import(${JSON.stringify(lib)});
    await new DockerSandboxClient().pullImage({ image: "anvia-sandbox/no-such-image:x" }).catch((e) => console.log("main thread:", e.code));
    console.log("terminated");
  `);
  await removeById(id);
  assert.equal(result.signal, null, `killed by ${result.signal}: ${result.stderr}`);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /main thread: docker_command_failed/);
  assert.match(result.stdout, /terminated/);
});

test("a script that forgets to clean up ends once its operations have; destroy lets a live process go", { timeout: 120_000 }, async () => {
  const id = `forget-${process.pid}-${Date.now() % 100000}`;
  const result = await runScript(`
    import { DockerSandboxClient } from ${JSON.stringify(lib)};
    const client = new DockerSandboxClient();
    const sb = await client.createSandbox({ id: ${JSON.stringify(id)}, image: ${JSON.stringify(IMAGE)}, workspace: { type: "ephemeral" }, network: { mode: "none" } });
    await sb.runtime.exec({ command: "true" });
    await sb.runtime.startProcess({ command: "sleep", args: ["600"] });
    await sb.destroy();
    console.log("returning");
  `);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /returning/);
  // It exits at all (the test's timeout says how long is too long, not this machine's speed).
  console.log(`# the script exited after ${result.ms} ms`);
  assert.deepEqual(await labelledLeftovers(id), { containers: [], volumes: [] });
});
