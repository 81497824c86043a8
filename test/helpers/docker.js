// Test-side access to the engine, independent of the code under test: raw Engine API
// calls with node:http over the same socket, to check what the library did.
import http from "node:http";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";

export const IMAGE = process.env.ANVIA_TEST_IMAGE ?? "anvia-sandbox/bookworm:local";
export const BUSYBOX_IMAGE = process.env.ANVIA_BUSYBOX_IMAGE ?? "anvia-sandbox/busybox:local";

function socketPath() {
  // The socket of the engine behind the endpoint, when the endpoint is not one
  // (ssh://: scripts/test-engine.sh names the socket the ssh side reaches).
  if (process.env.ANVIA_TEST_ENGINE_SOCKET) return process.env.ANVIA_TEST_ENGINE_SOCKET;
  const host = process.env.DOCKER_HOST;
  if (host?.startsWith("unix://")) return host.slice("unix://".length);
  return "/var/run/docker.sock";
}

export function api(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        socketPath: socketPath(),
        method,
        path: `/v1.41${path}`,
        headers: payload ? { "content-type": "application/json", "content-length": payload.length } : {},
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json;
          try {
            json = text.length > 0 ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode, json, text });
        });
      },
    );
    req.on("error", reject);
    if (payload) req.write(payload);
    req.end();
  });
}

export async function inspectContainer(name) {
  const res = await api("GET", `/containers/${encodeURIComponent(name)}/json`);
  return res.status === 200 ? res.json : undefined;
}

export async function volumeExists(name) {
  return (await api("GET", `/volumes/${encodeURIComponent(name)}`)).status === 200;
}

export async function labelledLeftovers(id) {
  const filter = encodeURIComponent(JSON.stringify({ label: [id ? `anvia.sandbox.id=${id}` : "anvia.sandbox.id"] }));
  const containers = (await api("GET", `/containers/json?all=1&filters=${filter}`)).json ?? [];
  const volumes = (await api("GET", `/volumes?filters=${filter}`)).json?.Volumes ?? [];
  return { containers: containers.map((c) => c.Names[0]), volumes: volumes.map((v) => v.Name) };
}

// Runs a command in a container through the raw API (no library code involved). An engine
// too busy to connect an exec's output pipes in time (containerd's shim gives up on the
// fifo after 30 s: "failed to start io pipe copy", seen on two busy cores with the suite's
// background builds) has not run the command: it is run again, at most twice more.
export async function dockerExec(container, cmd) {
  for (let attempt = 1; ; attempt++) {
    const r = await dockerExecOnce(container, cmd);
    if (attempt >= 3 || !/^failed to start io pipe copy: /.test(r.stdout + r.stderr)) return r;
    console.log(`# dockerExec ${JSON.stringify(cmd)}: the engine did not start it (${(r.stdout + r.stderr).trim().slice(0, 120)}); again`);
  }
}

async function dockerExecOnce(container, cmd) {
  const created = await api("POST", `/containers/${encodeURIComponent(container)}/exec`, {
    AttachStdout: true,
    AttachStderr: true,
    Cmd: cmd,
  });
  if (created.status !== 201) throw new Error(`exec create failed: ${created.text}`);
  const out = await new Promise((resolve, reject) => {
    const req = http.request(
      {
        socketPath: socketPath(),
        method: "POST",
        path: `/v1.41/exec/${created.json.Id}/start`,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks)));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ Detach: false, Tty: false }));
  });
  let stdout = "";
  let stderr = "";
  for (let i = 0; i + 8 <= out.length; ) {
    const len = out.readUInt32BE(i + 4);
    const data = out.subarray(i + 8, i + 8 + len).toString("utf8");
    if (out[i] === 2) stderr += data;
    else stdout += data;
    i += 8 + len;
  }
  // Podman may still say Running just after the stream ended, and deletes the session
  // exit_command_delay seconds after the command: the code is read once it has ended, and
  // a session that is gone says so (exitCode undefined, `inspect` the engine's answer).
  for (;;) {
    const info = await api("GET", `/exec/${created.json.Id}/json`);
    if (info.status !== 200) return { stdout, stderr, exitCode: undefined, inspect: `${info.status} ${info.text}` };
    if (info.json.Running !== true) return { stdout, stderr, exitCode: info.json.ExitCode };
    await sleep(20);
  }
}

/** `ps -eo pid,args` in a container, through the raw API. */
export async function psOf(container) {
  // ps changes nothing: a listing whose exit code the engine could not tell is taken again.
  for (let attempt = 1; ; attempt++) {
    const out = await dockerExec(container, ["ps", "-eo", "pid,args"]);
    if (out.exitCode === 0) return out.stdout;
    if (out.exitCode !== undefined || attempt >= 3)
      throw new Error(`ps in ${container} failed (exit ${out.exitCode}${out.inspect ? `, inspect ${out.inspect}` : ""}): ${out.stderr}`);
  }
}

// Poll ps until no line matches (or one does), however long that takes on a busy machine:
// bounded by the test's own timeout, not by a time of their own. untilNoProcess returns
// the last listing and how long it took, for the diagnostics.
export async function untilNoProcess(container, pattern) {
  const started = Date.now();
  for (;;) {
    const listing = await psOf(container);
    if (!pattern.test(listing)) return { listing, elapsed: Date.now() - started };
    await sleep(50);
  }
}

export async function untilProcess(container, pattern) {
  while (!pattern.test(await psOf(container))) await sleep(30);
}

/** Whether `isSettled()` holds after one turn of the event loop: a call that waits for no
 * I/O (an abort's rejection) has settled by then, however busy the machine is. */
export async function settledWithinATurn(isSettled) {
  await new Promise((resolve) => setImmediate(resolve));
  return isSettled();
}

export function uniqueId(prefix = "t") {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

// ANVIA_TEST_CONTAINER_RUNTIME=runsc|crun runs the suites' sandboxes under that OCI runtime
// (registered in the dockerd of scripts/dockerd.sh): npm test's runtimes stage.
export const CONTAINER_RUNTIME = process.env.ANVIA_TEST_CONTAINER_RUNTIME || undefined;

export function baseOptions(extra = {}) {
  return {
    image: IMAGE,
    workspace: { type: "ephemeral" },
    network: { mode: "none" },
    ...(CONTAINER_RUNTIME ? { containerRuntime: CONTAINER_RUNTIME } : {}),
    ...extra,
  };
}

// The host's copy of the agent binary for this machine's architecture, found as
// lib/native.js finds it, and the SHA-256 (hex) of its bytes.
export function hostAgentBinary() {
  const dirs = [process.env.ANVIA_SANDBOX_AGENT_DIR, "../../prebuilds/agent", "../../build-agent"].filter(Boolean);
  const arch = process.arch === "arm64" ? "aarch64" : "x86_64";
  const path = dirs
    .map((d) => join(d.startsWith("../") ? fileURLToPath(new URL(d, import.meta.url)) : d, arch, "anvia-agent"))
    .find((f) => existsSync(f));
  if (path === undefined) throw new Error(`the host's agent binary is in none of ${dirs.join(", ")}`);
  return { path, sha256: () => createHash("sha256").update(readFileSync(path)).digest("hex") };
}
