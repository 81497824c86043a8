// A test client of the agent: spawns the binary (directly, or under qemu-aarch64-static)
// with a temporary workdir, speaks the protocol through ./wire.js, and keeps every frame
// of every request so tests can check contents and order. Test-only code.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { dec, enc, EXEC_DETACHED, EXEC_STDIN, IN_WINDOW, MAX_DATA, ProtocolError, S, splitFrames, T } from "./wire.js";

export const SANITIZER_REPORT = /ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:|SUMMARY: (Address|Leak|Undefined)/;

// Every wait in these suites ends on an event (a frame, an exit, a state polled until it
// holds), never on a timer of its own, so a slow machine (qemu, a sanitizer, both CPUs
// busy) only makes a test slower. A genuine hang is caught by this per-test bound. The
// slowest test ("requests in flight are bounded": 1025 waits, each reading /proc/net/tcp,
// slow on some kernels) took 7 s on an idle machine and over 2 minutes with both CPUs
// loaded: the bound leaves room for that several times over.
export const HANG_TIMEOUT_MS = 10 * 60_000;
export const HANG = { timeout: HANG_TIMEOUT_MS };

export class Req {
  // keep: false counts the bytes of DATA without keeping them (an endless stream).
  constructor(agent, id, { autoCredit = true, keep = true } = {}) {
    this.agent = agent;
    this.id = id;
    this.autoCredit = autoCredit;
    this.keep = keep;
    this.events = []; // [type, stream?] in arrival order
    this.chunks = { [S.OUT]: [], [S.ERR]: [] };
    this.bytes = { [S.OUT]: 0, [S.ERR]: 0 };
    this.started = null;
    this.exited = null;
    this.result = null;
    this.error = null;
    this.raw = null;
    this.inCredit = IN_WINDOW;
    this.creditWaiters = [];
    this.dataWaiters = [];
    this.done = new Promise((resolve) => (this.resolve = resolve));
    this.finished = false;
  }
  handle(f) {
    if (this.finished) {
      this.agent.strays.push({ ...f, why: "after the terminal frame" });
      return;
    }
    this.events.push(f.type === T.DATA ? `DATA${f.stream}` : f.type);
    switch (f.type) {
      case T.STARTED:
        this.started = dec.started(f.payload);
        break;
      case T.EXITED:
        this.exited = dec.exited(f.payload);
        break;
      case T.DATA:
        if (this.keep) this.chunks[f.stream].push(Buffer.from(f.payload));
        this.bytes[f.stream] += f.payload.length;
        if (this.autoCredit && f.payload.length) this.agent.send(enc.window(this.id, f.stream, f.payload.length));
        for (const w of this.dataWaiters.splice(0)) w();
        break;
      case T.WINDOW:
        this.inCredit += dec.windowInc(f.payload);
        for (const w of this.creditWaiters.splice(0)) w();
        break;
      case T.RESULT:
        this.raw = Buffer.from(f.payload);
        this.finish();
        break;
      case T.ERROR:
        this.error = dec.error(f.payload);
        this.finish();
        break;
      default:
        throw new ProtocolError(`unexpected frame ${f.type} for a request`);
    }
  }
  finish() {
    this.finished = true;
    this.finishSeq = this.agent.finishCount++; // the order terminal frames arrived in
    this.agent.reqs.delete(this.id);
    for (const w of this.dataWaiters.splice(0)) w();
    this.resolve(this);
  }
  lost() {
    if (this.finished) return;
    this.finished = true;
    this.lostAgent = true;
    this.resolve(this);
  }
  text(stream = S.OUT) {
    return Buffer.concat(this.chunks[stream]).toString("utf8");
  }
  buffer(stream = S.OUT) {
    return Buffer.concat(this.chunks[stream]);
  }
  waitData() {
    return new Promise((resolve) => this.dataWaiters.push(resolve));
  }
  // Waits until pred() holds (checked after every DATA frame) or the request has ended;
  // returns pred()'s last value.
  async until(pred) {
    let v;
    while (!(v = pred()) && !this.finished) await this.waitData();
    return v;
  }
  async waitCredit(n) {
    while (this.inCredit < n && !this.finished) await new Promise((resolve) => this.creditWaiters.push(resolve));
  }
  // Streams bytes on the input stream within the credit the agent grants.
  async sendInput(bytes, { end = true, chunk = MAX_DATA } = {}) {
    let off = 0;
    const buf = Buffer.from(bytes);
    while (off < buf.length && !this.finished) {
      const n = Math.min(chunk, buf.length - off);
      await this.waitCredit(n);
      if (this.finished) return;
      this.inCredit -= n;
      const last = off + n === buf.length;
      this.agent.send(enc.data(this.id, buf.subarray(off, off + n), end && last));
      off += n;
    }
    if (end && buf.length === 0 && !this.finished) this.agent.send(enc.data(this.id, Buffer.alloc(0), true));
  }
}

