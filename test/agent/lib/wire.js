// A small JavaScript implementation of the agent protocol (src/agent/PROTOCOL.md), for the
// tests only: encoders of the host's frames and strict decoders of the agent's, bounded as
// the host must bound them ("Host obligations"). Every message's layout and bounds come
// from the table the C codec is made from (table.js).
import { camel, table } from "./table.js";

export const HEADER = 12;
export const MAX_PAYLOAD = 1 << 20;
export const MAX_DATA = 65536;
export const IN_WINDOW = 262144;
export const MAX_WINDOW = 0x7fffffff;

// Frame types and error names come from the protocol's table (table.js reads agent_wire.h).
export const T = Object.fromEntries(Object.values(table.types).map((t) => [t.name, t.code]));
export const S = { NONE: 0, IN: 1, OUT: 2, ERR: 3 };
export const F_END = 1;
export const EXEC_DETACHED = 1;
export const EXEC_STDIN = 2;
export const EXITF = { TIMED_OUT: 1, CANCELLED: 2, OUTPUT_CUT: 4, CORE: 8 };
export const ENT = { 0: "unknown", 1: "file", 2: "directory", 3: "symlink", 4: "other" };
// WATCH: the request's flags, the RESULT's flags, the records' types and kinds.
export const WATCH_RECURSIVE = table.constant("AW_WATCH_RECURSIVE");
export const WATCHF = { ROOT_GONE: table.constant("AW_WATCHF_ROOT_GONE"), LIMIT: table.constant("AW_WATCHF_LIMIT") };
export const WATCH_FIXED = table.constant("AW_WATCH_FIXED");
export const WATCH_MAX = table.constant("AW_WATCH_MAX");
export const MAX_WATCHES = table.constant("AW_MAX_WATCHES");
export const WEV = { 1: "create", 2: "modify", 3: "delete", 4: "rename", 5: "overflow" };
export const WKIND = { 0: "none", 1: "file", 2: "directory" };
// TERM_*: the request's flags, the RESULT's flags.
export const TERM = { OUTPUT: table.constant("AW_TERM_OUTPUT"), INPUT: table.constant("AW_TERM_INPUT"), WAIT: table.constant("AW_TERM_WAIT") };
export const TERMF = { ENDED: table.constant("AW_TERMF_ENDED"), CORE: table.constant("AW_TERMF_CORE") };
export const TERM_REC_FIXED = table.constant("AW_TERM_REC_FIXED");
export const ERRORS = table.errors;
const AGENT_TYPES = new Set(Object.values(table.types).filter((t) => t.sender !== "HOST").map((t) => t.code));

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
  i64(v) {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(v));
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

// ---- messages, as the table lays them out ----

// A payload of the table's message `name` from `values` (camelCase members; a missing one
// is 0, or empty). Nothing is checked: the tests send what the agent must refuse, too.
export function encodePayload(name, values = {}) {
  const msg = table.messages.get(name);
  if (!msg) throw new Error(`no message ${name} in the table`);
  const w = new W();
  for (const f of msg.fields) {
    const v = values[camel(f.member)];
    switch (f.kind) {
      case "U8": case "MASK8": w.u8(v ?? 0); break;
      case "ZERO8": w.u8(v ?? 0); break;
      case "U16": case "MASK16": case "ZERO16": w.u16(v ?? 0); break;
      case "U32": case "U32L": case "MASK32": w.u32(v ?? 0); break;
      case "I32": w.i32(v ?? 0); break;
      case "U64": w.u64(v ?? 0); break;
      case "I64": w.i64(v ?? 0); break;
      case "BLOB": w.blob(v ?? ""); break;
      case "ARGV": case "ENVS":
        w.u32((v ?? []).length);
        for (const s of v ?? []) w.blob(s);
        break;
      default: throw new Error(`field kind ${f.kind}`);
    }
  }
  return w.done();
}

// aw_term_id_ok: 1..64 bytes of [A-Za-z0-9._-], not "." first.
export const termIdOk = (id) => /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/.test(Buffer.from(id).toString("latin1"));
const termIdWhy = (id) => (termIdOk(id) ? null : `terminal id ${JSON.stringify(Buffer.from(id).toString("latin1"))}`);

