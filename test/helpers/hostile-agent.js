// A hostile in-sandbox agent behind the fake engine (issue 23): the fake engine serves the
// agent transport exactly as engine/agent_conn.c uses it (GET /version with an Arch, the
// HEAD probe of /.anvia/agent-<hash> answered "there", POST /containers/{name}/exec and
// the hijacked POST /exec/{id}/start of that binary), and the exec's stream is a JS agent
// speaking src/agent/PROTOCOL.md (the frames of test/agent/lib/wire.js, the other way
// round) that lies on purpose: a test gives it one handler per request type.
//
// The host under test is the real addon in this process; the "agent" is this file. A
// handler gets (agent, req) where req is the decoded request ({ id, type, ... }) and agent
// has:
//   agent.send(bytes)             one or more agent frames, inside the engine's stream-1
//                                 multiplexing; resolves once the socket took them
//   agent.credit(id)              the host's credit on stream 2 of request id
//   agent.waitCredit(id, n)       resolves when that credit is >= n (true), or the
//                                 connection closed (false)
//   agent.stopReading()           the agent never reads its stdin again (the socket is
//                                 paused: the kernel's buffers fill, then the host's)
//   agent.closed                  true once the host (or the engine) ended the stream
//   agent.received                host -> agent DATA bytes received, by request id
//   "data" events                 (id, payload, end) for each host DATA frame
//   agent.granted(id)             the stream 2 credit the host granted request id after its
//                                 request's window (the sum of its WINDOW frames)
//   agent.input(id)               a terminal request's input (TERM_*): resolves with every
//                                 DATA byte the host sent it once its END came (or what came
//                                 before the connection closed)
// and the encoders below (agentEnc) make its frames. Requests are decoded as strictly as
// the agent decodes them (wire.js's decodePayload of the table's message): one that does
// not decode has `invalid` (why). PINGs are answered unless
// `answerPings: false`; HOST_HELLO is accepted; requests without a handler never get a
// reply (the "reply that never comes").
import { spawn } from "node:child_process";
import v8 from "node:v8";
import vm from "node:vm";
import { EventEmitter } from "node:events";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  T, S, F_END, HEADER, MAX_PAYLOAD, MAX_DATA, IN_WINDOW, TERM, TERMF, TERM_REC_FIXED, ERRORS,
  frame, encodePayload, decodePayload, ProtocolError, dec,
} from "../agent/lib/wire.js";
import { table } from "../agent/lib/table.js";
import { frame as muxFrame, upgradeHead } from "./fake-engine.js";
import { native } from "../../lib/native.js";

const NAMES = Object.fromEntries(Object.entries(T).map(([k, v]) => [v, k]));

// ---- encoding the agent's frames ----

// The frame layout is wire.js's (the agent's frames and the host's share it).
const agentFrame = frame;

// A frame of the table's message `name` (test/agent/lib/table.js, read from agent_wire.h):
// the layout is written once, there; nothing is checked, so lies are encoded too.
const msgFrame = (name, id, values) => frame(T[table.messages.get(name).type], id, encodePayload(name, values));

const u32 = (v) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};
const u64 = (v) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return b;
};
const blob = (s) => {
  const b = Buffer.from(s);
  return Buffer.concat([u32(b.length), b]);
};

