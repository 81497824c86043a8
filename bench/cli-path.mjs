// The CLI path: the original package's own docker invocations for each operation,
// spawned as the original spawns them (child_process.spawn of `docker` with stdio pipes,
// output collected up to maxOutputBytes, input written to stdin then closed).
//
// The argument lists and the order of the steps are the seed's (shared/seeds/000_...txt):
// createSandbox (container inspect, image inspect, volume create, createRunArgs' `docker
// run -d`, container inspect for published ports, then applyInitialContent's writes),
// exec (execArgs), writeTextFile (mkdir -p exec unless the parent is ".", a host temp file,
// `docker cp`), readFile (`docker cp` to a host temp dir, lstat/realpath checks, read),
// listFiles (find -printf), waitForPort (the /proc/net/tcp probe), the process manager's
// launcher/wrapper exec with its marker handshake and its kill -0 / kill -TERM group
// execs, and destroy (`docker rm -f`, `docker volume rm`). runDockerCli itself lives in a
// chunk the seed does not show; this is its observable contract.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { lstat, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_FILE_BYTES,
  DEFAULT_MAX_OUTPUT_BYTES,
  PORT_PROBE,
  PROCESS_LAUNCHER,
  PROCESS_MARKER_PREFIX,
  PROCESS_WRAPPER,
  WORKDIR,
  containerNameFor,
  containerPath,
  parentSandboxPath,
  parseFindOutput,
  runtimeLabels,
  sleep,
} from "./common.mjs";

export function runDockerCli(args, options = {}) {
  const dockerPath = options.dockerPath ?? "docker";
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(dockerPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    const out = { chunks: [], length: 0, truncated: false };
    const err = { chunks: [], length: 0, truncated: false };
    const collect = (sink, chunk) => {
      const room = maxOutputBytes - sink.length;
      if (chunk.length > room) sink.truncated = true;
      if (room > 0) {
        const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
        sink.chunks.push(piece);
        sink.length += piece.length;
      }
    };
    let timedOut = false;
    let timer;
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        timedOut = true;
        child.kill("SIGKILL");
      }, options.timeoutMs);
    }
    const onAbort = () => child.kill("SIGKILL");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk) => {
      collect(out, chunk);
      options.onStdout?.(chunk);
    });
    child.stderr.on("data", (chunk) => {
      collect(err, chunk);
      options.onStderr?.(chunk);
    });
    child.stdin.on("error", () => undefined); // EPIPE when the command does not read
    child.on("error", (error) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({
        exitCode: code ?? 1,
        stdout: Buffer.concat(out.chunks, out.length),
        stderr: Buffer.concat(err.chunks, err.length),
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        timedOut,
        durationMs: performance.now() - started,
      });
    });
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

export async function assertDockerCli(args, options) {
  const result = await runDockerCli(args, options);
  if (result.exitCode !== 0) {
    throw new Error(`docker ${args[0]} failed (${result.exitCode}): ${result.stderr.toString("utf8").trim()}`);
  }
  return result;
}

// The original's createRunArgs for an ephemeral workspace, bridge network with published
// ports (or none), default security (no-new-privileges, cap-drop ALL).
export function createRunArgs({ id, containerName, image, volumeName, ports, maxProcesses }) {
  const labels = runtimeLabels({ id, volumeName, networkMode: ports === undefined ? "none" : "bridge", maxProcesses });
  const args = ["run", "-d", "--name", containerName, "--mount", `type=volume,src=${volumeName},dst=${WORKDIR}`, "-w", WORKDIR];
  for (const [key, value] of Object.entries(labels)) args.push("--label", `${key}=${value}`);
  if (ports === undefined) args.push("--network", "none");
  else for (const port of ports) args.push("--publish", `127.0.0.1::${port}/tcp`);
  args.push("--security-opt", "no-new-privileges:true");
  args.push("--cap-drop", "ALL");
  args.push(image, "sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done");
  return args;
}

