// The dockerode path: the Engine API calls that carry out each operation, made with
// dockerode the way a careful user of it would, and in the same order as this package
// makes them (so the comparison is between clients, not between strategies):
//   createSandbox: GET container (404), GET image, POST volumes/create, POST
//     containers/create, PUT archive (the initial files, a tar built in memory), POST
//     start, GET container (published ports);
//   exec: POST exec, POST exec start (hijacked when there is stdin, with dockerode's
//     demuxStream), GET exec json;
//   writeTextFile: HEAD archive of the parent (unless it is "."), PUT archive;
//   readFile: HEAD archive of the parent (unless it is "."), GET archive, read the tar;
//   listFiles, waitForPort: one exec each (find -printf; the port probe loop);
//   startProcess: the original's launcher/wrapper exec, hijacked, marker handshake;
//   stopProcess: one exec of the stop script, then the process exec's end and its json;
//   destroy: DELETE container?force=1, DELETE volume.
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Writable } from "node:stream";
import Docker from "dockerode";

import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  KEEP_ALIVE,
  PORT_PROBE_LOOP,
  PROCESS_LAUNCHER,
  PROCESS_MARKER_PREFIX,
  PROCESS_WRAPPER,
  STOP_SCRIPT,
  WORKDIR,
  buildTar,
  containerNameFor,
  containerPath,
  firstRegularFile,
  parentSandboxPath,
  parseFindOutput,
  runtimeLabels,
} from "./common.mjs";

export const docker = new Docker();

class Collector extends Writable {
  constructor(limit, onData) {
    super();
    this.limit = limit;
    this.onData = onData;
    this.chunks = [];
    this.length = 0;
    this.truncated = false;
  }
  _write(chunk, _encoding, callback) {
    this.onData?.(chunk);
    const room = this.limit - this.length;
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.chunks.push(piece);
      this.length += piece.length;
    }
    callback();
  }
  bytes() {
    return Buffer.concat(this.chunks, this.length);
  }
}

function streamDone(stream) {
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = () => {
      if (!settled) {
        settled = true;
        resolve();
      }
    };
    stream.once("end", done);
    stream.once("close", done);
    stream.once("error", (error) => {
      if (!settled) {
        settled = true;
        reject(error);
      }
    });
  });
}