export const agentEnc = {
  hello({ inWindow = IN_WINDOW, pid = 77, uid = 0, gid = 0, heartbeatMs = 20000 } = {}) {
    const p = Buffer.alloc(44);
    p.writeUInt32BE(0x414e5641, 0);
    p.writeUInt16BE(1, 4);
    p.writeUInt16BE(1, 6);
    p.writeUInt32BE(MAX_PAYLOAD, 8);
    p.writeUInt32BE(MAX_DATA, 12);
    p.writeUInt32BE(inWindow >>> 0, 16);
    p.writeUInt32BE(1024, 20);
    p.writeUInt32BE(0, 24);
    p.writeUInt32BE(pid, 28);
    p.writeUInt32BE(uid, 32);
    p.writeUInt32BE(gid, 36);
    p.writeUInt32BE(heartbeatMs, 40);
    return agentFrame(T.HELLO, 0, Buffer.concat([p, blob("hostile0000000000"), blob("x86_64")]));
  },
  pong: (id, payload) => agentFrame(T.PONG, id, payload),
  data: (id, bytes, stream = S.OUT) => agentFrame(T.DATA, id, Buffer.from(bytes), { stream }),
  // A DATA header announcing `len` payload bytes, followed by `follow` bytes of it only.
  dataHeader(id, len, follow = 0, stream = S.OUT) {
    const f = agentFrame(T.DATA, id, Buffer.alloc(follow, 0x78), { stream });
    f.writeUInt32BE(len >>> 0, 0);
    return f;
  },
  window: (id, inc) => agentFrame(T.WINDOW, id, u32(inc), { stream: S.IN }),
  started: (id, pid = 100, pgid = 100) => agentFrame(T.STARTED, id, Buffer.concat([u32(pid), u32(pgid)])),
  execResult: (id, { code = 0, outBytes = 0, errBytes = 0 } = {}) =>
    agentFrame(T.RESULT, id, Buffer.concat([Buffer.from([0, 0, 0, 0]), u32(code), u64(outBytes), u64(errBytes), u64(1000)])),
  listResult: (id, count, flags = 0) => agentFrame(T.RESULT, id, Buffer.concat([u32(count), u32(flags)])),
  watchResult: (id, events, flags = 0) => agentFrame(T.RESULT, id, Buffer.concat([u64(events), u32(flags)])),
  /** One watch record: type (1 create .. 5 overflow), kind (1 file, 2 directory), path. */
  wevent(path, { type = 1, kind = 1 } = {}) {
    const p = Buffer.from(path);
    const r = Buffer.alloc(4);
    r[0] = type;
    r[1] = kind;
    r.writeUInt16BE(p.length, 2);
    return Buffer.concat([r, p]);
  },
  writeResult: (id, bytes, mode = 0o644) => agentFrame(T.RESULT, id, Buffer.concat([u64(bytes), u32(mode)])),
  /** An ERROR for request `id`: `kind` by its wire name (not_found, io, invalid, ...). */
  error(id, kind, { stage = 0, err = 0, value = 0, detail = "" } = {}) {
    const code = ERRORS.indexOf(kind);
    if (code < 1) throw new Error(`no agent error kind ${kind}`);
    return msgFrame("error", id, { kind: code, stage, err, value, detail });
  },
  // ---- terminals (PROTOCOL.md "Terminals"): STARTED is started() above ----
  /** One terminal output record, a whole DATA payload: the u64 offset, then the bytes. */
  trecord(offset, bytes) {
    const h = Buffer.alloc(TERM_REC_FIXED);
    h.writeBigUInt64BE(BigInt(offset));
    return Buffer.concat([h, Buffer.from(bytes)]);
  },
  /** A DATA frame of one record (records are never split or joined). */
  termData: (id, offset, bytes) => agentEnc.data(id, agentEnc.trecord(offset, bytes)),
  /**
   * The RESULT of TERM_OPEN, TERM_ATTACH and TERM_RESIZE: flags (TERMF.ENDED, TERMF.CORE),
   * how (0 code, 1 signal), signal, code, cols, rows, head, tail; 80x24 unless said.
   */
  termResult: (id, fields = {}) => msgFrame("term_result", id, { cols: 80, rows: 24, ...fields }),
  /** The RESULT of TERM_LIST: its ids. */
  termListResult: (id, ids) => msgFrame("term_list_result", id, { ids }),
  /** A TERM_LIST RESULT whose count says `count` and which holds `ids` (a lie when they differ). */
  termListCount: (id, count, ids = []) => agentFrame(T.RESULT, id, Buffer.concat([u32(count), ...ids.map(blob)])),
  /** The RESULT of SIGNAL and TERM_SIGNAL. */
  signalResult: (id, delivered = 1, count = 1) => msgFrame("signal_result", id, { delivered, count }),
  /** One listing record (24 + name bytes): a regular file of `size` bytes. */
  entry(name, { type = 1, mode = 0o644, size = 0 } = {}) {
    const n = Buffer.from(name);
    const r = Buffer.alloc(24);
    r[0] = type;
    r[1] = 0;
    r.writeUInt16BE(n.length, 2);
    r.writeUInt32BE(mode, 4);
    r.writeBigUInt64BE(BigInt(size), 8);
    r.writeBigInt64BE(0n, 16);
    return Buffer.concat([r, n]);
  },
};

