// A scriptable, fault-injecting Docker Engine API server for the fake-engine suites.
//
// It listens on a unix socket in a temp dir and speaks just enough HTTP/1.1 (parsed by
// hand over `net`, so a script controls every byte: status lines, framing, where the
// connection is cut, how writes are split) to serve the happy path of every request the
// library makes: /_ping with an API-Version header, container/image/volume inspect and
// create, start/stop/delete, exec create/start (the `Connection: Upgrade` hijack with
// multiplexed frames and stdin read from the socket)/inspect, archive GET/HEAD (path stat
// header and a tar built by hand) and PUT, the images/create progress stream, and an image
// build (POST /build) that streams a step per Dockerfile instruction.
//
// Routes match on the path after the `/v<major>.<minor>` prefix. A test overrides one with
// `fake.route(method, pattern, script)`; the script is either a handler
// `(req, res, ctx) => ...` or a plain description:
//   { status, json, headers }            a JSON reply with Content-Length
//   { status, body, headers }            a text/bytes reply with Content-Length
//   { raw, split, delayMs, then }         raw bytes (string, Buffer or array of them),
//                                        written `split` bytes at a time with `delayMs`
//                                        between writes, then "keep" (keep-alive), "end"
//                                        (FIN), "destroy" (cut) or "hang" (do nothing)
//   { hang: true }                        never answer
//   { destroy: true }                     cut the connection at once
import net from "node:net";
import { EventEmitter } from "node:events";
import { mkdtempSync, rmSync, existsSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import assert from "node:assert/strict";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";

export const DEFAULT_API_VERSION = "1.41";

const STATUS_TEXT = {
  101: "UPGRADED",
  200: "OK",
  201: "Created",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  404: "Not Found",
  409: "Conflict",
  500: "Internal Server Error",
};

// ---- byte helpers ----------------------------------------------------------------------

export function toBuffer(x) {
  if (Buffer.isBuffer(x)) return x;
  if (x instanceof Uint8Array) return Buffer.from(x.buffer, x.byteOffset, x.byteLength);
  if (Array.isArray(x)) return Buffer.concat(x.map(toBuffer));
  return Buffer.from(String(x), "utf8");
}

/** A multiplexed exec frame: stream byte, three zero bytes, big-endian length, payload. */
export function frame(stream, payload) {
  const body = toBuffer(payload);
  return Buffer.concat([frameHeader(stream, body.length), body]);
}

/** Just a frame header, announcing `length` bytes (which may be a lie). */
export function frameHeader(stream, length) {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(length >>> 0, 4);
  return h;
}

/** The head of a reply: status line and headers, ending with the blank line. */
export function head(status, headers = {}, reason = STATUS_TEXT[status] ?? "Status") {
  let s = `HTTP/1.1 ${status} ${reason}\r\n`;
  for (const [k, v] of Object.entries(headers)) {
    for (const one of Array.isArray(v) ? v : [v]) s += `${k}: ${one}\r\n`;
  }
  return Buffer.from(s + "\r\n", "latin1");
}

/** A whole reply with Content-Length. */
export function reply(status, body = "", headers = {}) {
  const b = toBuffer(body);
  return Buffer.concat([head(status, { ...headers, "Content-Length": b.length }), b]);
}

/** A whole JSON reply with Content-Length. */
export function jsonReply(status, obj, headers = {}) {
  return reply(status, JSON.stringify(obj), { "Content-Type": "application/json", ...headers });
}

/** A body in chunked transfer encoding, cut into chunks of `size` bytes (with the final 0 chunk unless `last` is false). */
export function chunked(body, size = Infinity, last = true) {
  const b = toBuffer(body);
  const parts = [];
  for (let i = 0; i < b.length; i += size === Infinity ? b.length : size) {
    const piece = b.subarray(i, Math.min(b.length, i + (size === Infinity ? b.length : size)));
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, "latin1"), piece, Buffer.from("\r\n"));
  }
  if (last) parts.push(Buffer.from("0\r\n\r\n"));
  return Buffer.concat(parts);
}

// ---- tar, by hand ------------------------------------------------------------------------

