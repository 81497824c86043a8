// A small JavaScript implementation of the agent protocol (src/agent/PROTOCOL.md), for the
// tests only: encoders of the host's frames and strict decoders of the agent's, bounded as
// the host must bound them ("Host obligations").

export const HEADER = 12;
export const MAX_PAYLOAD = 1 << 20;
export const MAX_DATA = 65536;
export const IN_WINDOW = 262144;
export const MAX_WINDOW = 0x7fffffff;

export const T = {
  HELLO: 0x01,
  PONG: 0x02,
  STARTED: 0x03,
  EXITED: 0x04,
  RESULT: 0x05,
  ERROR: 0x06,
  DATA: 0x07,
  WINDOW: 0x08,
  HOST_HELLO: 0x20,
  PING: 0x21,
  CANCEL: 0x22,
  EXEC: 0x23,
  READ: 0x24,
  WRITE: 0x25,
  MKDIR: 0x26,
  LIST: 0x27,
  PORT_WAIT: 0x28,
  SIGNAL: 0x29,
  GROUP_ALIVE: 0x2a,
};
export const S = { NONE: 0, IN: 1, OUT: 2, ERR: 3 };
export const F_END = 1;
export const EXEC_DETACHED = 1;
export const EXEC_STDIN = 2;
export const EXITF = { TIMED_OUT: 1, CANCELLED: 2, OUTPUT_CUT: 4, CORE: 8 };
export const ENT = { 0: "unknown", 1: "file", 2: "directory", 3: "symlink", 4: "other" };
export const ERRORS = [
  "unknown", "protocol", "unsupported", "limit", "invalid", "duplicate_id", "not_found", "symlink",
  "not_regular", "is_directory", "not_directory", "too_large", "permission", "io", "spawn_failed",
  "cancelled", "length_mismatch", "resources", "flow_control", "no_workdir", "outside", "read_only",
  "no_space", "shutdown", "version",
];
const AGENT_TYPES = new Set([T.HELLO, T.PONG, T.STARTED, T.EXITED, T.RESULT, T.ERROR, T.DATA, T.WINDOW]);

export function header(len, type, { flags = 0, stream = 0, reserved = 0, id = 0 } = {}) {
  const b = Buffer.alloc(HEADER);
  b.writeUInt32BE(len, 0);
  b[4] = type;
  b[5] = flags;
  b[6] = stream;
  b[7] = reserved;
  b.writeUInt32BE(id >>> 0, 8);
  return b;
}

export function frame(type, id, payload = Buffer.alloc(0), opts = {}) {
  return Buffer.concat([header(payload.length, type, { ...opts, id }), payload]);
}

// ---- payload writer ----
class W {
  constructor() {
    this.parts = [];
  }
  u8(v) {
    this.parts.push(Buffer.from([v & 0xff]));
    return this;
  }
  u16(v) {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(v);
    this.parts.push(b);
    return this;
  }
  u32(v) {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v >>> 0);
    this.parts.push(b);
    return this;
  }
  i32(v) {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }
  u64(v) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(v));
    this.parts.push(b);
    return this;
  }
  blob(v) {
    const b = typeof v === "string" ? Buffer.from(v) : Buffer.from(v);
    this.u32(b.length);
    this.parts.push(b);
    return this;
  }
  done() {
    return Buffer.concat(this.parts);
  }
}

export const enc = {
  hostHello: (min = 1, max = 1, flags = 0) => frame(T.HOST_HELLO, 0, new W().u16(min).u16(max).u32(flags).done()),
  ping: (id, data = Buffer.alloc(0)) => frame(T.PING, id, Buffer.from(data)),
  cancel: (id) => frame(T.CANCEL, id),
  data: (id, bytes, end = false) => frame(T.DATA, id, Buffer.from(bytes), { stream: S.IN, flags: end ? F_END : 0 }),
  window: (id, stream, inc) => frame(T.WINDOW, id, new W().u32(inc).done(), { stream }),
  exec: (id, { argv, env = [], cwd = "", flags = 0, timeoutMs = 0, window = 1 << 20 }) => {
    const w = new W().u32(flags).u32(timeoutMs).u32(window).blob(cwd).u32(argv.length);
    for (const a of argv) w.blob(a);
    w.u32(env.length);
    for (const e of env) w.blob(e);
    return frame(T.EXEC, id, w.done());
  },
  read: (id, { path, maxBytes = 0, window = 1 << 20, flags = 0 }) =>
    frame(T.READ, id, new W().u64(maxBytes).u32(window).u32(flags).blob(path).done()),
  write: (id, { path, length, mode = 0, flags = 0 }) =>
    frame(T.WRITE, id, new W().u64(length).u32(mode).u32(flags).blob(path).done()),
  mkdir: (id, { path, mode = 0, parents = true }) =>
    frame(T.MKDIR, id, new W().u32(mode).u32(parents ? 1 : 0).blob(path).done()),
  list: (id, { path, maxEntries = 10000, window = 1 << 20, flags = 0 }) =>
    frame(T.LIST, id, new W().u32(maxEntries).u32(window).u32(flags).blob(path).done()),
  portWait: (id, { port, flags = 0, timeoutMs = 0, intervalMs = 0 }) =>
    frame(T.PORT_WAIT, id, new W().u16(port).u16(flags).u32(timeoutMs).u32(intervalMs).done()),
  signal: (id, { pgid, signal, tree = false }) =>
    frame(T.SIGNAL, id, new W().i32(pgid).u8(signal).u8(tree ? 1 : 0).u16(0).done()),
  groupAlive: (id, { pgid }) => frame(T.GROUP_ALIVE, id, new W().i32(pgid).done()),
};