// ---- decoding the host's frames ----

// Request types by the host messages of the table (exec, list, term_open, ...).
const REQUESTS = new Map([...table.messages.values()].filter((m) => m.sender === "HOST").map((m) => [T[m.type], m.name]));

// A decoded field as the tests compare it: blobs as strings, lists as arrays of strings,
// u64 fields as Numbers.
const plain = (v) => (Buffer.isBuffer(v) ? v.toString() : Array.isArray(v) ? v.map(plain) : typeof v === "bigint" ? Number(v) : v);

// A host request: { id, type, ...its fields (camelCase) }, decoded as strictly as the agent
// does; `invalid` says why one does not decode.
function decodeRequest(type, id, p) {
  const req = { id, type: NAMES[type] ?? `0x${type.toString(16)}` };
  const name = REQUESTS.get(type);
  if (name === undefined) return req;
  try {
    for (const [k, v] of Object.entries(decodePayload(name, p))) req[k] = plain(v);
  } catch (error) {
    if (!(error instanceof ProtocolError)) throw error;
    req.invalid = error.message;
  }
  return req;
}

// ---- one agent on one hijacked exec stream ----

class HostileAgent extends EventEmitter {
  constructor(handlers, conn, res, options) {
    super();
    this.handlers = handlers;
    this.conn = conn;
    this.res = res;
    this.options = options;
    this.buf = Buffer.alloc(0);
    this.credits = new Map(); // id -> stream 2 credit
    this.waiters = [];
    this.received = new Map(); // id -> host DATA bytes
    this.requests = []; // every request decoded, in order
    this.grants = new Map(); // id -> stream 2 credit granted after the request's window
    this.inputs = new Map(); // id -> { chunks, done, waiters } of a terminal request
    this.frames = 0; // host frames parsed
    this.closed = false;
    conn.socket.on("close", () => this.close());
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.resolve(false);
    for (const st of this.inputs.values()) this.#inputDone(st);
    this.emit("closed");
  }

  /** Agent frames, multiplexed as the engine does (stream 1). */
  async send(bytes) {
    if (this.closed) return false;
    const b = Buffer.from(bytes);
    // A mux frame is at most what its u32 length says; keep them frame-sized.
    const parts = [];
    for (let off = 0; off < b.length; off += 1 << 20) parts.push(muxFrame(1, b.subarray(off, off + (1 << 20))));
    const ok = await this.res.write(Buffer.concat(parts));
    if (!ok) this.close();
    return ok && !this.closed;
  }

  credit(id) {
    return this.credits.get(id) ?? 0;
  }

  spend(id, n) {
    this.credits.set(id, this.credit(id) - n);
  }

  waitCredit(id, n) {
    if (this.closed) return Promise.resolve(false);
    if (this.credit(id) >= n) return Promise.resolve(true);
    return new Promise((resolve) => this.waiters.push({ id, n, resolve }));
  }

  granted(id) {
    return this.grants.get(id) ?? 0;
  }

  input(id) {
    const st = this.inputs.get(id);
    if (st === undefined) return Promise.resolve(Buffer.alloc(0));
    if (st.done || this.closed) return Promise.resolve(Buffer.concat(st.chunks));
    return new Promise((resolve) => st.waiters.push(resolve));
  }