// What no single field says (the table's `check` column), as agent_wire.c has it.
const CHECKS = {
  AW_NO_CHECK: () => null,
  aw_check_hello: (m) => (m.versionMin > m.versionMax || m.maxData > m.maxPayload ? "HELLO versions or sizes" : null),
  aw_check_host_hello: (m) => (m.versionMin > m.versionMax ? "HOST_HELLO versions" : null),
  aw_check_exit: (m) =>
    (m.how === 0 ? m.signal !== 0 || m.flags & EXITF.CORE : m.signal < 1 || m.code !== 128 + m.signal)
      ? `inconsistent exit ${m.how}/${m.signal}/${m.code}`
      : null,
  aw_check_port_wait: (m) => (m.intervalMs !== 0 && m.intervalMs < table.constant("AW_MIN_INTERVAL_MS") ? "interval" : null),
  aw_check_port_result: (m) => ((m.found !== 0) !== (m.families !== 0) ? "found without families" : null),
  aw_check_term_open: (m) => termIdWhy(m.termId),
  aw_check_term_attach: (m) => termIdWhy(m.termId),
  aw_check_term_resize: (m) => termIdWhy(m.termId),
  aw_check_term_signal: (m) => termIdWhy(m.termId),
  aw_check_term_result: (m) => {
    if (m.tail > m.head) return "tail after head";
    if (!(m.flags & TERMF.ENDED)) return m.how || m.signal || m.code || m.flags & TERMF.CORE ? "an exit before the end" : null;
    if (m.how === 0) return m.signal || m.flags & TERMF.CORE ? "inconsistent exit" : null;
    return m.signal < 1 || m.code !== 128 + m.signal ? "inconsistent exit" : null;
  },
  aw_check_term_list_result: (m) => m.ids.map(termIdWhy).find((w) => w) ?? null,
  aw_check_alive_result: (m) => {
    const limit = table.constant("AW_PID_LIMIT");
    const bad = (n) => n !== 0xffffffff && n > limit;
    return bad(m.members) || bad(m.zombies) ? "member counts" : null;
  },
};

// The payload of message `name`, decoded as strictly as the C decoder does: every field
// read, nothing left over, each field's rule, then the check. Blobs are Buffers, lists
// arrays of Buffers, u64 and i64 BigInts.
export function decodePayload(name, payload) {
  const msg = table.messages.get(name);
  if (!msg) throw new Error(`no message ${name} in the table`);
  const r = new R(payload);
  const m = {};
  const zero = [];
  for (const f of msg.fields) {
    const key = camel(f.member);
    switch (f.kind) {
      case "U8": case "MASK8": m[key] = r.u8(); break;
      case "ZERO8": zero.push(r.u8()); break;
      case "U16": case "MASK16": m[key] = r.u16(); break;
      case "ZERO16": zero.push(r.u16()); break;
      case "U32": case "U32L": case "MASK32": m[key] = r.u32(); break;
      case "I32": m[key] = r.i32(); break;
      case "U64": m[key] = r.u64(); break;
      case "I64": m[key] = r.i64(); break;
      case "BLOB": {
        const b = r.blob(f.a);
        if (f.b && b.includes(0)) throw new ProtocolError(`${name}.${f.member}: NUL byte`);
        m[key] = b;
        break;
      }
      case "ARGV": case "ENVS": {
        const n = r.u32();
        if (n > f.b) throw new ProtocolError(`${name}.${f.member}: ${n} strings over ${f.b}`);
        if (n < f.a) throw new ProtocolError(`${name}.${f.member}: ${n} strings under ${f.a}`);
        m[key] = [];
        for (let i = 0; i < n; i++) {
          const s = r.blob(table.constant("AW_MAX_ARG_LEN"));
          if (s.includes(0)) throw new ProtocolError(`${name}.${f.member}: NUL byte`);
          if (f.kind === "ARGV" && i === 0 && s.length === 0) throw new ProtocolError(`${name}.${f.member}: empty first string`);
          if (f.kind === "ENVS" && s.indexOf(0x3d) < 1) throw new ProtocolError(`${name}.${f.member}: not NAME=value`);
          m[key].push(s);
        }
        break;
      }
      default: throw new Error(`field kind ${f.kind}`);
    }
  }
  r.end();
  for (const f of msg.fields) {
    const v = m[camel(f.member)];
    const where = `${name}.${f.member} = ${v}`;
    if (["U8", "U16", "U32", "I32"].includes(f.kind) && (v < f.a || v > f.b)) throw new ProtocolError(`${where} outside ${f.a}..${f.b}`);
    if (f.kind === "U32L" && (v < f.a || v > f.b)) throw new ProtocolError(`${where} outside ${f.a}..${f.b}`);
    if (f.kind.startsWith("MASK") && (v & ~f.a) !== 0) throw new ProtocolError(`${where}: bits outside ${f.a}`);
  }
  if (zero.some((z) => z !== 0)) throw new ProtocolError(`${name}: reserved bytes not zero`);
  const why = CHECKS[msg.check](m);
  if (why) throw new ProtocolError(`${name}: ${why}`);
  return m;
}