// ---- strict decoding of the agent's bytes ----
export class ProtocolError extends Error {}

class R {
  constructor(buf) {
    this.b = buf;
    this.o = 0;
  }
  need(n) {
    if (this.b.length - this.o < n) throw new ProtocolError(`payload ends inside a field (${this.o}+${n}/${this.b.length})`);
  }
  u8() {
    this.need(1);
    return this.b[this.o++];
  }
  u16() {
    this.need(2);
    const v = this.b.readUInt16BE(this.o);
    this.o += 2;
    return v;
  }
  u32() {
    this.need(4);
    const v = this.b.readUInt32BE(this.o);
    this.o += 4;
    return v;
  }
  i32() {
    this.need(4);
    const v = this.b.readInt32BE(this.o);
    this.o += 4;
    return v;
  }
  u64() {
    this.need(8);
    const v = this.b.readBigUInt64BE(this.o);
    this.o += 8;
    return v;
  }
  i64() {
    this.need(8);
    const v = this.b.readBigInt64BE(this.o);
    this.o += 8;
    return v;
  }
  blob(max) {
    const n = this.u32();
    if (n > max) throw new ProtocolError(`string of ${n} bytes over ${max}`);
    this.need(n);
    const v = this.b.subarray(this.o, this.o + n);
    this.o += n;
    return v;
  }
  end() {
    if (this.o !== this.b.length) throw new ProtocolError(`${this.b.length - this.o} trailing bytes`);
  }
}

// Splits complete frames off the front of buf; throws on an invalid header.
export function splitFrames(buf) {
  const frames = [];
  let o = 0;
  while (buf.length - o >= HEADER) {
    const len = buf.readUInt32BE(o);
    const type = buf[o + 4];
    const flags = buf[o + 5];
    const stream = buf[o + 6];
    const reserved = buf[o + 7];
    const id = buf.readUInt32BE(o + 8);
    if (len > MAX_PAYLOAD) throw new ProtocolError(`frame of ${len} bytes`);
    if (reserved !== 0) throw new ProtocolError("reserved byte");
    if (!AGENT_TYPES.has(type)) throw new ProtocolError(`type ${type} from the agent`);
    if (type === T.DATA) {
      if (len > MAX_DATA) throw new ProtocolError(`DATA of ${len} bytes`);
      if (flags & ~F_END) throw new ProtocolError("DATA flags");
      if (stream !== S.OUT && stream !== S.ERR) throw new ProtocolError(`DATA on stream ${stream}`);
    } else if (type === T.WINDOW) {
      if (flags) throw new ProtocolError("WINDOW flags");
      if (stream !== S.IN) throw new ProtocolError(`WINDOW for stream ${stream}`);
    } else if (flags || stream) {
      throw new ProtocolError(`flags/stream on type ${type}`);
    }
    if (type === T.HELLO && id !== 0) throw new ProtocolError("HELLO with an id");
    if (![T.HELLO, T.PONG, T.ERROR].includes(type) && id === 0) throw new ProtocolError(`type ${type} with id 0`);
    if (buf.length - o - HEADER < len) break;
    frames.push({ type, flags, stream, id, payload: buf.subarray(o + HEADER, o + HEADER + len) });
    o += HEADER + len;
  }
  return { frames, rest: buf.subarray(o) };
}