  #inputDone(st) {
    st.done = true;
    for (const w of st.waiters.splice(0)) w(Buffer.concat(st.chunks));
  }

  stopReading() {
    this.conn.socket.pause();
  }

  onInput(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= HEADER) {
      const len = this.buf.readUInt32BE(0);
      if (this.buf.length < HEADER + len) break;
      const type = this.buf[4];
      const flags = this.buf[5];
      const stream = this.buf[6];
      const id = this.buf.readUInt32BE(8);
      const payload = this.buf.subarray(HEADER, HEADER + len);
      this.buf = this.buf.subarray(HEADER + len);
      this.frames++;
      this.onFrame(type, stream, id, payload, flags);
    }
  }

  onFrame(type, stream, id, payload, flags = 0) {
    if (type === T.HOST_HELLO) return;
    if (type === T.PING) {
      if (this.options.answerPings !== false) this.send(agentEnc.pong(id, payload));
      return;
    }
    if (type === T.WINDOW) {
      if (stream === S.OUT || stream === S.ERR) {
        if (stream === S.OUT) {
          this.credits.set(id, this.credit(id) + payload.readUInt32BE(0));
          this.grants.set(id, this.granted(id) + payload.readUInt32BE(0));
        }
        this.waiters = this.waiters.filter((w) => {
          if (this.credit(w.id) < w.n) return true;
          w.resolve(true);
          return false;
        });
      }
      return;
    }
    if (type === T.DATA) {
      this.received.set(id, (this.received.get(id) ?? 0) + payload.length);
      const st = this.inputs.get(id);
      if (st !== undefined && !st.done) {
        st.chunks.push(Buffer.from(payload));
        if (flags & F_END) this.#inputDone(st);
      }
      this.emit("data", id, payload, (flags & F_END) !== 0);
      return;
    }
    if (type === T.CANCEL) {
      this.emit("cancel", id);
      return;
    }
    const req = decodeRequest(type, id, payload);
    if (req.window !== undefined) this.credits.set(id, req.window);
    // A terminal's input is kept (keystrokes: small); other requests' never is.
    if (req.type.startsWith("TERM_")) this.inputs.set(id, { chunks: [], done: false, waiters: [] });
    this.requests.push(req);
    this.emit("request", req);
    const handler = this.handlers[req.type.toLowerCase()];
    if (handler) {
      Promise.resolve()
        .then(() => handler(this, req))
        .catch((error) => {
          console.error("hostile agent handler failed:", error);
          this.conn.socket.destroy();
        });
    }
  }
}

/**
 * Makes `fake` serve the agent transport with a hostile agent. `handlers`: { list, exec,
 * write, read, ... } by request type, each (agent, req) => ...; options: `hello` (HELLO
 * fields: inWindow, ...), `answerPings`. Returns { agents, next() }: every agent started,
 * and a promise of the next one.
 */
/**
 * The engine's side of the agent transport: GET /version with an Arch, the placement
 * probe answered "there" (so no upload: what a root sandbox that replaced the binary
 * leaves behind), and each POST /exec/{id}/start of the agent's binary hijacked and
 * handed to start(stdin, req, res, ctx). The agent consumes what it reads: the fake's
 * copy of every stdin byte (for readAll) would be memory of this process that the host
 * did not hold, so none is kept.
 */
function serveAgentTransport(fake, start) {
  fake.route("GET", "/version", (req, res) => res.json(200, { ApiVersion: fake.apiVersion, Version: "20.10.0-fake", Arch: "amd64", Os: "linux" }));
  fake.route("HEAD", "/containers/:name/archive", (req, res, ctx) => {
    if (!String(req.query.path ?? "").startsWith("/.anvia/agent-")) return ctx.next();
    res.empty(200, {});
  });
  fake.route("POST", "/exec/:id/start", (req, res, ctx) => {
    const cmd = ctx.exec?.body?.Cmd ?? [];
    if (!String(cmd[0] ?? "").startsWith("/.anvia/agent-")) return ctx.next();
    const stdin = ctx.conn.hijack();
    stdin.received = { push() {} };
    return start(stdin, req, res, ctx);
  });
}