function octal(n, width) {
  // width includes the trailing NUL.
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

/**
 * One ustar entry: a 512-byte header and the data padded to 512. `size` may lie about the
 * data's length (the header announces `size`, the data written is `content`).
 */
export function tarEntry({ name, content = "", type = "0", mode = 0o644, size, linkname = "", mtime = 1700000000, pad = true }) {
  const data = toBuffer(content);
  const announced = size ?? data.length;
  const h = Buffer.alloc(512);
  let prefix = "";
  let nm = name;
  if (Buffer.byteLength(nm) > 100) {
    const cut = nm.lastIndexOf("/", 154);
    prefix = nm.slice(0, cut);
    nm = nm.slice(cut + 1);
  }
  h.write(nm, 0, 100, "utf8");
  h.write(octal(mode, 8), 100, "latin1");
  h.write(octal(0, 8), 108, "latin1");
  h.write(octal(0, 8), 116, "latin1");
  // 11 octal digits hold up to 8 GiB - 1.
  h.write(octal(announced, 12), 124, "latin1");
  h.write(octal(mtime, 12), 136, "latin1");
  h.write("        ", 148, "latin1");
  h.write(type, 156, "latin1");
  h.write(linkname, 157, 100, "utf8");
  h.write("ustar\0", 257, "latin1");
  h.write("00", 263, "latin1");
  h.write("root", 265, "latin1");
  h.write("root", 297, "latin1");
  h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "latin1");
  const padding = pad ? (512 - (data.length % 512)) % 512 : 0;
  return Buffer.concat([h, data, Buffer.alloc(padding)]);
}

/** The end-of-archive marker: two zero blocks. */
export function tarEnd() {
  return Buffer.alloc(1024);
}

export function tarOf(entries) {
  return Buffer.concat([...entries.map(tarEntry), tarEnd()]);
}

/** Reads the entries of a (small, ustar) archive: for recording uploads. */
export function parseTar(buf) {
  const out = [];
  let off = 0;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const str = (a, b) => h.subarray(a, b).toString("utf8").replace(/\0.*$/s, "");
    let name = str(0, 100);
    const prefix = str(345, 500);
    if (prefix) name = `${prefix}/${name}`;
    const size = parseInt(str(124, 136).trim() || "0", 8);
    const type = str(156, 157) || "0";
    const mode = parseInt(str(100, 108).trim() || "0", 8);
    const uid = parseInt(str(108, 116).trim() || "0", 8);
    const gid = parseInt(str(116, 124).trim() || "0", 8);
    off += 512;
    const content = buf.subarray(off, off + size);
    off += Math.ceil(size / 512) * 512;
    if (type === "x" || type === "g") continue; // pax records: names here are short
    out.push({ name, type, size, mode, uid, gid, content: Buffer.from(content) });
  }
  return out;
}

// ---- path stat header ---------------------------------------------------------------------

export const GO_MODE_DIR = 2 ** 31;
export const GO_MODE_SYMLINK = 2 ** 27;

/** The X-Docker-Container-Path-Stat header value: base64 of the JSON stat. */
export function pathStat({ name, size = 0, mode = 0o644, mtime = "2024-01-01T00:00:00Z", linkTarget = "" }) {
  return Buffer.from(JSON.stringify({ name, size, mode, mtime, linkTarget })).toString("base64");
}

// ---- requests and responses ----------------------------------------------------------------

class FakeResponse {
  constructor(conn, req) {
    this.conn = conn;
    this.req = req;
    this.socket = conn.socket;
    this.finished = false;
  }

  get destroyed() {
    return this.socket.destroyed;
  }

  /** Marks the exchange over; the connection keeps parsing requests (keep-alive). */
  done() {
    if (this.finished) return;
    this.finished = true;
    this.conn.exchangeDone();
  }

  /** Writes bytes, resolving when the socket took them (back-pressure respected). */
  write(bytes) {
    const b = toBuffer(bytes);
    if (this.socket.destroyed || this.socket.writableEnded) return Promise.resolve(false);
    return new Promise((resolve) => {
      const ok = this.socket.write(b, (err) => {
        if (err) resolve(false);
      });
      if (ok) resolve(true);
      else {
        const onDrain = () => {
          cleanup();
          resolve(true);
        };
        const onGone = () => {
          cleanup();
          resolve(false);
        };
        const cleanup = () => {
          this.socket.off("drain", onDrain);
          this.socket.off("close", onGone);
        };
        this.socket.on("drain", onDrain);
        this.socket.on("close", onGone);
      }
    });
  }

  /** Writes `bytes` `split` at a time, waiting `delayMs` between writes. */
  async writeSplit(bytes, split = Infinity, delayMs = 0) {
    const b = toBuffer(bytes);
    if (split === Infinity || split >= b.length) {
      return this.write(b);
    }
    for (let i = 0; i < b.length; i += split) {
      if (!(await this.write(b.subarray(i, i + split)))) return false;
      if (delayMs > 0) await sleep(delayMs);
      else await new Promise((r) => setImmediate(r));
    }
    return true;
  }