const msgFrame = (name, id, values) => frame(T[table.messages.get(name).type], id, encodePayload(name, values));

export const enc = {
  hostHello: (min = 1, max = 1, flags = 0) => msgFrame("host_hello", 0, { versionMin: min, versionMax: max, flags }),
  ping: (id, data = Buffer.alloc(0)) => frame(T.PING, id, Buffer.from(data)),
  cancel: (id) => frame(T.CANCEL, id),
  data: (id, bytes, end = false) => frame(T.DATA, id, Buffer.from(bytes), { stream: S.IN, flags: end ? F_END : 0 }),
  window: (id, stream, inc) => frame(T.WINDOW, id, new W().u32(inc).done(), { stream }),
  exec: (id, { argv, env = [], cwd = "", flags = 0, timeoutMs = 0, window = 1 << 20 }) =>
    msgFrame("exec", id, { flags, timeoutMs, window, cwd, argv, env }),
  read: (id, { path, maxBytes = 0, window = 1 << 20, flags = 0 }) => msgFrame("read", id, { maxBytes, window, flags, path }),
  write: (id, { path, length, mode = 0, flags = 0 }) => msgFrame("write", id, { length, mode, flags, path }),
  mkdir: (id, { path, mode = 0, parents = true }) => msgFrame("mkdir", id, { mode, flags: parents ? 1 : 0, path }),
  list: (id, { path, maxEntries = 10000, window = 1 << 20, flags = 0 }) => msgFrame("list", id, { maxEntries, window, flags, path }),
  portWait: (id, { port, flags = 0, timeoutMs = 0, intervalMs = 0 }) => msgFrame("port_wait", id, { port, flags, timeoutMs, intervalMs }),
  signal: (id, { pgid, signal, tree = false }) => msgFrame("signal", id, { pgid, signal, flags: tree ? 1 : 0 }),
  groupAlive: (id, { pgid }) => msgFrame("group_alive", id, { pgid }),
  watch: (id, { path, recursive = false, flags, window = 1 << 20, maxWatches = 1024 }) =>
    msgFrame("watch", id, { flags: flags ?? (recursive ? WATCH_RECURSIVE : 0), window, maxWatches, path }),
  termOpen: (id, { termId, argv, env = [], cwd = "", flags = 0, window = 1 << 20, cols = 80, rows = 24, scrollback = 1 << 20 }) =>
    msgFrame("term_open", id, { flags, window, cols, rows, scrollback, termId, cwd, argv, env }),
  termAttach: (id, { termId, flags = 0, window = 1 << 20, since = 0 }) => msgFrame("term_attach", id, { flags, window, since, termId }),
  termResize: (id, { termId, cols, rows }) => msgFrame("term_resize", id, { cols, rows, termId }),
  termSignal: (id, { termId, signal }) => msgFrame("term_signal", id, { signal, termId }),
  termList: (id) => msgFrame("term_list", id, { flags: 0 }),
};

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

// The agent's messages as the tests read them (names and units of the tests' own).
const exit = (m) => ({
  signaled: m.how === 1,
  signal: m.signal,
  code: m.code,
  flags: m.flags,
  timedOut: !!(m.flags & EXITF.TIMED_OUT),
  cancelled: !!(m.flags & EXITF.CANCELLED),
  outputCut: !!(m.flags & EXITF.OUTPUT_CUT),
});