export function serveHostileAgent(fake, handlers = {}, options = {}) {
  const agents = [];
  const started = new EventEmitter();
  serveAgentTransport(fake, async (stdin, req, res, ctx) => {
    const agent = new HostileAgent(handlers, ctx.conn, res, options);
    agent.exec = ctx.exec;
    ctx.exec.Running = true;
    agents.push(agent);
    stdin.on("data", (chunk) => agent.onInput(chunk));
    stdin.on("end", () => {
      ctx.exec.Running = false;
      res.end();
      agent.close();
    });
    await res.write(upgradeHead());
    await agent.send(agentEnc.hello(options.hello));
    started.emit("agent", agent);
  });
  return {
    agents,
    next: () => new Promise((resolve) => started.once("agent", resolve)),
  };
}

/** The static liar of test/agent/c/liar.c for this machine (scripts/build-agent.sh). */
export const LIAR = fileURLToPath(new URL(`../../build-agent/${process.arch === "arm64" ? "aarch64" : "x86_64"}/liar`, import.meta.url));

/**
 * Makes `fake` serve the agent transport with the static liar (test/agent/c/liar.c) as
 * the agent, the program the real-container tests plant (test/integration/agent-liar.test.js),
 * so the sanitizer stage meets the same lies without Docker. Each hijacked exec of the
 * agent starts a liar process whose stdin and stdout are the stream's two directions, with
 * back-pressure both ways (a liar that stops reading stops this side reading the host). It
 * reads its lie from `dir`/liar.mode at each request and notes each request in
 * `dir`/liar.seen. Returns { liars }: every liar process started.
 */
export function serveLiar(fake, dir) {
  const liars = [];
  serveAgentTransport(fake, async (stdin, req, res, ctx) => {
    const socket = ctx.conn.socket;
    const liar = spawn(LIAR, [], { env: { ANVIA_LIAR_DIR: dir }, stdio: ["pipe", "pipe", "inherit"] });
    liars.push(liar);
    ctx.exec.Running = true;
    liar.stdin.on("error", () => {});
    await res.write(upgradeHead());
    stdin.on("data", (chunk) => {
      if (liar.stdin.write(chunk)) return;
      socket.pause();
      liar.stdin.once("drain", () => socket.resume());
    });
    stdin.on("end", () => liar.stdin.end());
    socket.on("close", () => liar.kill("SIGKILL"));
    liar.stdout.on("data", async (chunk) => {
      liar.stdout.pause();
      if (await res.write(muxFrame(1, chunk))) liar.stdout.resume();
    });
    liar.on("exit", () => {
      ctx.exec.Running = false;
      res.end();
    });
  });
  return { liars };
}

/**
 * The agent binary the host places: any bytes do (the probe says it is there). Points
 * the addon at a temporary agent directory; call once per test process, before the first
 * agent call.
 */
export function fakeAgentDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "anvia-hostile-agent-"));
  mkdirSync(join(dir, "x86_64"));
  writeFileSync(join(dir, "x86_64", "anvia-agent"), "#!hostile agent double\n");
  native.setAgentDir(dir);
  t?.after?.(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Host memory now: resident set and external (Buffers, the addon's allocations are in rss). */
export function memory() {
  const m = process.memoryUsage();
  return { rss: m.rss, external: m.external };
}

v8.setFlagsFromString("--expose-gc");
const collect = vm.runInNewContext("gc");

/**
 * Host memory held now: memory() as it is, or, when it is over `bound` above `base`, as it
 * is once the garbage is collected. What the host holds is the bound's business; how
 * soon V8 collects what it let go of depends on how busy the machine is.
 */
export function memoryHeld(base, bound) {
  const m = memory();
  if (m.rss - base.rss <= bound && m.external - base.external <= bound) return m;
  collect();
  return memory();
}

export { T, S, F_END, MAX_DATA, MAX_PAYLOAD, TERM, TERMF, TERM_REC_FIXED, dec };