async function collectStream(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function existsArchive(container, absPath) {
  try {
    const res = await container.infoArchive({ path: absPath });
    res.resume?.();
    return true;
  } catch (error) {
    if (error.statusCode === 404) return false;
    throw error;
  }
}

export class DockerodeSandbox {
  constructor({ id, containerName, volumeName, publishedPorts }) {
    this.id = id;
    this.containerName = containerName;
    this.volumeName = volumeName;
    this.publishedPorts = publishedPorts;
    this.container = docker.getContainer(containerName);
    this.processes = new Map();
  }

  // One exec: create, start (hijacked when there is stdin), demux, inspect.
  async exec({ command, args = [], input, cwd, onStdout, maxOutputBytes = DEFAULT_MAX_OUTPUT_BYTES }) {
    const withStdin = input !== undefined;
    const exec = await this.container.exec({
      AttachStdin: withStdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      WorkingDir: containerPath(WORKDIR, cwd ?? "."),
      Cmd: [command, ...args],
    });
    const stream = await exec.start({ hijack: withStdin, stdin: withStdin, Detach: false, Tty: false });
    const stdout = new Collector(maxOutputBytes, onStdout);
    const stderr = new Collector(maxOutputBytes);
    const done = streamDone(stream);
    docker.modem.demuxStream(stream, stdout, stderr);
    if (withStdin) stream.end(input);
    await done;
    const info = await exec.inspect();
    return { status: "exited", exitCode: info.ExitCode, stdout: stdout.bytes(), stderr: stderr.bytes() };
  }

  async writeTextFile({ path: filePath, text }) {
    const normalized = path.posix.normalize(filePath);
    const parent = parentSandboxPath(normalized);
    const entries = [];
    if (parent !== "." && !(await existsArchive(this.container, containerPath(WORKDIR, parent)))) {
      const parts = parent.split("/");
      for (let i = 1; i <= parts.length; i++) entries.push({ path: parts.slice(0, i).join("/") });
    }
    entries.push({ path: normalized, data: Buffer.from(text, "utf8") });
    const res = await this.container.putArchive(buildTar(entries), { path: WORKDIR, noOverwriteDirNonDir: true });
    res?.resume?.();
  }

  async readFile({ path: filePath }) {
    const normalized = path.posix.normalize(filePath);
    const parent = parentSandboxPath(normalized);
    if (parent !== "." && !(await existsArchive(this.container, containerPath(WORKDIR, parent)))) {
      throw new Error(`no such directory: ${parent}`);
    }
    const stream = await this.container.getArchive({ path: containerPath(WORKDIR, normalized) });
    const entry = firstRegularFile(await collectStream(stream));
    if (entry.type !== "file") throw new Error(`Sandbox path is not a regular file: ${normalized}`);
    return new Uint8Array(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength).slice();
  }

  async listFiles({ path: dir = "." } = {}) {
    const normalized = path.posix.normalize(dir);
    const result = await this.exec({
      command: "find",
      args: [containerPath(WORKDIR, normalized), "-mindepth", "1", "-maxdepth", "1", "-printf", "%p\t%y\t%s\n"],
    });
    if (result.exitCode !== 0) throw new Error("Unable to list sandbox files.");
    return parseFindOutput(new TextDecoder("utf-8", { fatal: true }).decode(result.stdout), WORKDIR);
  }

  async waitForPort({ containerPort, intervalMs = 100 }) {
    const publishedPort = this.publishedPorts.find((p) => p.containerPort === containerPort);
    if (publishedPort === undefined) throw new Error(`Sandbox port is not published: ${containerPort}/tcp`);
    const interval = `${Math.floor(intervalMs / 1000)}.${String(intervalMs % 1000).padStart(3, "0")}`;
    const result = await this.exec({ command: "sh", args: ["-c", PORT_PROBE_LOOP, "anvia-port-probe", `${containerPort}`, interval] });
    if (result.exitCode !== 0) throw new Error(`Waiting for sandbox port failed: ${containerPort}`);
    return { ...publishedPort };
  }

  async startProcess({ command, args = [], cwd }) {
    const id = randomUUID();
    const marker = `${PROCESS_MARKER_PREFIX}:${id}`;
    const exec = await this.container.exec({
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      WorkingDir: containerPath(WORKDIR, cwd ?? "."),
      Cmd: ["sh", "-c", PROCESS_LAUNCHER, "anvia-process-launcher", PROCESS_WRAPPER, "anvia-managed-process", marker, command, ...args],
    });
    const stream = await exec.start({ hijack: true, stdin: true, Detach: false, Tty: false });
    const markerStart = Buffer.from(`\x1e${marker}:`);
    const record = { id, exec, stream, info: { id, command, args: [...args], status: "running", startedAt: new Date().toISOString() } };
    record.closed = streamDone(stream).catch(() => undefined);
    let pending = Buffer.alloc(0);
    let seen = false;
    const started = new Promise((resolve, reject) => {
      const stdout = new Collector(DEFAULT_MAX_OUTPUT_BYTES, (chunk) => {
        if (seen) return;
        pending = Buffer.concat([pending, chunk]);
        const start = pending.indexOf(markerStart);
        if (start < 0) return;
        const end = pending.indexOf(0x1e, start + markerStart.length);
        if (end < 0) return;
        const [pid, pgid, ...rest] = pending.subarray(start + markerStart.length, end).toString("utf8").split(":");
        if (!(Number(pid) > 0) || !(Number(pgid) > 0) || rest.length > 0) {
          reject(new Error("Sandbox process returned invalid process IDs."));
          return;
        }
        seen = true;
        record.processGroupId = Number(pgid);
        stream.write("start\n");
        resolve();
      });
      docker.modem.demuxStream(stream, stdout, new Collector(DEFAULT_MAX_OUTPUT_BYTES));
      record.closed.then(() => reject(new Error(`Sandbox process exited before startup completed: ${id}`)));
    });
    let timeout;
    try {
      await Promise.race([
        started,
        new Promise((_, reject) => {
          timeout = setTimeout(() => reject(new Error("Starting sandbox process timed out.")), DEFAULT_COMMAND_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timeout);
    }
    this.processes.set(id, record);
    return { ...record.info };
  }

  async stopProcess({ processId, gracePeriodMs = 5000 }) {
    const record = this.processes.get(processId);
    if (record === undefined) throw new Error(`Unknown sandbox process: ${processId}`);
    const result = await this.exec({ command: "sh", args: ["-c", STOP_SCRIPT, "anvia-process-stop", `${record.processGroupId}`, `${gracePeriodMs}`] });
    if (result.exitCode !== 0) throw new Error(`Sandbox process did not stop: ${processId}`);
    let timer;
    const closed = await Promise.race([
      record.closed.then(() => true),
      new Promise((resolve) => {
        timer = setTimeout(() => resolve(false), 1000);
      }),
    ]);
    clearTimeout(timer);
    if (!closed) record.stream.destroy();
    const info = await record.exec.inspect();
    record.info.status = "stopped";
    record.info.exitCode = info.ExitCode ?? 137;
    record.info.endedAt = new Date().toISOString();
    this.processes.delete(processId);
    return { ...record.info };
  }

  async destroy() {
    for (const record of this.processes.values()) record.stream.destroy();
    this.processes.clear();
    await this.container.remove({ force: true });
    await docker.getVolume(this.volumeName).remove();
  }
}

export async function createSandbox({ image, id, ports, files = {}, maxProcesses = 4 }) {
  const containerName = containerNameFor(id);
  const volumeName = `${containerName}-workspace-${randomUUID()}`;
  const container = docker.getContainer(containerName);
  try {
    await container.inspect();
    throw new Error(`A Docker container already exists for sandbox: ${containerName}`);
  } catch (error) {
    if (error.statusCode !== 404) throw error;
  }
  await docker.getImage(image).inspect();
  let volumeCreated = false;
  let containerCreated = false;
  try {
    await docker.createVolume({ Name: volumeName, Labels: { "anvia.sandbox.id": id } });
    volumeCreated = true;
    const body = {
      name: containerName,
      Image: image,
      Cmd: ["sh", "-c", KEEP_ALIVE],
      WorkingDir: WORKDIR,
      Labels: runtimeLabels({ id, volumeName, networkMode: ports === undefined ? "none" : "bridge", maxProcesses }),
      Env: [],
      HostConfig: {
        Mounts: [{ Type: "volume", Source: volumeName, Target: WORKDIR }],
        NetworkMode: ports === undefined ? "none" : "bridge",
        SecurityOpt: ["no-new-privileges:true"],
        CapDrop: ["ALL"],
      },
    };
    if (ports !== undefined && ports.length > 0) {
      body.ExposedPorts = {};
      body.HostConfig.PortBindings = {};
      for (const port of ports) {
        body.ExposedPorts[`${port}/tcp`] = {};
        body.HostConfig.PortBindings[`${port}/tcp`] = [{ HostIp: "127.0.0.1", HostPort: "" }];
      }
    }
    await docker.createContainer(body);
    containerCreated = true;
    const fileEntries = Object.entries(files);
    if (fileEntries.length > 0) {
      const entries = [];
      const dirs = new Set();
      for (const [filePath, text] of fileEntries) {
        const parts = path.posix.dirname(filePath).split("/").filter((p) => p !== ".");
        for (let i = 1; i <= parts.length; i++) {
          const dir = parts.slice(0, i).join("/");
          if (!dirs.has(dir)) {
            dirs.add(dir);
            entries.push({ path: dir });
          }
        }
        entries.push({ path: filePath, data: Buffer.from(text, "utf8") });
      }
      const res = await container.putArchive(buildTar(entries), { path: WORKDIR, noOverwriteDirNonDir: true });
      res?.resume?.();
    }
    await container.start();
    let publishedPorts = [];
    if (ports !== undefined && ports.length > 0) {
      const inspection = await container.inspect();
      const mappings = inspection.NetworkSettings?.Ports ?? {};
      publishedPorts = ports.map((containerPort) => {
        const entry = mappings[`${containerPort}/tcp`]?.find((candidate) => candidate.HostIp === "127.0.0.1");
        return { containerPort, host: "127.0.0.1", hostPort: Number(entry?.HostPort), protocol: "tcp" };
      });
    }
    return new DockerodeSandbox({ id, containerName, volumeName, publishedPorts });
  } catch (error) {
    if (containerCreated) await container.remove({ force: true }).catch(() => undefined);
    if (volumeCreated) await docker.getVolume(volumeName).remove().catch(() => undefined);
    throw error;
  }
}

// A handle on a sandbox someone else created (the shared bench sandbox).
export function attach({ id, containerName, volumeName, publishedPorts }) {
  return new DockerodeSandbox({ id, containerName, volumeName, publishedPorts });
}
