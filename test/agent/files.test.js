// READ, WRITE, MKDIR and LIST through the agent, with openat2 and with the O_NOFOLLOW
// walk (--no-openat2): round trips, typed errors, symlink traps on every component, raw
// names in listings, write atomicity, and a directory <-> symlink swap loop racing writes
// and reads (0 escapes).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG } from "./lib/agent.js";
import { baseEnv, buildDir, tempWorkdir, variants } from "./lib/variants.js";
import { enc, S } from "./lib/wire.js";

const modes = [];
// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  modes.push({ v, args: [], label: `${v.name}` });
  // The fallback walk on the native build too (qemu has no openat2: it always walks).
  if (!v.emulated) modes.push({ v, args: ["--no-openat2"], label: `${v.name} --no-openat2` });
}

// The swap loop in its own process (renameat2 RENAME_EXCHANGE: at every instant race/d is
// either the real directory or a symlink out of the workdir), so it races the agent for real.
const SWAPPER = join(buildDir, "x86_64", "swapper");

for (const { v, args, label } of modes) {
  describe(`files [${label}]`, () => {
    let wd;
    let agent;
    let outside;
    before(async () => {
      wd = tempWorkdir();
      outside = join(wd.dir, "outside");
      mkdirSync(outside);
      writeFileSync(join(outside, "secret"), "SECRET");
      mkdirSync(join(wd.dir, "work"));
      agent = await Agent.start(v, { workdir: join(wd.dir, "work"), args });
    }, HANG);
    after(async () => {
      const st = await agent.close();
      assert.equal(st.code, 0, agent.stderr);
      assert.deepEqual(agent.strays, []);
      wd.cleanup();
    }, HANG);
    const W = (...p) => join(wd.dir, "work", ...p);

    test("HELLO says which resolution is in use", HANG, () => {
      const has2 = (agent.hello.caps & 1) !== 0;
      if (args.includes("--no-openat2") || v.emulated) assert.equal(has2, false);
      else assert.equal(has2, true);
    });

    test("write then read: bytes, mode, parents created", HANG, async () => {
      const data = Buffer.alloc(200000);
      for (let i = 0; i < data.length; i++) data[i] = (i * 31) & 0xff;
      const w = await agent.write("a/b/c/data.bin", data, { mode: 0o600 });
      assert.equal(w.error, null);
      assert.equal(w.result.bytes, data.length);
      assert.ok(readFileSync(W("a/b/c/data.bin")).equals(data));
      assert.equal(statSync(W("a/b/c/data.bin")).mode & 0o7777, 0o600);
      assert.equal(statSync(W("a/b")).mode & 0o777, 0o755);
      const r = await agent.read("a/b/c/data.bin");
      assert.equal(r.error, null);
      assert.ok(r.buffer().equals(data));
      assert.equal(r.result.bytes, data.length);
      assert.equal(r.result.mode & 0o7777, 0o600);
      // default mode 0644, exact (no umask), empty file
      const e = await agent.write("empty", "");
      assert.equal(e.result.bytes, 0);
      assert.equal(statSync(W("empty")).mode & 0o7777, 0o644);
      const re = await agent.read("empty");
      assert.equal(re.result.bytes, 0);
      // overwrite
      await agent.write("a/b/c/data.bin", "short");
      assert.equal(readFileSync(W("a/b/c/data.bin"), "utf8"), "short");
      // no temporary file left behind
      assert.deepEqual(readdirSync(W("a/b/c")), ["data.bin"]);
    });

    test("read: typed errors (not found, directory, fifo, too large with the size)", HANG, async () => {
      writeFileSync(W("big"), Buffer.alloc(5000));
      let r = await agent.read("missing/file");
      assert.equal(r.error.kind, "not_found");
      assert.equal(r.error.detail, "missing");
      r = await agent.read("a");
      assert.equal(r.error.kind, "is_directory");
      execFileSync("mkfifo", [W("fifo")]);
      r = await agent.read("fifo");
      assert.equal(r.error.kind, "not_regular");
      r = await agent.read("big", { maxBytes: 4999 });
      assert.equal(r.error.kind, "too_large");
      assert.equal(r.error.value, 5000n);
      r = await agent.read("big", { maxBytes: 5000 });
      assert.equal(r.result.bytes, 5000);
      r = await agent.read("../outside/secret");
      assert.equal(r.error.kind, "outside");
      r = await agent.read(join(wd.dir, "outside", "secret"));
      assert.equal(r.error.kind, "outside");
      r = await agent.read("x".repeat(256));
      assert.equal(r.error.kind, "limit");
    });

    test("symlinks anywhere on the path are refused, naming the component", HANG, async () => {
      symlinkSync("/etc", W("etc"));
      symlinkSync(outside, W("out"));
      mkdirSync(W("real"));
      writeFileSync(W("real", "file"), "inside");
      symlinkSync("file", W("real", "flink"));
      symlinkSync("/nonexistent/target", W("dangling"));
      symlinkSync("real", W("rlink"));
      let r = await agent.read("etc/passwd");
      assert.equal(r.error.kind, "symlink");
      assert.equal(r.error.detail, "etc");
      r = await agent.read("real/flink");
      assert.equal(r.error.kind, "symlink");
      assert.equal(r.error.detail, "real/flink");
      r = await agent.read("rlink/file");
      assert.equal(r.error.detail, "rlink");
      r = await agent.read("dangling");
      assert.equal(r.error.kind, "symlink");
      // writes: nothing lands outside, the symlink itself is not replaced
      let w = await agent.write("out/planted", "x");
      assert.equal(w.error.kind, "symlink");
      assert.equal(w.error.detail, "out");
      assert.ok(!existsSync(join(outside, "planted")));
      w = await agent.write("out/deeper/planted", "x");
      assert.equal(w.error.kind, "symlink");
      assert.ok(!existsSync(join(outside, "deeper")));
      w = await agent.write("real/flink", "x");
      assert.equal(w.error.kind, "symlink");
      assert.equal(readFileSync(W("real", "file"), "utf8"), "inside");
      assert.ok(lstatSync(W("real", "flink")).isSymbolicLink());
      w = await agent.write("dangling", "x");
      assert.equal(w.error.kind, "symlink");
      assert.ok(!existsSync("/nonexistent/target"));
      // mkdir and list
      let m = await agent.mkdir("out/newdir");
      assert.equal(m.error.kind, "symlink");
      assert.ok(!existsSync(join(outside, "newdir")));
      m = await agent.mkdir("rlink");
      assert.equal(m.error.kind, "symlink");
      const l = await agent.list("out");
      assert.equal(l.error.kind, "symlink");
      const l2 = await agent.list("rlink");
      assert.equal(l2.error.kind, "symlink");
    });

    test("write: a directory target, a length mismatch, cancel: typed, no temp left", HANG, async () => {
      mkdirSync(W("adir"));
      let w = await agent.write("adir", "x");
      assert.equal(w.error.kind, "is_directory");
      writeFileSync(W("keep"), "original");
      w = await agent.write("keep", "abc", { length: 10 });
      assert.equal(w.error.kind, "length_mismatch");
      assert.equal(w.error.value, 3n);
      assert.equal(readFileSync(W("keep"), "utf8"), "original");
      w = await agent.write("keep", "abcdefghijkl", { length: 10 });
      assert.equal(w.error.kind, "length_mismatch");
      assert.equal(readFileSync(W("keep"), "utf8"), "original");
      // cancel midway
      const req = agent.request((id) => enc.write(id, { path: "keep", length: 1000 }));
      agent.send(enc.data(req.id, Buffer.alloc(500, 0x41)));
      agent.send(enc.cancel(req.id));
      await req.done;
      assert.equal(req.error.kind, "cancelled");
      assert.equal(readFileSync(W("keep"), "utf8"), "original");
      assert.deepEqual(readdirSync(W()).filter((n) => n.includes("anvia-agent")), []);
      w = await agent.write("", "x");
      assert.equal(w.error.kind, "is_directory");
    });

    test("mkdir: parents, existing, errors", HANG, async () => {
      let m = await agent.mkdir("m1/m2/m3");
      assert.equal(m.result.created, 1);
      assert.ok(statSync(W("m1/m2/m3")).isDirectory());
      m = await agent.mkdir("m1/m2/m3");
      assert.equal(m.result.created, 0);
      m = await agent.mkdir("n1/n2", { parents: false });
      assert.equal(m.error.kind, "not_found");
      assert.equal(m.error.detail, "n1");
      writeFileSync(W("plainfile"), "");
      m = await agent.mkdir("plainfile", { parents: false });
      assert.equal(m.error.kind, "not_directory");
      m = await agent.mkdir("plainfile/sub");
      assert.equal(m.error.kind, "not_directory");
      m = await agent.mkdir("m1/single", { parents: false, mode: 0o700 });
      assert.equal(m.result.created, 1);
      assert.equal(statSync(W("m1/single")).mode & 0o777, 0o700);
      m = await agent.mkdir("");
      assert.equal(m.result.created, 0);
    });

    test("list: raw names (newline, tab, invalid UTF-8), types, sizes", HANG, async () => {
      mkdirSync(W("names"));
      const names = [
        Buffer.from("plain.txt"),
        Buffer.from("with\nnewline"),
        Buffer.from("tab\there"),
        Buffer.from([0xff, 0xfe, 0x41, 0x0a]),
        Buffer.from("\tfile\tdirectory\t0"),
        Buffer.from("x".repeat(255)),
      ];
      for (const n of names) writeFileSync(Buffer.concat([Buffer.from(W("names") + "/"), n]), "12345");
      mkdirSync(W("names", "sub"));
      symlinkSync("/etc/passwd", W("names", "link"));
      execFileSync("mkfifo", [W("names", "fifo")]);
      const l = await agent.list("names");
      assert.equal(l.error, null);
      assert.equal(l.result.count, names.length + 3);
      assert.equal(l.result.truncated, false);
      const byName = new Map(l.entries.map((e) => [e.name.toString("hex"), e]));
      for (const n of names) {
        const e = byName.get(n.toString("hex"));
        assert.ok(e, `entry ${JSON.stringify(n.toString("latin1"))}`);
        assert.equal(e.type, "file");
        assert.equal(e.size, 5);
      }
      assert.equal(byName.get(Buffer.from("sub").toString("hex")).type, "directory");
      assert.equal(byName.get(Buffer.from("link").toString("hex")).type, "symlink");
      assert.equal(byName.get(Buffer.from("link").toString("hex")).size, 0);
      assert.equal(byName.get(Buffer.from("fifo").toString("hex")).type, "other");
      // the workdir itself, and not-a-directory
      const top = await agent.list("");
      assert.ok(top.entries.some((e) => e.name.toString() === "names"));
      const nd = await agent.list("names/plain.txt");
      assert.equal(nd.error.kind, "not_directory");
    });

    test("list: bounded by max_entries, streamed in several frames", HANG, async () => {
      mkdirSync(W("many"));
      for (let i = 0; i < 3000; i++) writeFileSync(W("many", `file-${String(i).padStart(5, "0")}-${"n".repeat(40)}`), "");
      let l = await agent.list("many", { window: 4096 });
      assert.equal(l.result.count, 3000);
      assert.equal(l.entries.length, 3000);
      assert.ok(l.chunks[S.OUT].length > 20, `${l.chunks[S.OUT].length} frames`);
      for (const c of l.chunks[S.OUT]) assert.ok(c.length <= 4096);
      assert.equal(new Set(l.entries.map((e) => e.name.toString())).size, 3000);
      l = await agent.list("many", { maxEntries: 100 });
      assert.equal(l.result.count, 100);
      assert.equal(l.entries.length, 100);
      assert.equal(l.result.truncated, true);
      l = await agent.list("many", { maxEntries: 3000 });
      assert.equal(l.result.truncated, false);
    });

    test("write atomicity: a concurrent reader never sees a partial file", HANG, async (t) => {
      const size = 256 * 1024;
      const A = Buffer.alloc(size, 0x61);
      const B = Buffer.alloc(size, 0x62);
      await agent.write("atomic.bin", A);
      // An outside reader in its own process, and reads through the agent in between. The
      // reader goes on until a stop file appears; it writes a "." for each of its first
      // reads (a "!" for a partial file), so the writes go on until it has read while they
      // did, however late it started and however slow the machine.
      const stop = W("atomic.stop");
      const checker = spawn(process.execPath, [
        "-e",
        `const fs=require("fs");let n=0,bad=0;
         while(!fs.existsSync(process.argv[2])){let b;try{b=fs.readFileSync(process.argv[1]);}catch{continue;}
         n++;const ok=b.length===${size}&&b.every(x=>x===b[0])&&(b[0]===0x61||b[0]===0x62);if(!ok)bad++;
         if(n<=10||!ok)fs.writeSync(1,ok?".":"!");}
         fs.writeSync(1,"\\n"+JSON.stringify({n,bad}));`,
        W("atomic.bin"),
        stop,
      ]);
      let out = "";
      checker.stdout.on("data", (d) => (out += d));
      let checkerEnded = false;
      const closed = new Promise((r) => checker.on("close", r)).then(() => (checkerEnded = true));
      const outsideReads = () => (out.split("\n")[0].match(/\./g) ?? []).length;
      let writes = 0;
      let agentReads = 0;
      let partial = 0;
      // At least 900 ms, and until each side has read a few times while the writes went
      // on; a partial file seen ends it at once (the assertions below say so), and so does
      // the reader's end. The bound on the writes past the 900 ms only ends a run where
      // reads never succeed, for the assertions to fail.
      const end = Date.now() + 900;
      const enough = () => writes > 5 && agentReads > 5 && outsideReads() > 5;
      let extra = 0;
      while (partial === 0 && !out.includes("!") && !checkerEnded && (Date.now() < end || (!enough() && extra++ < 2000))) {
        const data = writes % 2 ? A : B;
        const [w, r] = await Promise.all([agent.write("atomic.bin", data), agent.read("atomic.bin")]);
        assert.equal(w.error, null);
        writes++;
        if (r.error === null) {
          agentReads++;
          const b = r.buffer();
          if (b.length !== size || !(b.every((x) => x === b[0]))) partial++;
        }
      }
      writeFileSync(stop, "");
      await closed;
      const res = JSON.parse(out.split("\n").at(-1));
      assert.equal(partial, 0);
      assert.equal(res.bad, 0, `outside reader saw ${res.bad} partial files of ${res.n}`);
      assert.ok(writes > 5 && res.n > 5 && agentReads > 5, `${writes} writes, ${res.n} outside reads`);
      t.diagnostic(`${writes} writes of ${size} bytes, ${agentReads} reads through the agent, ${res.n} outside: 0 partial`);
    });

    test("a directory <-> symlink swap racing writes and reads: 0 escapes", HANG, async (t) => {
      const race = join(wd.dir, "work", "race");
      mkdirSync(join(race, "d"), { recursive: true });
      writeFileSync(join(race, "d", "secret"), "inside");
      symlinkSync(outside, join(race, "d.link"));
      // The swapper swaps until its input ends ("0"), and says "running" after 1000 swaps.
      // The writes and reads go on for at least `ms`, and until the race was real: the
      // swapper ran, some operations went through and some were refused, however slow the
      // machine. An escape ends them at once (the assertions below say so), and so does the
      // swapper's end; the bound on the attempts past `ms` only ends a run that never sees
      // a refusal, for the assertions to fail.
      const ms = v.emulated ? 800 : 1200;
      const swapper = spawn(SWAPPER, [race, "0"], { env: baseEnv() });
      let swaps = "";
      swapper.stdout.on("data", (d) => (swaps += d));
      let swapperEnded = false;
      const closed = new Promise((r) => swapper.on("close", r)).then(() => (swapperEnded = true));
      let writesOk = 0;
      let readsOk = 0;
      let escapedReads = 0;
      let attempts = 0;
      const kinds = {};
      const end = Date.now() + ms - 50;
      const real = () => swaps.includes("running\n") && writesOk > 0 && readsOk > 0 && writesOk < attempts;
      const escaped = () => escapedReads > 0 || readdirSync(outside).some((n) => n !== "secret");
      let i = 0;
      let extra = 0;
      while (!escaped() && !swapperEnded && (Date.now() < end || (!real() && extra++ < 5000))) {
        const name = `f${i++}`;
        const [w, r] = await Promise.all([agent.write(`race/d/${name}`, "payload"), agent.read("race/d/secret")]);
        attempts++;
        if (w.error === null) writesOk++;
        else kinds[w.error.kind] = (kinds[w.error.kind] ?? 0) + 1;
        if (r.error === null) {
          readsOk++;
          if (r.text() !== "inside") escapedReads++;
        }
      }
      swapper.stdin.end();
      await closed;
      swaps = swaps.trim().split("\n").at(-1);
      const escapedWrites = readdirSync(outside).filter((n) => n !== "secret");
      assert.deepEqual(escapedWrites, [], "files written through the symlink");
      assert.equal(escapedReads, 0, "reads that returned the outside file");
      assert.equal(readFileSync(join(outside, "secret"), "utf8"), "SECRET");
      // The race was real: the swapper ran, some operations went through and some were refused.
      assert.ok(Number(swaps.split(" ")[0]) > 1000, `swaps ${swaps}`);
      assert.ok(writesOk > 0 && readsOk > 0, `writes ok ${writesOk}, reads ok ${readsOk} of ${attempts}`);
      assert.ok(writesOk < attempts, `refusals: ${JSON.stringify(kinds)}`);
      // Every refusal is one of the path errors, never a crash or a protocol error.
      for (const k of Object.keys(kinds)) assert.ok(["symlink", "not_found", "not_directory"].includes(k), k);
      t.diagnostic(
        `${swaps.split(" ")[0]} swaps; ${attempts} write+read pairs: ${writesOk} writes and ${readsOk} reads went through ` +
          `(inside), refusals ${JSON.stringify(kinds)}; 0 escapes`,
      );
    });
  });
}