  send(status, body = "", headers = {}) {
    this.write(reply(status, body, headers));
    this.done();
  }

  json(status, obj, headers = {}) {
    this.write(jsonReply(status, obj, headers));
    this.done();
  }

  /** A reply without a body (HEAD, 204). */
  empty(status, headers = {}) {
    this.write(head(status, { ...headers, "Content-Length": headers["Content-Length"] ?? 0 }));
    this.done();
  }

  /** Raw bytes, then "keep" | "end" | "destroy" | "hang". */
  async raw(bytes, { split = Infinity, delayMs = 0, then = "keep" } = {}) {
    await this.writeSplit(bytes, split, delayMs);
    this.after(then);
  }

  after(then) {
    if (then === "keep") this.done();
    else if (then === "end") this.end();
    else if (then === "destroy") this.destroy();
    // "hang": nothing.
  }

  end() {
    this.finished = true;
    if (!this.socket.destroyed) this.socket.end();
  }

  destroy() {
    this.finished = true;
    this.socket.destroy();
  }

  hang() {
    this.finished = true;
  }
}

class Connection {
  constructor(engine, socket) {
    this.engine = engine;
    this.socket = socket;
    this.buf = Buffer.alloc(0);
    this.busy = false;
    this.upgraded = null; // the stdin emitter once the connection is hijacked
    socket.on("data", (chunk) => this.onData(chunk));
    socket.on("end", () => this.onEnd());
    socket.on("error", () => {});
  }

  onData(chunk) {
    if (this.upgraded) {
      this.upgraded.received.push(chunk);
      this.upgraded.emit("data", chunk);
      return;
    }
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    this.pump();
  }

  onEnd() {
    if (this.upgraded) {
      this.upgraded.ended = true;
      this.upgraded.emit("end");
      return;
    }
    // A client that half-closes an idle keep-alive connection: close our side too.
    if (!this.busy && !this.socket.destroyed) this.socket.end();
  }

  exchangeDone() {
    this.busy = false;
    setImmediate(() => this.pump());
  }

  pump() {
    if (this.busy || this.upgraded || this.socket.destroyed) return;
    const end = this.buf.indexOf("\r\n\r\n");
    if (end < 0) return;
    const headText = this.buf.subarray(0, end).toString("latin1");
    const lines = headText.split("\r\n");
    const [method, target, version] = lines[0].split(" ");
    const headers = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const k = line.slice(0, colon).trim().toLowerCase();
      const v = line.slice(colon + 1).trim();
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    }
    let rest = this.buf.subarray(end + 4);
    let body;
    if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
      const parsed = parseChunked(rest);
      if (parsed === null) return; // wait for more
      body = parsed.body;
      rest = rest.subarray(parsed.consumed);
    } else {
      const len = Number(headers["content-length"] ?? 0);
      if (rest.length < len) return;
      body = Buffer.from(rest.subarray(0, len));
      rest = rest.subarray(len);
    }
    this.buf = rest;
    const url = new URL(target, "http://localhost");
    const fullPath = url.pathname;
    const m = /^\/v(\d+\.\d+)(\/.*)$/.exec(fullPath);
    const req = {
      method,
      target,
      httpVersion: version,
      fullPath,
      apiVersion: m ? m[1] : null,
      path: decodeURIComponent(m ? m[2] : fullPath),
      query: Object.fromEntries(url.searchParams),
      headers,
      body,
      upgrade: /upgrade/i.test(headers.connection ?? "") && headers.upgrade !== undefined,
      time: Date.now(),
    };
    req.json = () => JSON.parse(body.toString("utf8") || "null");
    this.busy = true;
    this.engine.dispatch(this, req);
  }

  /** Hands the rest of the connection to an upgraded exchange: later bytes are stdin. */
  hijack() {
    const stdin = new EventEmitter();
    stdin.received = [];
    stdin.ended = false;
    this.upgraded = stdin;
    if (this.buf.length) {
      const early = this.buf;
      this.buf = Buffer.alloc(0);
      stdin.received.push(early);
      setImmediate(() => stdin.emit("data", early));
    }
    stdin.readAll = () =>
      new Promise((resolve) => {
        if (stdin.ended) resolve(Buffer.concat(stdin.received));
        else stdin.once("end", () => resolve(Buffer.concat(stdin.received)));
      });
    return stdin;
  }
}