export const dec = {
  windowInc(p) {
    const r = new R(p);
    const v = r.u32();
    r.end();
    if (v === 0 || v > MAX_WINDOW) throw new ProtocolError(`WINDOW of ${v}`);
    return v;
  },
  hello(p) {
    const m = decodePayload("hello", p);
    return { ...m, build: m.build.toString("latin1"), arch: m.arch.toString("latin1") };
  },
  error(p) {
    const m = decodePayload("error", p);
    const detail = Buffer.from(m.detail);
    return { kind: ERRORS[m.kind] ?? `kind${m.kind}`, kindCode: m.kind, stage: m.stage, errno: m.err, value: m.value, detail: detail.toString("utf8"), detailBytes: detail };
  },
  started: (p) => decodePayload("started", p),
  exited: (p) => exit(decodePayload("exited", p)),
  execResult(p) {
    const m = decodePayload("exec_result", p);
    return { ...exit(m), outBytes: Number(m.outBytes), errBytes: Number(m.errBytes), durationUs: Number(m.durationUs) };
  },
  readResult(p) {
    const m = decodePayload("read_result", p);
    return { bytes: Number(m.bytes), mode: m.mode, flags: m.flags, mtimeNs: m.mtimeNs, truncated: !!(m.flags & 1) };
  },
  writeResult(p) {
    const m = decodePayload("write_result", p);
    return { bytes: Number(m.bytes), mode: m.mode };
  },
  mkdirResult: (p) => decodePayload("mkdir_result", p),
  listResult(p) {
    const m = decodePayload("list_result", p);
    return { ...m, truncated: !!(m.flags & 1) };
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
  // The records of one WATCH DATA frame, as strictly as aw_wevent_next: whole records only,
  // a path of clean relative components (none empty, "." or ".."; no NUL), none on an
  // overflow. `path` is a Buffer (the raw bytes), `name` its latin1 text.
  wevents(p) {
    const out = [];
    const r = new R(p);
    while (r.o < p.length) {
      const type = r.u8();
      const kind = r.u8();
      const n = r.u16();
      if (!WEV[type]) throw new ProtocolError(`watch record type ${type}`);
      if (!WKIND[kind]) throw new ProtocolError(`watch record kind ${kind}`);
      if (WEV[type] === "overflow") {
        if (n !== 0 || kind !== 0) throw new ProtocolError("overflow record with a path or a kind");
        out.push({ type: "overflow", kind: "none", path: Buffer.alloc(0), name: "" });
        continue;
      }
      if (n === 0 || n > table.constant("AW_MAX_PATH")) throw new ProtocolError(`watch path of ${n} bytes`);
      if (kind === 0) throw new ProtocolError("watch record without a kind");
      r.need(n);
      const path = Buffer.from(p.subarray(r.o, r.o + n));
      r.o += n;
      if (path.includes(0)) throw new ProtocolError("NUL in a watch path");
      for (const c of path.toString("latin1").split("/"))
        if (c === "" || c === "." || c === ".." || c.length > 255) throw new ProtocolError(`watch path ${JSON.stringify(path.toString("latin1"))}`);
      out.push({ type: WEV[type], kind: WKIND[kind], path, name: path.toString("latin1") });
    }
    return out;
  },
  watchResult(p) {
    const m = decodePayload("watch_result", p);
    return { events: Number(m.events), flags: m.flags, rootGone: !!(m.flags & WATCHF.ROOT_GONE), limit: !!(m.flags & WATCHF.LIMIT) };
  },
  termResult(p) {
    const m = decodePayload("term_result", p);
    return { ...m, ended: !!(m.flags & TERMF.ENDED), head: Number(m.head), tail: Number(m.tail) };
  },
  termListResult: (p) => decodePayload("term_list_result", p).ids.map((b) => b.toString("latin1")),
  // One terminal output record (a whole DATA payload): its offset and bytes.
  termRecord(p) {
    if (p.length <= TERM_REC_FIXED) throw new ProtocolError(`terminal record of ${p.length} bytes`);
    return { offset: Number(Buffer.from(p).readBigUInt64BE(0)), data: Buffer.from(p.subarray(TERM_REC_FIXED)) };
  },
  portResult: (p) => decodePayload("port_result", p),
  signalResult: (p) => decodePayload("signal_result", p),
  aliveResult: (p) => decodePayload("alive_result", p),
};