function toExecResult(result) {
  return result.timedOut
    ? { status: "timed_out", stdout: result.stdout, stderr: result.stderr }
    : { status: "exited", exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

// A handle on one sandbox as the original's runtime saw it.
export class CliSandbox {
  constructor({ id, containerName, volumeName, ownsVolume, publishedPorts, maxProcesses = 4, dockerPath = "docker" }) {
    this.id = id;
    this.containerName = containerName;
    this.volumeName = volumeName;
    this.ownsVolume = ownsVolume;
    this.publishedPorts = publishedPorts;
    this.dockerPath = dockerPath;
    this.processes = new CliProcessManager({ containerName, dockerPath, maxProcesses });
  }

  execArgs(options) {
    const args = ["exec"];
    if (options.input !== undefined) args.push("-i");
    args.push("-w", containerPath(WORKDIR, options.cwd ?? "."));
    for (const [key, value] of Object.entries(options.env ?? {})) args.push("-e", `${key}=${value}`);
    args.push(this.containerName, options.command, ...(options.args ?? []));
    return args;
  }

  async exec(options) {
    const result = await runDockerCli(this.execArgs(options), {
      dockerPath: this.dockerPath,
      timeoutMs: options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
      input: options.input,
      onStdout: options.onStdout,
      onStderr: options.onStderr,
    });
    return toExecResult(result);
  }

  async mkdir(directory) {
    if (directory === ".") return;
    const result = await this.exec({ command: "mkdir", args: ["-p", containerPath(WORKDIR, directory)] });
    if (result.status !== "exited" || result.exitCode !== 0) throw new Error("Unable to create sandbox directory.");
  }

  async writeTextFile({ path: filePath, text }) {
    const normalized = path.posix.normalize(filePath);
    const data = new TextEncoder().encode(text);
    if (data.byteLength > DEFAULT_MAX_FILE_BYTES) throw new Error("file too large");
    await this.mkdir(parentSandboxPath(normalized));
    const tempDir = await mkdtemp(path.join(os.tmpdir(), "anvia-sandbox-write-"));
    const source = path.join(tempDir, path.basename(normalized));
    try {
      await writeFile(source, data);
      await assertDockerCli(["cp", source, `${this.containerName}:${containerPath(WORKDIR, normalized)}`], {
        dockerPath: this.dockerPath,
      });
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  }

  async readFile({ path: filePath }) {
    const normalized = path.posix.normalize(filePath);
    const tempDir = await mkdtemp(path.join(os.tmpdir(), "anvia-sandbox-read-"));
    const target = path.join(tempDir, path.basename(normalized));
    try {
      await assertDockerCli(["cp", `${this.containerName}:${containerPath(WORKDIR, normalized)}`, target], {
        dockerPath: this.dockerPath,
      });
      // assertCopiedRegularFile
      const metadata = await lstat(target);
      if (metadata.isSymbolicLink() || !metadata.isFile()) throw new Error(`Sandbox path is not a regular file: ${normalized}`);
      const resolvedTarget = await realpath(target);
      const relativeTarget = path.relative(tempDir, resolvedTarget);
      if (relativeTarget === "" || relativeTarget === ".." || relativeTarget.startsWith(`..${path.sep}`) || path.isAbsolute(relativeTarget)) {
        throw new Error(`Sandbox file escaped its temporary read boundary: ${normalized}`);
      }
      const bytes = await readFile(target);
      if (bytes.byteLength > DEFAULT_MAX_FILE_BYTES) throw new Error("file too large");
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength).slice();
    } finally {
      await rm(tempDir, { recursive: true, force: true });
    }
  }

  async listFiles({ path: dir = "." } = {}) {
    const normalized = path.posix.normalize(dir);
    const result = await this.exec({
      command: "find",
      args: [containerPath(WORKDIR, normalized), "-mindepth", "1", "-maxdepth", "1", "-printf", "%p\t%y\t%s\n"],
    });
    if (result.status !== "exited" || result.exitCode !== 0) throw new Error("Unable to list sandbox files.");
    return parseFindOutput(new TextDecoder("utf-8", { fatal: true }).decode(result.stdout), WORKDIR);
  }

  async waitForPort({ containerPort, timeoutMs = 30_000, intervalMs = 100 }) {
    const publishedPort = this.publishedPorts.find((p) => p.containerPort === containerPort);
    if (publishedPort === undefined) throw new Error(`Sandbox port is not published: ${containerPort}/tcp`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = await this.exec({
        command: "sh",
        args: ["-c", PORT_PROBE, "anvia-port-probe", `${containerPort}`],
        timeoutMs: Math.min(5000, timeoutMs),
      });
      if (result.status === "exited" && result.exitCode === 0) return { ...publishedPort };
      if (Date.now() >= deadline) throw new Error(`Waiting for sandbox port timed out: ${containerPort}`);
      await sleep(Math.min(intervalMs, deadline - Date.now()));
    }
  }

  startProcess(options) {
    return this.processes.start(options);
  }

  stopProcess({ processId, gracePeriodMs = 5000 }) {
    return this.processes.stop(processId, gracePeriodMs);
  }

  async destroy() {
    await this.processes.dispose();
    await removeContainer(this.dockerPath, this.containerName);
    if (this.ownsVolume) await removeVolume(this.dockerPath, this.volumeName);
  }
}

async function removeContainer(dockerPath, containerName) {
  const result = await runDockerCli(["rm", "-f", containerName], { dockerPath });
  if (result.exitCode === 0 || result.stderr.toString().toLowerCase().includes("no such")) return;
  throw new Error(`Unable to remove Docker sandbox: ${result.stderr}`);
}

async function removeVolume(dockerPath, volumeName) {
  const result = await runDockerCli(["volume", "rm", volumeName], { dockerPath });
  if (result.exitCode === 0 || result.stderr.toString().toLowerCase().includes("no such")) return;
  throw new Error(`Unable to remove Docker sandbox volume: ${result.stderr}`);
}

async function inspectPublishedPorts(dockerPath, containerName, ports) {
  if (ports.length === 0) return [];
  const result = await runDockerCli(["container", "inspect", containerName], { dockerPath });
  if (result.exitCode !== 0) throw new Error("Unable to inspect Docker sandbox.");
  const [inspection] = JSON.parse(result.stdout.toString("utf8"));
  const mappings = inspection.NetworkSettings?.Ports ?? {};
  return ports.map((containerPort) => {
    const entry = mappings[`${containerPort}/tcp`]?.find((candidate) => candidate.HostIp === "127.0.0.1");
    const hostPort = Number(entry?.HostPort);
    if (!Number.isInteger(hostPort) || hostPort < 1) throw new Error(`Docker did not publish port: ${containerPort}`);
    return { containerPort, host: "127.0.0.1", hostPort, protocol: "tcp" };
  });
}

// The original's createSandbox for { workspace: ephemeral, network: bridge + ports | none,
// files } (no directories, env, user, resources).
export async function createSandbox({ image, id, ports, files = {}, maxProcesses = 4, dockerPath = "docker" }) {
  const containerName = containerNameFor(id);
  const volumeName = `${containerName}-workspace-${randomUUID()}`;
  // assertContainerDoesNotExist
  const existing = await runDockerCli(["container", "inspect", containerName], { dockerPath, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES });
  if (existing.exitCode === 0) throw new Error(`A Docker container already exists for sandbox: ${containerName}`);
  if (!existing.stderr.toString().toLowerCase().includes("no such")) throw new Error("Unable to check whether the Docker sandbox already exists.");
  // assertImageExists
  const imageResult = await runDockerCli(["image", "inspect", image], { dockerPath });
  if (imageResult.exitCode !== 0) throw new Error(`Docker image is not available locally: ${image}`);
  let containerCreated = false;
  let volumeCreated = false;
  try {
    await assertDockerCli(["volume", "create", "--label", `anvia.sandbox.id=${id}`, volumeName], { dockerPath });
    volumeCreated = true;
    await assertDockerCli(createRunArgs({ id, containerName, image, volumeName, ports, maxProcesses }), {
      dockerPath,
      timeoutMs: DEFAULT_COMMAND_TIMEOUT_MS,
    });
    containerCreated = true;
    const publishedPorts = await inspectPublishedPorts(dockerPath, containerName, ports ?? []);
    const sandbox = new CliSandbox({ id, containerName, volumeName, ownsVolume: true, publishedPorts, maxProcesses, dockerPath });
    // applyInitialContent: one writeTextFile per file, in order
    for (const [filePath, content] of Object.entries(files)) await sandbox.writeTextFile({ path: filePath, text: content });
    return sandbox;
  } catch (error) {
    if (containerCreated) await removeContainer(dockerPath, containerName).catch(() => undefined);
    if (volumeCreated) await removeVolume(dockerPath, volumeName).catch(() => undefined);
    throw error;
  }
}

// The original's DockerProcessManager, reduced to start/stop/dispose with its exact
// docker invocations and timing rules (marker handshake, kill -0 checks, TERM, the
// 50 ms polling of waitForRecordExit, SIGKILL of the CLI child once the group is gone).
class CliProcessManager {
  constructor({ containerName, dockerPath, maxProcesses }) {
    this.containerName = containerName;
    this.dockerPath = dockerPath;
    this.maxProcesses = maxProcesses;
    this.records = new Map();
  }

  async start({ command, args = [], cwd, env = {} }) {
    await this.pruneCompletedRecords();
    if (this.records.size >= this.maxProcesses) {
      throw new Error(`Sandbox process limit reached (${this.records.size} >= ${this.maxProcesses}).`);
    }
    const id = randomUUID();
    const marker = `${PROCESS_MARKER_PREFIX}:${id}`;
    const dockerArgs = ["exec", "-i", "-w", containerPath(WORKDIR, cwd ?? ".")];
    for (const [key, value] of Object.entries(env)) dockerArgs.push("-e", `${key}=${value}`);
    dockerArgs.push(
      this.containerName,
      "sh",
      "-c",
      PROCESS_LAUNCHER,
      "anvia-process-launcher",
      PROCESS_WRAPPER,
      "anvia-managed-process",
      marker,
      command,
      ...args,
    );
    const child = spawn(this.dockerPath, dockerArgs, { stdio: ["pipe", "pipe", "pipe"] });
    const record = {
      info: { id, command, args: [...args], status: "running", startedAt: new Date().toISOString() },
      child,
      markerStart: Buffer.from(`\x1e${marker}:`),
      markerBuffer: Buffer.alloc(0),
      markerSeen: false,
      stdout: [],
      stderr: [],
      processGroupId: undefined,
      spawnFailed: false,
      stopRequested: false,
    };
    record.started = new Promise((resolve, reject) => {
      record.resolveStarted = resolve;
      record.rejectStarted = reject;
    });
    record.started.catch(() => undefined);
    record.closed = new Promise((resolve) => {
      record.resolveClosed = resolve;
    });
    this.records.set(id, record);
    child.stdin.on("error", () => undefined);
    child.stdout.on("data", (chunk) => this.acceptStdout(record, chunk));
    child.stderr.on("data", (chunk) => record.stderr.push(chunk));
    child.on("error", (error) => {
      record.spawnFailed = true;
      record.rejectStarted(error);
    });
    child.on("close", (code) => {
      if (record.info.status === "running") record.info.status = record.stopRequested ? "stopped" : "exited";
      record.info.exitCode = code ?? 1;
      record.info.endedAt = new Date().toISOString();
      record.rejectStarted(new Error(`Sandbox process exited before startup completed: ${id}`));
      record.resolveClosed();
    });
    let timeout;
    try {
      await Promise.race([
        record.started,
        new Promise((_, reject) => {
          timeout = setTimeout(() => reject(new Error("Starting sandbox process timed out.")), DEFAULT_COMMAND_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timeout);
    }
    return { ...record.info };
  }

  acceptStdout(record, chunk) {
    if (record.markerSeen) {
      record.stdout.push(chunk);
      return;
    }
    record.markerBuffer = Buffer.concat([record.markerBuffer, chunk]);
    const start = record.markerBuffer.indexOf(record.markerStart);
    if (start < 0) return;
    const end = record.markerBuffer.indexOf(0x1e, start + record.markerStart.length);
    if (end < 0) return;
    const rawPids = record.markerBuffer.subarray(start + record.markerStart.length, end).toString("utf8").split(":");
    const supervisorPid = Number(rawPids[0]);
    const processGroupId = Number(rawPids[1]);
    if (!(supervisorPid > 0) || !(processGroupId > 0) || rawPids.length !== 2) {
      record.rejectStarted(new Error("Sandbox process returned invalid process IDs."));
      return;
    }
    if (start > 0) record.stdout.push(record.markerBuffer.subarray(0, start));
    if (end + 1 < record.markerBuffer.length) record.stdout.push(record.markerBuffer.subarray(end + 1));
    record.markerBuffer = Buffer.alloc(0);
    record.markerSeen = true;
    record.supervisorPid = supervisorPid;
    record.processGroupId = processGroupId;
    record.child.stdin.write("start\n");
    record.resolveStarted();
  }

  async stop(processId, gracePeriodMs = 5000) {
    const record = this.records.get(processId);
    if (record === undefined) throw new Error(`Unknown sandbox process: ${processId}`);
    if (!(await this.terminateRecord(record, gracePeriodMs))) throw new Error(`Sandbox process did not stop: ${processId}`);
    return { ...record.info };
  }

  async dispose() {
    await Promise.all([...this.records.values()].map((record) => this.terminateRecord(record, 1000)));
  }

  async terminateRecord(record, gracePeriodMs) {
    record.stopRequested = true;
    if (record.processGroupId === undefined) {
      if (record.info.status === "running") await waitForPromise(record.closed, Math.min(gracePeriodMs, 250));
      if (record.processGroupId === undefined) return record.info.status !== "running";
    }
    if (!(await this.isProcessGroupRunning(record))) return this.finishAfterGroupExit(record);
    await this.signal(record, "TERM");
    if (await this.waitForRecordExit(record, gracePeriodMs)) return true;
    await this.signal(record, "KILL");
    if (await this.waitForRecordExit(record, 1000)) return true;
    return false;
  }

  async waitForRecordExit(record, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!(await this.isProcessGroupRunning(record))) return this.finishAfterGroupExit(record);
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) return false;
      const intervalMs = Math.min(50, remainingMs);
      if (record.info.status === "running") await waitForPromise(record.closed, intervalMs);
      else await sleep(intervalMs);
    }
  }

  async finishAfterGroupExit(record) {
    if (record.info.status !== "running") return true;
    record.child.kill("SIGKILL");
    return waitForPromise(record.closed, 1000);
  }

  async isProcessGroupRunning(record) {
    if (record.processGroupId === undefined) return false;
    const result = await runDockerCli(
      ["exec", this.containerName, "sh", "-c", 'kill -0 "-$1" 2>/dev/null', "anvia-process-group-check", `${record.processGroupId}`],
      { dockerPath: this.dockerPath, timeoutMs: 5000, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES },
    );
    return result.exitCode === 0;
  }

  async signal(record, dockerSignal) {
    if (record.processGroupId === undefined) return;
    const result = await runDockerCli(
      [
        "exec",
        this.containerName,
        "sh",
        "-c",
        'kill "-$2" "-$1" 2>/dev/null || ! kill -0 "-$1" 2>/dev/null',
        "anvia-process-signal",
        `${record.processGroupId}`,
        dockerSignal,
      ],
      { dockerPath: this.dockerPath, timeoutMs: 5000, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES },
    );
    if (result.exitCode !== 0) throw new Error(`Unable to stop sandbox process: ${record.info.id}`);
  }

  async pruneCompletedRecords() {
    for (const [id, record] of this.records) {
      if (this.records.size < this.maxProcesses) return;
      const cleanupConfirmed = record.processGroupId === undefined ? record.spawnFailed : !(await this.isProcessGroupRunning(record));
      if (record.info.status !== "running" && cleanupConfirmed) this.records.delete(id);
    }
  }
}

async function waitForPromise(promise, timeoutMs) {
  let timeout;
  try {
    return await Promise.race([
      promise.then(() => true),
      new Promise((resolve) => {
        timeout = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timeout);
  }
}