function parseChunked(buf) {
  let off = 0;
  const parts = [];
  for (;;) {
    const eol = buf.indexOf("\r\n", off);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(off, eol).toString("latin1"), 16);
    off = eol + 2;
    if (size === 0) {
      const fin = buf.indexOf("\r\n", off);
      if (fin < 0) return null;
      return { body: Buffer.concat(parts), consumed: fin + 2 };
    }
    if (buf.length < off + size + 2) return null;
    parts.push(buf.subarray(off, off + size));
    off += size + 2;
  }
}

function compile(pattern) {
  if (pattern instanceof RegExp) return pattern;
  const names = [];
  const src = pattern
    .split("/")
    .map((part) => {
      if (part.startsWith(":")) {
        names.push(part.slice(1));
        return part.endsWith("*") ? "(.+)" : "([^/]+)";
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  const re = new RegExp(`^${src}$`);
  re.names = names.map((n) => n.replace(/\*$/, ""));
  return re;
}

/** Runs a plain script description (see the header comment). */
async function runScript(script, req, res) {
  if (script.hang) return res.hang();
  if (script.destroy) return res.destroy();
  if (script.raw !== undefined) {
    const bytes = typeof script.raw === "function" ? script.raw(req) : script.raw;
    return res.raw(bytes, { split: script.split, delayMs: script.delayMs, then: script.then ?? "keep" });
  }
  if (script.json !== undefined) return res.json(script.status ?? 200, script.json, script.headers);
  if (script.body !== undefined) return res.send(script.status ?? 200, script.body, script.headers);
  return res.empty(script.status ?? 204, script.headers);
}

// ---- the engine ----------------------------------------------------------------------------

export function sandboxLabels(id, overrides = {}) {
  return {
    "anvia.sandbox.schema": "1",
    "anvia.sandbox.id": id,
    "anvia.sandbox.workdir": "/workspace",
    "anvia.sandbox.workspace.type": "ephemeral",
    "anvia.sandbox.workspace.volume": `anvia-sandbox-${id}-workspace`,
    "anvia.sandbox.network.mode": "none",
    "anvia.sandbox.runtime.command-timeout-ms": "30000",
    "anvia.sandbox.runtime.max-output-bytes": "1048576",
    "anvia.sandbox.runtime.max-file-bytes": "10485760",
    "anvia.sandbox.runtime.max-processes": "4",
    ...overrides,
  };
}

/** True for the second exec the library runs to end a command's process tree. */
export function isKiller(exec) {
  return Array.isArray(exec?.body?.Cmd) && exec.body.Cmd[3] === "anvia-kill";
}

export class FakeEngine {
  constructor({ socketPath, apiVersion = DEFAULT_API_VERSION, state } = {}) {
    this.ownsDir = socketPath === undefined;
    this.dir = this.ownsDir ? mkdtempSync(join(tmpdir(), "anvia-fake-")) : null;
    this.socketPath = socketPath ?? join(this.dir, "docker.sock");
    this.host = `unix://${this.socketPath}`;
    this.apiVersion = apiVersion; // null: no API-Version header
    this.overrides = [];
    this.requests = [];
    this.sockets = new Set();
    this.state = state ?? {
      containers: new Map(),
      volumes: new Map(),
      execs: new Map(),
      files: new Map(), // absolute path -> { type: "file" | "dir" | "symlink", content, mode, linkTarget }
      uploads: [],
      nextId: 1,
    };
    if (!state) this.state.files.set("/workspace", { type: "dir", mode: 0o755 });
    // What a default exec does: (exec, stdin) -> { stdout, stderr, exitCode }.
    this.execProgram = defaultProgram;
    this.server = net.createServer({ allowHalfOpen: true }, (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
      new Connection(this, socket);
    });
    this.defaults = buildDefaults(this);
  }

  async listen() {
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    await new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(this.socketPath, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    return this;
  }

  /**
   * Overrides a route. `pattern` is matched against the path after the version prefix
   * ("/containers/:name/json", ":name*" matches across slashes, or a RegExp). Returns a
   * function that removes the override. `times`: how many requests it answers.
   */
  route(method, pattern, script, { times = Infinity } = {}) {
    const entry = { method, re: compile(pattern), script, times };
    this.overrides.unshift(entry);
    return () => {
      this.overrides = this.overrides.filter((e) => e !== entry);
    };
  }

  /** A container the library can resume (labels as the real ones). */
  addContainer(id, { labels = {}, running = false, user = "", extra = {} } = {}) {
    const name = `anvia-sandbox-${id}`;
    const c = {
      Id: `cid${String(this.state.nextId++).padStart(61, "0")}`,
      Name: `/${name}`,
      Config: { Labels: sandboxLabels(id, labels), User: user, Image: "fake:latest" },
      State: { Status: running ? "running" : "exited", Running: running, Paused: false, Dead: false },
      HostConfig: { ReadonlyRootfs: false, PortBindings: {} },
      NetworkSettings: { Ports: {} },
      ...extra,
    };
    this.state.containers.set(name, c);
    return c;
  }

  addFile(path, content, { mode = 0o644 } = {}) {
    this.state.files.set(path, { type: "file", content: toBuffer(content), mode });
  }

  find(method, path, lists = [this.overrides, this.defaults]) {
    for (const list of lists) {
      for (const r of list) {
        if (r.method !== method && r.method !== "*") continue;
        if (r.times <= 0) continue;
        const m = r.re.exec(path);
        if (!m) continue;
        const params = {};
        (r.re.names ?? []).forEach((n, i) => (params[n] = m[i + 1]));
        return { r, params };
      }
    }
    return null;
  }

  dispatch(conn, req) {
    this.requests.push(req);
    const res = new FakeResponse(conn, req);
    const found = this.find(req.method, req.path);
    if (!found) {
      res.json(404, { message: `fake engine: no route for ${req.method} ${req.path}` });
      return;
    }
    found.r.times--;
    req.params = found.params;
    const ctx = { engine: this, conn, exec: req.params.id ? this.state.execs.get(req.params.id) : undefined };
    // An override may hand the request on to the default route.
    ctx.next = () => {
      const d = this.find(req.method, req.path, [this.defaults]);
      if (!d) return res.json(404, { message: `fake engine: no default route for ${req.method} ${req.path}` });
      return d.r.script(req, res, ctx);
    };
    Promise.resolve()
      .then(() => (typeof found.r.script === "function" ? found.r.script(req, res, ctx) : runScript(found.r.script, req, res)))
      .catch((error) => {
        // A broken script is a broken test: make it loud, and answer 500.
        console.error("fake engine script failed:", error);
        if (!res.finished && !res.destroyed) res.json(500, { message: `fake engine script failed: ${error.message}` });
      });
  }

  /** Requests seen, optionally filtered by method and a path RegExp or substring. */
  seen(method, path) {
    return this.requests.filter(
      (r) => (method === undefined || r.method === method) && (path === undefined || (path instanceof RegExp ? path.test(r.path) : r.path.includes(path))),
    );
  }

  /**
   * Waits until some request matches (polling), however long that takes on this machine:
   * the test's own timeout bounds a request that never comes.
   */
  async waitFor(method, path) {
    return until(() => {
      const hit = this.seen(method, path);
      return hit.length ? hit[hit.length - 1] : null;
    });
  }

  /** Stops listening and cuts every connection (an engine that goes away). */
  async close({ removeDir = true } = {}) {
    const closed = new Promise((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
    if (removeDir && this.ownsDir) rmSync(this.dir, { recursive: true, force: true });
  }
}

// The engine calls of a fork (pause, unpause, commit, the copy helper's wait), answered.
export function answerFork(fake, { waitStatus = 0 } = {}) {
  fake.route("POST", "/containers/:name/pause", { status: 204 });
  fake.route("POST", "/containers/:name/unpause", { status: 204 });
  fake.route("POST", "/commit", { status: 201, json: { Id: "sha256:committed" } });
  fake.route("POST", "/containers/:name/wait", { status: 200, json: { StatusCode: waitStatus } });
}

export async function startFakeEngine(options) {
  return new FakeEngine(options).listen();
}

function defaultProgram(exec, stdin) {
  const cmd = exec.body.Cmd ?? [];
  if (isKiller(exec)) return { exitCode: 0 };
  if (cmd[0] === "echo") return { stdout: `${cmd.slice(1).join(" ")}\n`, exitCode: 0 };
  if (cmd[0] === "cat") return { stdout: stdin, exitCode: 0 };
  if (cmd[0] === "false") return { exitCode: 1 };
  return { stdout: "", exitCode: 0 };
}

/** The default exec start: the 101 hijack, stdin to its end when attached, then frames. */
export async function defaultExecStart(req, res, ctx) {
  const exec = ctx.exec;
  if (!exec) return res.json(404, { message: `No such exec instance: ${req.params.id}` });
  if (!req.upgrade) return res.json(400, { message: "fake engine: exec start without upgrade" });
  const stdin = ctx.conn.hijack();
  await res.write(upgradeHead());
  exec.Running = true;
  let input = Buffer.alloc(0);
  if (exec.body.AttachStdin) input = await stdin.readAll();
  const out = ctx.engine.execProgram(exec, input);
  exec.stdin = input;
  const parts = [];
  if (out.stdout && out.stdout.length) parts.push(frame(1, out.stdout));
  if (out.stderr && out.stderr.length) parts.push(frame(2, out.stderr));
  if (parts.length) await res.write(Buffer.concat(parts));
  exec.Running = false;
  exec.ExitCode = out.exitCode ?? 0;
  res.end();
}

export function upgradeHead() {
  return head(101, { "Content-Type": "application/vnd.docker.raw-stream", Connection: "Upgrade", Upgrade: "tcp" });
}

function notFound(res, what) {
  res.json(404, { message: what });
}

function buildDefaults(engine) {
  const st = engine.state;
  const list = [];
  const add = (method, pattern, script) => list.push({ method, re: compile(pattern), script, times: Infinity });
  const container = (req, res) => {
    const c = st.containers.get(req.params.name);
    if (!c) notFound(res, `No such container: ${req.params.name}`);
    return c;
  };

  add("GET", "/_ping", (req, res) => {
    const headers = { "Content-Type": "text/plain; charset=utf-8", "Docker-Experimental": "false", "Ostype": "linux" };
    if (engine.apiVersion !== null) headers["API-Version"] = engine.apiVersion;
    res.send(200, "OK", headers);
  });
  add("HEAD", "/_ping", (req, res) => {
    const headers = {};
    if (engine.apiVersion !== null) headers["API-Version"] = engine.apiVersion;
    res.empty(200, headers);
  });
  add("GET", "/version", (req, res) => res.json(200, { ApiVersion: engine.apiVersion, Version: "20.10.0-fake" }));

  // Containers.
  add("GET", "/containers/:name/json", (req, res) => {
    const c = container(req, res);
    if (c) res.json(200, c);
  });
  add("POST", "/containers/create", (req, res) => {
    const name = req.query.name;
    if (st.containers.has(name)) return res.json(409, { message: `Conflict. The container name "/${name}" is already in use.` });
    const body = req.json();
    const c = {
      Id: `cid${String(st.nextId++).padStart(61, "0")}`,
      Name: `/${name}`,
      Config: { Labels: body.Labels ?? {}, User: body.User ?? "", Image: body.Image, Env: body.Env ?? [] },
      State: { Status: "created", Running: false, Paused: false, Dead: false },
      HostConfig: { ...(body.HostConfig ?? {}), PortBindings: body.HostConfig?.PortBindings ?? {} },
      NetworkSettings: { Ports: {} },
      createBody: body,
    };
    // Every requested binding gets a host port, as the engine would choose one.
    let port = 40000;
    for (const key of Object.keys(c.HostConfig.PortBindings)) {
      c.NetworkSettings.Ports[key] = [{ HostIp: "127.0.0.1", HostPort: String(port++) }];
    }
    st.containers.set(name, c);
    res.json(201, { Id: c.Id, Warnings: [] });
  });
  add("POST", "/containers/:name/start", (req, res) => {
    const c = container(req, res);
    if (!c) return;
    if (c.State.Running) return res.empty(304);
    c.State = { ...c.State, Status: "running", Running: true };
    res.empty(204);
  });
  add("POST", "/containers/:name/stop", (req, res) => {
    const c = container(req, res);
    if (!c) return;
    if (!c.State.Running) return res.empty(304);
    c.State = { ...c.State, Status: "exited", Running: false };
    res.empty(204);
  });
  add("DELETE", "/containers/:name", (req, res) => {
    const c = container(req, res);
    if (!c) return;
    st.containers.delete(req.params.name);
    res.empty(204);
  });

  // Images.
  add("GET", "/images/:name*/json", (req, res) => res.json(200, { Id: "sha256:fake", Config: { User: "" } }));
  add("POST", "/images/create", async (req, res) => {
    const lines = [
      { status: `Pulling from ${req.query.fromImage}`, id: req.query.tag },
      { status: "Pulling fs layer", progressDetail: {}, id: "aaaaaaaaaaaa" },
      { status: "Download complete", progressDetail: {}, id: "aaaaaaaaaaaa" },
      { status: `Digest: sha256:${"0".repeat(64)}` },
      { status: `Status: Downloaded newer image for ${req.query.fromImage}:${req.query.tag}` },
    ];
    await res.write(head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }));
    for (const l of lines) await res.write(chunked(JSON.stringify(l) + "\r\n", Infinity, false));
    await res.write("0\r\n\r\n");
    res.done();
  });

  // An image build, as Docker's classic builder streams it: a step per Dockerfile
  // instruction of the context (a tar: parseTar(req.body)), the image id, the tag.
  add("POST", "/build", async (req, res) => {
    const dockerfile = parseTar(req.body).find((e) => e.name === "Dockerfile")?.content.toString("utf8") ?? "";
    const steps = dockerfile.replace(/\\\n/g, " ").split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));
    const lines = steps.flatMap((step, i) => [{ stream: `Step ${i + 1}/${steps.length} : ${step}\n` }, { stream: ` ---> ${String(i).padStart(12, "0")}\n` }]);
    lines.push({ aux: { ID: `sha256:${"b".repeat(64)}` } }, { stream: `Successfully built ${"b".repeat(12)}\n` }, { stream: `Successfully tagged ${req.query.t}\n` });
    await res.write(head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" }));
    for (const l of lines) await res.write(chunked(`${JSON.stringify(l)}\r\n`, Infinity, false));
    await res.write("0\r\n\r\n");
    res.done();
  });

  // Volumes.
  add("POST", "/volumes/create", (req, res) => {
    const body = req.json();
    st.volumes.set(body.Name, { Name: body.Name, Labels: body.Labels ?? {} });
    res.json(201, { Name: body.Name, Driver: "local", Labels: body.Labels ?? {}, Mountpoint: `/fake/${body.Name}` });
  });
  add("GET", "/volumes/:name", (req, res) => {
    const v = st.volumes.get(req.params.name);
    if (!v) return notFound(res, `get ${req.params.name}: no such volume`);
    res.json(200, v);
  });
  add("DELETE", "/volumes/:name", (req, res) => {
    st.volumes.delete(req.params.name);
    res.empty(204);
  });

  // Exec.
  add("POST", "/containers/:name/exec", (req, res) => {
    const c = container(req, res);
    if (!c) return;
    const id = `exec${String(st.nextId++).padStart(60, "0")}`;
    st.execs.set(id, { id, container: req.params.name, body: req.json(), Running: false, ExitCode: null });
    res.json(201, { Id: id });
  });
  add("POST", "/exec/:id/start", defaultExecStart);
  add("GET", "/exec/:id/json", (req, res) => {
    const e = st.execs.get(req.params.id);
    if (!e) return notFound(res, `No such exec instance: ${req.params.id}`);
    res.json(200, { ID: e.id, Running: e.Running, ExitCode: e.ExitCode, ProcessConfig: { entrypoint: e.body.Cmd?.[0] } });
  });

  // Archives.
  const archive = (req, res) => {
    const c = container(req, res);
    if (!c) return;
    const path = req.query.path;
    const f = st.files.get(path);
    if (!f) return notFound(res, `Could not find the file ${path} in container ${req.params.name}`);
    const name = path.split("/").filter(Boolean).pop() ?? "/";
    const mode = f.type === "dir" ? GO_MODE_DIR + (f.mode ?? 0o755) : f.type === "symlink" ? GO_MODE_SYMLINK + 0o777 : f.mode ?? 0o644;
    const size = f.type === "file" ? f.content.length : 4096;
    const headers = { "X-Docker-Container-Path-Stat": pathStat({ name, size, mode, linkTarget: f.linkTarget ?? "" }) };
    if (req.method === "HEAD") return res.empty(200, headers);
    let tar;
    if (f.type === "file") tar = tarOf([{ name, content: f.content, mode: f.mode ?? 0o644 }]);
    else if (f.type === "symlink") tar = tarOf([{ name, type: "2", linkname: f.linkTarget }]);
    else tar = tarOf([{ name: `${name}/`, type: "5", mode: f.mode ?? 0o755 }]);
    res.write(head(200, { ...headers, "Content-Type": "application/x-tar", "Transfer-Encoding": "chunked" }));
    res.write(chunked(tar));
    res.done();
  };
  add("GET", "/containers/:name/archive", archive);
  add("HEAD", "/containers/:name/archive", archive);
  add("PUT", "/containers/:name/archive", (req, res) => {
    const c = container(req, res);
    if (!c) return;
    const base = req.query.path;
    const entries = parseTar(req.body);
    st.uploads.push({ container: req.params.name, path: base, entries });
    for (const e of entries) {
      const abs = `${base.replace(/\/$/, "")}/${e.name.replace(/\/$/, "")}`;
      if (e.type === "5") st.files.set(abs, { type: "dir", mode: e.mode });
      else if (e.type === "0") st.files.set(abs, { type: "file", content: e.content, mode: e.mode });
    }
    res.empty(200);
  });
  return list;
}

// ---- test helpers ----------------------------------------------------------------------------

/**
 * An exec start override that leaves the library's own kill-tree exec to the default
 * route and answers every other exec with raw bytes (cut, split, delayed as asked).
 */
export function rawExecStart(bytes, { exitCode = 0, ...opts } = {}) {
  return async (req, res, ctx) => {
    if (isKiller(ctx.exec)) return ctx.next();
    ctx.conn.hijack();
    // What the engine's exec inspection reports once the stream is over.
    if (ctx.exec) Object.assign(ctx.exec, { Running: false, ExitCode: exitCode });
    await res.raw(typeof bytes === "function" ? bytes(req, ctx) : bytes, { then: "end", ...opts });
  };
}

/** An override that applies only to the command's exec, the kill-tree exec going to the default. */
export function notKiller(handler) {
  return (req, res, ctx) => (isKiller(ctx.exec) ? ctx.next() : typeof handler === "function" ? handler(req, res, ctx) : runScript(handler, req, res));
}

/** A fake engine, a client on it and a resumed sandbox handle; everything closed after the test. */
export async function fakeSandbox(t, { id = "fake1", labels, apiVersion } = {}) {
  const fake = await startFakeEngine({ apiVersion });
  t.after(() => fake.close());
  fake.addContainer(id, { labels });
  const client = new DockerSandboxClient({ host: fake.host });
  const sandbox = await client.resumeSandbox({ id });
  return { fake, client, sandbox, runtime: sandbox.runtime, id, containerName: `anvia-sandbox-${id}` };
}

/** Awaits a rejection and checks it is a DockerSandboxError with that code (and message). */
export async function expectCode(promise, code, message) {
  let error;
  try {
    const value = await promise;
    assert.fail(`expected a rejection with code ${code}, got a value: ${inspectValue(value)}`);
  } catch (e) {
    error = e;
  }
  if (error instanceof assert.AssertionError) throw error;
  assert.ok(error instanceof DockerSandboxError, `expected a DockerSandboxError, got ${error?.name}: ${error?.message}`);
  assert.equal(error.code, code, `code of: ${error.message}`);
  if (message !== undefined) assert.match(error.message, message);
  return error;
}

function inspectValue(v) {
  try {
    return JSON.stringify(v, (k, x) => (x instanceof Uint8Array ? Buffer.from(x).toString() : x));
  } catch {
    return String(v);
  }
}

export function mib(bytes) {
  return bytes / (1024 * 1024);
}

// ---- waiting without racing a timer ---------------------------------------------------------

/**
 * The per-test timeout of the fake-engine suites: minutes. Nothing in them waits on a
 * timer of its own (a slow machine only makes a test slower); this bounds a genuine hang.
 */
export const HANG_MS = 5 * 60_000;

/** Polls `pred` (every 5 ms) until it returns something truthy, however long that takes. */
export async function until(pred) {
  for (;;) {
    const v = await pred();
    if (v) return v;
    await sleep(5);
  }
}

/**
 * Lets the event loop go round `n` times (each turn runs a poll phase: whatever I/O is
 * ready by then, the library's included, has been handled).
 */
export async function loopTurns(n = 1) {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

/**
 * How many turns of the event loop pass between calling `trigger` and `promise` settling
 * (0: within the same turn). Counting turns rather than milliseconds says "at once"
 * whatever the machine's speed: a settlement that waited for I/O or a timer takes many.
 */
export async function turnsUntilSettled(promise, trigger) {
  let turns = 0;
  let settled = false;
  const counted = promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  const spin = () => {
    if (settled) return;
    turns++;
    setImmediate(spin);
  };
  trigger();
  setImmediate(spin);
  await counted;
  return turns;
}

export { DockerSandboxClient, DockerSandboxError, sleep };