export const dec = {
  windowInc(p) {
    const r = new R(p);
    const v = r.u32();
    r.end();
    if (v === 0 || v > MAX_WINDOW) throw new ProtocolError(`WINDOW of ${v}`);
    return v;
  },
  hello(p) {
    const r = new R(p);
    const m = {
      magic: r.u32(),
      versionMin: r.u16(),
      versionMax: r.u16(),
      maxPayload: r.u32(),
      maxData: r.u32(),
      inWindow: r.u32(),
      maxRequests: r.u32(),
      caps: r.u32(),
      pid: r.u32(),
      uid: r.u32(),
      gid: r.u32(),
      heartbeatMs: r.u32(),
    };
    m.build = r.blob(128).toString("latin1");
    m.arch = r.blob(128).toString("latin1");
    r.end();
    if (m.magic !== 0x414e5641) throw new ProtocolError("bad magic");
    return m;
  },
  error(p) {
    const r = new R(p);
    const kind = r.u16();
    const stage = r.u8();
    if (r.u8() !== 0) throw new ProtocolError("ERROR reserved");
    const errno = r.i32();
    const value = r.u64();
    const detail = Buffer.from(r.blob(8192));
    r.end();
    if (kind === 0 || errno < 0 || errno > 4095) throw new ProtocolError("ERROR values");
    return { kind: ERRORS[kind] ?? `kind${kind}`, kindCode: kind, stage, errno, value, detail: detail.toString("utf8"), detailBytes: detail };
  },
  started(p) {
    const r = new R(p);
    const m = { pid: r.u32(), pgid: r.u32() };
    r.end();
    if (m.pid < 2 || m.pgid < 2) throw new ProtocolError("STARTED pid");
    return m;
  },
  exitHead(r) {
    const how = r.u8();
    const signal = r.u8();
    const flags = r.u8();
    if (r.u8() !== 0) throw new ProtocolError("exit reserved");
    const code = r.i32();
    if (how === 0 ? signal !== 0 || code < 0 || code > 255 : how !== 1 || signal < 1 || signal > 64 || code !== 128 + signal)
      throw new ProtocolError(`inconsistent exit ${how}/${signal}/${code}`);
    return { signaled: how === 1, signal, code, flags, timedOut: !!(flags & 1), cancelled: !!(flags & 2), outputCut: !!(flags & 4) };
  },
  exited(p) {
    const r = new R(p);
    const m = dec.exitHead(r);
    r.end();
    return m;
  },
  execResult(p) {
    const r = new R(p);
    const m = dec.exitHead(r);
    m.outBytes = Number(r.u64());
    m.errBytes = Number(r.u64());
    m.durationUs = Number(r.u64());
    r.end();
    return m;
  },
  readResult(p) {
    const r = new R(p);
    const m = { bytes: Number(r.u64()), mode: r.u32(), flags: r.u32(), mtimeNs: r.i64() };
    r.end();
    m.truncated = !!(m.flags & 1);
    return m;
  },
  writeResult(p) {
    const r = new R(p);
    const m = { bytes: Number(r.u64()), mode: r.u32() };
    r.end();
    return m;
  },
  mkdirResult(p) {
    const r = new R(p);
    const m = { created: r.u8() };
    r.end();
    return m;
  },
  listResult(p) {
    const r = new R(p);
    const m = { count: r.u32(), flags: r.u32() };
    r.end();
    m.truncated = !!(m.flags & 1);
    return m;
  },
  entries(p) {
    const out = [];
    const r = new R(p);
    while (r.o < p.length) {
      const type = r.u8();
      if (r.u8() !== 0) throw new ProtocolError("entry reserved");
      const n = r.u16();
      const mode = r.u32();
      const size = Number(r.u64());
      const mtimeNs = r.i64();
      if (n === 0 || n > 255) throw new ProtocolError(`name of ${n} bytes`);
      if (type > 4) throw new ProtocolError(`entry type ${type}`);
      r.need(n);
      const name = Buffer.from(p.subarray(r.o, r.o + n));
      r.o += n;
      if (name.includes(0) || name.includes(0x2f)) throw new ProtocolError("NUL or / in a name");
      out.push({ type: ENT[type], mode, size, mtimeNs, name });
    }
    return out;
  },
  portResult(p) {
    const r = new R(p);
    const m = { found: r.u8(), families: r.u8() };
    if (r.u16() !== 0) throw new ProtocolError("port reserved");
    m.waitedMs = r.u32();
    r.end();
    return m;
  },
  signalResult(p) {
    const r = new R(p);
    const m = { delivered: r.u8() };
    r.u8();
    r.u16();
    m.count = r.u32();
    r.end();
    return m;
  },
  aliveResult(p) {
    const r = new R(p);
    const m = { alive: r.u8() };
    r.u8();
    r.u16();
    m.members = r.u32();
    m.zombies = r.u32();
    r.end();
    return m;
  },
};