export class Agent {
  // prefix: a command the agent runs under (e.g. prlimit).
  static async start(variant, { workdir, heartbeatMs = 0, args = [], env, hostHello = true, prefix = [] } = {}) {
    const argv = [...(workdir ? ["--workdir", workdir] : []), "--heartbeat-ms", String(heartbeatMs), ...args];
    const cmd = [...prefix, ...(variant.runner ? [variant.runner] : []), variant.bin, ...argv];
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: env ?? variant.env });
    const agent = new Agent(child, variant);
    Agent.live.add(agent);
    agent.exit.then(() => Agent.live.delete(agent));
    const hello = await agent.helloPromise;
    agent.hello = hello;
    if (hostHello) agent.send(enc.hostHello());
    return agent;
  }

  // Agents still running: a test that fails midway leaves its agent to the after hook,
  // which must end it or the test file never exits.
  static live = new Set();
  static async killAll() {
    const left = [...Agent.live];
    for (const a of left) a.child.kill("SIGKILL");
    await Promise.all(left.map((a) => a.exit));
    return left.length;
  }

  constructor(child, variant) {
    this.child = child;
    this.variant = variant;
    this.pid = child.pid;
    this.reqs = new Map();
    this.pongs = new Map();
    this.strays = [];
    this.connErrors = [];
    this.protocolErrors = [];
    this.nextIdValue = 1;
    this.finishCount = 0;
    // What the host sent when (performance.now()): from the spawn, which is before the
    // agent starts counting host silence, to the last byte or the end of input.
    this.lastSentAt = performance.now();
    this.maxSendGap = 0;
    this.stderr = "";
    this.buf = Buffer.alloc(0);
    this.exit = new Promise((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
    this.helloPromise = new Promise((resolve, reject) => {
      this.helloResolve = resolve;
      this.helloReject = reject;
    });
    child.stdout.on("data", (d) => this.onBytes(d));
    child.stderr.on("data", (d) => (this.stderr += d.toString("latin1")));
    child.stdin.on("error", () => {});
    this.exit.then((st) => {
      this.exited = st;
      this.helloReject(new Error(`agent exited before HELLO: ${JSON.stringify(st)} ${this.stderr}`));
      for (const r of this.reqs.values()) r.lost();
    });
  }

  onBytes(d) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    let frames;
    try {
      ({ frames, rest: this.buf } = splitFrames(this.buf));
    } catch (e) {
      this.protocolErrors.push(e);
      this.buf = Buffer.alloc(0);
      return;
    }
    for (const f of frames) {
      try {
        this.onFrame(f);
      } catch (e) {
        this.protocolErrors.push(e);
      }
    }
  }

  onFrame(f) {
    if (f.type === T.HELLO) {
      this.helloResolve(dec.hello(f.payload));
      return;
    }
    if (f.type === T.ERROR && f.id === 0) {
      this.connErrors.push(dec.error(f.payload));
      return;
    }
    if (f.type === T.PONG) {
      const w = this.pongs.get(f.id);
      if (w) {
        this.pongs.delete(f.id);
        w(Buffer.from(f.payload));
      } else this.strays.push(f);
      return;
    }
    const r = this.reqs.get(f.id);
    if (r) r.handle(f);
    else this.strays.push(f);
  }

  send(buf) {
    if (!this.child.stdin.destroyed && !this.child.stdin.writableEnded) {
      this.markSent();
      this.child.stdin.write(buf);
    }
  }

  markSent() {
    const now = performance.now();
    this.maxSendGap = Math.max(this.maxSendGap, now - this.lastSentAt);
    this.lastSentAt = now;
  }

  id() {
    return this.nextIdValue++;
  }

  request(frameOf, opts = {}) {
    const id = opts.id ?? this.id();
    const r = new Req(this, id, opts);
    if (this.exited) {
      r.lost();
      return r;
    }
    this.reqs.set(id, r);
    this.send(frameOf(id));
    return r;
  }

  // Resolves with the PONG's payload, or null if the agent exits first.
  ping(data = Buffer.from("12345678")) {
    const id = this.id();
    const p = new Promise((resolve) => this.pongs.set(id, resolve));
    this.send(enc.ping(id, data));
    return Promise.race([p, this.exit.then(() => null)]);
  }

  exec({ argv, env, cwd, stdin, timeoutMs, detached = false, window, autoCredit = true, keep = true }) {
    const flags = (detached ? EXEC_DETACHED : 0) | (stdin !== undefined ? EXEC_STDIN : 0);
    const r = this.request((id) => enc.exec(id, { argv, env, cwd, flags, timeoutMs, window }), { autoCredit, keep });
    if (stdin !== undefined && stdin !== null && stdin !== "stream") r.sendInput(stdin);
    return r;
  }

  async run(opts) {
    const r = await this.exec(opts).done;
    if (r.raw) r.result = dec.execResult(r.raw);
    return r;
  }

  async read(path, { maxBytes = 0, window = 1 << 20, autoCredit = true } = {}) {
    const r = await this.request((id) => enc.read(id, { path, maxBytes, window }), { autoCredit }).done;
    if (r.raw) r.result = dec.readResult(r.raw);
    return r;
  }

  async write(path, data, { mode = 0, flags = 0, length } = {}) {
    const buf = Buffer.from(data);
    const r = this.request((id) => enc.write(id, { path, length: length ?? buf.length, mode, flags }));
    r.sendInput(buf);
    await r.done;
    if (r.raw) r.result = dec.writeResult(r.raw);
    return r;
  }

  async mkdir(path, { mode = 0, parents = true } = {}) {
    const r = await this.request((id) => enc.mkdir(id, { path, mode, parents })).done;
    if (r.raw) r.result = dec.mkdirResult(r.raw);
    return r;
  }

  async list(path, { maxEntries = 10000, window = 1 << 20, autoCredit = true } = {}) {
    const r = await this.request((id) => enc.list(id, { path, maxEntries, window }), { autoCredit }).done;
    if (r.raw) r.result = dec.listResult(r.raw);
    r.entries = dec.entries(r.buffer(S.OUT));
    return r;
  }

  // WATCH runs until CANCEL or until its directory goes: the request is returned at once.
  // r.records() is every record so far, each frame decoded on its own (whole records).
  watch(path, { recursive = false, flags, window = 1 << 20, maxWatches = 1024, autoCredit = true } = {}) {
    const r = this.request((id) => enc.watch(id, { path, recursive, flags, window, maxWatches }), { autoCredit });
    const recs = [];
    let decoded = 0;
    r.records = () => {
      const chunks = r.chunks[S.OUT];
      while (decoded < chunks.length) for (const e of dec.wevents(chunks[decoded++])) recs.push(e);
      return recs;
    };
    r.done.then(() => {
      if (r.raw) r.result = dec.watchResult(r.raw);
    });
    return r;
  }

  // TERM_OPEN and TERM_ATTACH run until the terminal ends (or CANCEL, or at once without
  // OUTPUT, INPUT and WAIT): the request is returned at once. r.records() decodes each DATA
  // frame (one record each); r.output() is the bytes from the first record's offset,
  // checked to be contiguous. The RESULT is r.result once r.done settles.
  termOpen(opts) {
    return this.termRequest((id) => enc.termOpen(id, opts), opts);
  }
  termAttach(opts) {
    return this.termRequest((id) => enc.termAttach(id, opts), opts);
  }
  termRequest(frameOf, { autoCredit = true } = {}) {
    const r = this.request(frameOf, { autoCredit });
    r.records = () => r.chunks[S.OUT].map((c) => dec.termRecord(c));
    r.output = () => {
      const recs = r.records();
      for (let i = 1; i < recs.length; i++)
        if (recs[i].offset !== recs[i - 1].offset + recs[i - 1].data.length) throw new Error(`records not contiguous at ${i}`);
      return Buffer.concat(recs.map((x) => x.data));
    };
    r.done.then(() => {
      if (r.raw) r.result = dec.termResult(r.raw);
    });
    return r;
  }
  async termResize(termId, cols, rows) {
    const r = await this.request((id) => enc.termResize(id, { termId, cols, rows })).done;
    if (r.raw) r.result = dec.termResult(r.raw);
    return r;
  }
  async termSignal(termId, signal) {
    const r = await this.request((id) => enc.termSignal(id, { termId, signal })).done;
    if (r.raw) r.result = dec.signalResult(r.raw);
    return r;
  }
  async termList() {
    const r = await this.request((id) => enc.termList(id)).done;
    if (r.raw) r.result = dec.termListResult(r.raw);
    return r;
  }

  async portWait(port, opts = {}) {
    const r = await this.request((id) => enc.portWait(id, { port, ...opts })).done;
    if (r.raw) r.result = dec.portResult(r.raw);
    return r;
  }

  async signal(pgid, signal, tree = false) {
    const r = await this.request((id) => enc.signal(id, { pgid, signal, tree })).done;
    if (r.raw) r.result = dec.signalResult(r.raw);
    return r;
  }

  async alive(pgid) {
    const r = await this.request((id) => enc.groupAlive(id, { pgid })).done;
    if (r.raw) r.result = dec.aliveResult(r.raw);
    return r;
  }

  rssKb() {
    try {
      const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${this.pid}/status`, "utf8"));
      return m ? Number(m[1]) : null;
    } catch {
      return null;
    }
  }

  // Ends the input and waits for the agent to exit. `ms` only bounds a hang: the agent is
  // killed (and the exit status says so) if it has not exited by then.
  async close(ms = HANG_TIMEOUT_MS / 2) {
    if (!this.child.stdin.writableEnded) this.markSent();
    this.child.stdin.end();
    const t = setTimeout(() => this.child.kill("SIGKILL"), ms);
    const st = await this.exit;
    clearTimeout(t);
    this.checkClean();
    return st;
  }

  checkClean() {
    if (SANITIZER_REPORT.test(this.stderr)) throw new Error(`sanitizer report from the agent:\n${this.stderr}`);
    if (this.protocolErrors.length) throw new Error(`invalid frames from the agent: ${this.protocolErrors.map(String).join("; ")}`);
  }
}

// Frames of DATA sent by the host: exported for tests that build their own sequences.
export { enc, dec, S, T };
// Polls `pred` until it holds, however long that takes (the test's own timeout bounds a
// hang): for states that no event announces.
export async function waitFor(pred, { interval = 10 } = {}) {
  for (;;) {
    const v = await pred();
    if (v) return v;
    await new Promise((r) => setTimeout(r, interval));
  }
}
export { once };
