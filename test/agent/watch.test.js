// WATCH through the agent (the agent run locally over pipes, a temporary workdir): records
// for creations, modifications, deletions and moves in nested new directories, the top
// level only without `recursive`, symbolic links reported and never followed, the same
// path errors as LIST, CANCEL, the directory's own end (RESULT root_gone), max_watches,
// credit (never a byte more than granted, whole records in every frame) and a burst of
// 10,000 files (every create or an overflow record, never a hang).
//
// Every wait ends on an event. What a step changed is checked against a barrier: after
// the step, a new file is made at the top of the watched directory, and the step's records
// are the ones before that file's create (inotify reports in order, and whatever a late
// watch missed the agent reports as created when it adds the watch, also before it).
import assert from "node:assert/strict";
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG } from "./lib/agent.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { enc, frame, MAX_WATCHES, S, T, WATCH_MAX } from "./lib/wire.js";

after(() => Agent.killAll());

const has = (recs, type, kind, name) => recs.some((e) => e.type === type && e.kind === kind && e.name === name);
const indexOf = (recs, type, name) => recs.findIndex((e) => e.type === type && e.name === name);

for (const v of variants()) {
  describe(`watch [${v.name}]`, () => {
    let wd;
    let agent;
    let outside;
    before(async () => {
      wd = tempWorkdir();
      outside = join(wd.dir, "outside");
      mkdirSync(outside);
      mkdirSync(join(wd.dir, "work"));
      agent = await Agent.start(v, { workdir: join(wd.dir, "work") });
    }, HANG);
    after(async () => {
      const st = await agent.close();
      assert.equal(st.code, 0, agent.stderr);
      assert.deepEqual(agent.strays, []);
      wd.cleanup();
    }, HANG);
    const W = (...p) => join(wd.dir, "work", ...p);

    // A watch that is in place: the PONG after it says the agent has taken the request.
    async function watch(path, opts) {
      const r = agent.watch(path, opts);
      assert.ok(await agent.ping());
      assert.equal(r.error, null);
      return r;
    }

    let seq = 0;
    // Runs fn, then makes a barrier file at the top of the watched directory `top` and
    // waits for its create: the records in between (without the barrier's).
    async function step(r, top, fn = () => {}) {
      const from = r.records().length;
      fn();
      const name = `${top ? `${top}/` : ""}.barrier-${seq++}`;
      writeFileSync(W(name), "");
      const seen = await r.until(() => indexOf(r.records(), "create", name) >= from);
      assert.ok(seen, `barrier ${name}: ${r.error?.kind ?? "the watch ended"}`);
      const recs = r.records();
      return recs.slice(from, indexOf(recs, "create", name)).filter((e) => !e.name.includes(".barrier-"));
    }

    async function cancel(r) {
      agent.send(enc.cancel(r.id));
      await r.done;
      assert.equal(r.error?.kind, "cancelled");
    }

    test("recursive: create, modify, delete and moves in nested new directories", HANG, async () => {
      mkdirSync(W("tree"));
      const r = await watch("tree", { recursive: true });

      let recs = await step(r, "tree", () => {
        mkdirSync(W("tree/a/b/c"), { recursive: true });
        writeFileSync(W("tree/a/b/c/f.txt"), "");
      });
      for (const d of ["tree/a", "tree/a/b", "tree/a/b/c"]) assert.ok(has(recs, "create", "directory", d), d);
      assert.ok(has(recs, "create", "file", "tree/a/b/c/f.txt"), JSON.stringify(recs));

      recs = await step(r, "tree", () => appendFileSync(W("tree/a/b/c/f.txt"), "more"));
      assert.ok(has(recs, "modify", "file", "tree/a/b/c/f.txt"), JSON.stringify(recs));

      // A file moved within the tree: its old name, then its new one.
      recs = await step(r, "tree", () => renameSync(W("tree/a/b/c/f.txt"), W("tree/a/b/g.txt")));
      const from = indexOf(recs, "rename", "tree/a/b/c/f.txt");
      const to = indexOf(recs, "create", "tree/a/b/g.txt");
      assert.ok(from >= 0 && to > from, JSON.stringify(recs));
      assert.equal(recs[from].kind, "file");

      // A directory moved within the tree: its watch follows it.
      recs = await step(r, "tree", () => renameSync(W("tree/a/b/c"), W("tree/a/c2")));
      assert.ok(has(recs, "rename", "directory", "tree/a/b/c"), JSON.stringify(recs));
      assert.ok(has(recs, "create", "directory", "tree/a/c2"), JSON.stringify(recs));
      recs = await step(r, "tree", () => writeFileSync(W("tree/a/c2/h"), ""));
      assert.ok(has(recs, "create", "file", "tree/a/c2/h"), JSON.stringify(recs));
      assert.ok(!recs.some((e) => e.name.startsWith("tree/a/b/c")), JSON.stringify(recs));

      recs = await step(r, "tree", () => {
        unlinkSync(W("tree/a/c2/h"));
        rmdirSync(W("tree/a/c2"));
      });
      assert.ok(has(recs, "delete", "file", "tree/a/c2/h"), JSON.stringify(recs));
      assert.ok(has(recs, "delete", "directory", "tree/a/c2"), JSON.stringify(recs));

      // Moved out: a rename alone, and what happens to it afterwards is not reported.
      recs = await step(r, "tree", () => renameSync(W("tree/a/b"), join(outside, "gone-b")));
      assert.ok(has(recs, "rename", "directory", "tree/a/b"), JSON.stringify(recs));
      assert.ok(!recs.some((e) => e.type === "create"), JSON.stringify(recs));
      recs = await step(r, "tree", () => writeFileSync(join(outside, "gone-b", "later"), ""));
      assert.deepEqual(recs, []);

      // Moved in, with contents: created, and what it holds is reported and watched.
      mkdirSync(join(outside, "incoming", "sub"), { recursive: true });
      writeFileSync(join(outside, "incoming", "sub", "file"), "");
      recs = await step(r, "tree", () => renameSync(join(outside, "incoming"), W("tree/a/in")));
      assert.ok(has(recs, "create", "directory", "tree/a/in"), JSON.stringify(recs));
      assert.ok(has(recs, "create", "directory", "tree/a/in/sub"), JSON.stringify(recs));
      assert.ok(has(recs, "create", "file", "tree/a/in/sub/file"), JSON.stringify(recs));
      recs = await step(r, "tree", () => writeFileSync(W("tree/a/in/sub/new"), ""));
      assert.ok(has(recs, "create", "file", "tree/a/in/sub/new"), JSON.stringify(recs));

      // Raw names: a newline, invalid UTF-8.
      const odd = Buffer.concat([Buffer.from(W("tree/a/in") + "/x\n"), Buffer.from([0xff, 0xfe])]);
      recs = await step(r, "tree", () => writeFileSync(odd, ""));
      const want = Buffer.concat([Buffer.from("tree/a/in/x\n"), Buffer.from([0xff, 0xfe])]);
      assert.ok(recs.some((e) => e.type === "create" && e.path.equals(want)), JSON.stringify(recs));
      await cancel(r);
    });

    test("the workdir itself: paths without a leading /", HANG, async () => {
      const r = await watch("", { recursive: false });
      const recs = await step(r, "", () => writeFileSync(W("top-file"), ""));
      assert.ok(has(recs, "create", "file", "top-file"), JSON.stringify(recs));
      await cancel(r);
    });

    test("not recursive: the top level only", HANG, async () => {
      mkdirSync(W("flat/old"), { recursive: true });
      const r = await watch("flat");
      let recs = await step(r, "flat", () => {
        mkdirSync(W("flat/sub"));
        writeFileSync(W("flat/sub/inner"), "");
        writeFileSync(W("flat/old/inner"), "");
        writeFileSync(W("flat/top"), "x");
      });
      assert.ok(has(recs, "create", "directory", "flat/sub"), JSON.stringify(recs));
      assert.ok(has(recs, "create", "file", "flat/top"), JSON.stringify(recs));
      assert.ok(!recs.some((e) => e.name.includes("inner")), JSON.stringify(recs));
      recs = await step(r, "flat", () => appendFileSync(W("flat/sub/inner"), "y"));
      assert.deepEqual(recs, []);
      await cancel(r);
    });

    test("symbolic links are reported as files and never followed", HANG, async () => {
      mkdirSync(W("links"));
      mkdirSync(join(outside, "target"));
      symlinkSync(join(outside, "target"), W("links/pre"));
      symlinkSync("/etc", W("links/etc"));
      const r = await watch("links", { recursive: true });
      let recs = await step(r, "links", () => symlinkSync(join(outside, "target"), W("links/new")));
      assert.ok(has(recs, "create", "file", "links/new"), JSON.stringify(recs));
      // A directory moved in that holds a link out: the link is a file, not walked.
      mkdirSync(join(outside, "box"));
      symlinkSync(join(outside, "target"), join(outside, "box", "l"));
      recs = await step(r, "links", () => renameSync(join(outside, "box"), W("links/box")));
      assert.ok(has(recs, "create", "directory", "links/box"), JSON.stringify(recs));
      assert.ok(has(recs, "create", "file", "links/box/l"), JSON.stringify(recs));
      // Changes in the target, directly and through each link: none reported.
      recs = await step(r, "links", () => {
        writeFileSync(join(outside, "target", "secret-1"), "");
        writeFileSync(W("links/new/secret-2"), "");
        writeFileSync(W("links/pre/secret-3"), "");
        writeFileSync(W("links/box/l/secret-4"), "");
        mkdirSync(join(outside, "target", "d"));
        writeFileSync(join(outside, "target", "d", "secret-5"), "");
      });
      assert.deepEqual(recs, []);
      await cancel(r);
    });

    test("paths outside the workdir or through a symbolic link: the errors LIST gives", HANG, async () => {
      mkdirSync(W("perr/real"), { recursive: true });
      writeFileSync(W("perr/file"), "");
      symlinkSync(outside, W("perr/out"));
      symlinkSync("real", W("perr/rlink"));
      for (const path of ["../outside", "/etc", join(wd.dir, "outside"), "perr/../../x", "perr/out", "perr/out/sub",
        "perr/rlink", "perr/rlink/x", "perr/file", "perr/missing/x", "x".repeat(256), "a/".repeat(300)]) {
        const r = agent.watch(path);
        await r.done;
        const l = await agent.list(path);
        assert.ok(r.error, `${path}: no error`);
        assert.equal(r.error.kind, l.error.kind, path);
        assert.equal(r.error.detail, l.error.detail, path);
      }
      const kinds = {};
      for (const path of ["../outside", "perr/out", "perr/file", "perr/missing/x"]) kinds[path] = (await agent.watch(path).done).error.kind;
      assert.deepEqual(kinds, { "../outside": "outside", "perr/out": "symlink", "perr/file": "not_directory", "perr/missing/x": "not_found" });
    });

    test("fields out of range and cut payloads: typed errors, the agent goes on", HANG, async () => {
      const bad = [
        [{ path: "", flags: 2 }, "invalid"],
        [{ path: "", maxWatches: 0 }, "invalid"],
        [{ path: "", maxWatches: MAX_WATCHES + 1 }, "limit"],
        [{ path: "", window: 0x80000000 }, "invalid"],
        [{ path: "a\0b" }, "invalid"],
        [{ path: "x".repeat(4097) }, "limit"],
      ];
      for (const [opts, kind] of bad) {
        const r = await agent.watch(opts.path, opts).done;
        assert.equal(r.error?.kind, kind, JSON.stringify(opts));
      }
      const full = enc.watch(1, { path: "", maxWatches: 4 });
      const payload = full.subarray(12);
      for (let cut = 0; cut < payload.length; cut++) {
        const r = await agent.request((id) => frame(T.WATCH, id, payload.subarray(0, cut))).done;
        assert.ok(["protocol", "invalid", "limit"].includes(r.error?.kind), `cut at ${cut}: ${r.error?.kind}`);
      }
      const r = await agent.request((id) => frame(T.WATCH, id, Buffer.concat([payload, Buffer.from([0])]))).done;
      assert.equal(r.error?.kind, "protocol");
      assert.ok(await agent.ping());
    });

    test("its directory deleted or moved away: RESULT root_gone after the records before it", HANG, async () => {
      mkdirSync(W("victim/sub"), { recursive: true });
      const r = await watch("victim", { recursive: true });
      await step(r, "victim", () => writeFileSync(W("victim/sub/f"), ""));
      rmSync(W("victim"), { recursive: true });
      await r.done;
      assert.equal(r.error, null);
      assert.deepEqual(r.result, { events: r.records().length, flags: 1, rootGone: true, limit: false });
      assert.ok(has(r.records(), "delete", "file", "victim/sub/f"), JSON.stringify(r.records()));
      assert.ok(has(r.records(), "delete", "directory", "victim/sub"), JSON.stringify(r.records()));
      assert.equal(r.events.at(-1), T.RESULT);

      mkdirSync(W("mover"));
      const m = await watch("mover");
      renameSync(W("mover"), join(outside, "moved-away"));
      await m.done;
      assert.equal(m.error, null);
      assert.equal(m.result.rootGone, true);
      assert.equal(m.result.limit, false);
    });

    test("max_watches: directories past it are not watched, and the RESULT says so", HANG, async () => {
      for (const d of ["s1", "s2", "s3"]) mkdirSync(W("lim", d), { recursive: true });
      const r = await watch("lim", { recursive: true, maxWatches: 2 });
      let recs = await step(r, "lim", () => {
        for (const d of ["s1", "s2", "s3"]) writeFileSync(W("lim", d, "f"), "");
      });
      const watched = ["s1", "s2", "s3"].filter((d) => has(recs, "create", "file", `lim/${d}/f`));
      assert.ok(watched.length <= 1, JSON.stringify(recs));
      recs = await step(r, "lim", () => {
        mkdirSync(W("lim/new"));
        writeFileSync(W("lim/new/f"), "");
      });
      assert.ok(has(recs, "create", "directory", "lim/new"), JSON.stringify(recs));
      assert.ok(!recs.some((e) => e.name.startsWith("lim/new/")), JSON.stringify(recs));
      rmSync(W("lim"), { recursive: true });
      await r.done;
      assert.equal(r.result.rootGone, true);
      assert.equal(r.result.limit, true);
      // One watch, not recursive: the bound is never reached.
      mkdirSync(W("one"));
      const o = await watch("one", { maxWatches: 1 });
      await step(o, "one", () => mkdirSync(W("one/d")));
      rmSync(W("one"), { recursive: true });
      await o.done;
      assert.equal(o.result.limit, false);
    });

    test("credit: never a byte more than granted, whole records in every frame", HANG, async () => {
      mkdirSync(W("credit"));
      const r = await watch("credit", { window: 0, autoCredit: false });
      let granted = 0;
      let over = 0;
      // Checked as each frame arrives, before any later grant.
      const handle = r.handle.bind(r);
      r.handle = (f) => {
        handle(f);
        if (f.type === T.DATA && r.bytes[S.OUT] > granted) over++;
      };
      const names = [];
      for (let i = 0; i < 200; i++) names.push(`credit/${String(i).padStart(3, "0")}-${"n".repeat(i % 150)}`);
      for (const n of names) writeFileSync(W(n), "");
      // Credit in slices smaller than most records, one slice per round trip: a record
      // waits until its whole size is granted.
      const done = () => names.every((n) => has(r.records(), "create", "file", n)) || r.finished;
      while (!done()) {
        granted += 37;
        agent.send(enc.window(r.id, S.OUT, 37));
        assert.ok(await agent.ping());
      }
      const frames = r.chunks[S.OUT].map((c) => c.length);
      assert.equal(over, 0, `${r.bytes[S.OUT]} bytes received of ${granted} granted`);
      assert.ok(r.bytes[S.OUT] <= granted);
      assert.ok(!r.records().some((e) => e.type === "overflow"));
      assert.ok(frames.length > 20, `${frames.length} frames`);
      assert.ok(frames.every((n) => n <= WATCH_MAX), JSON.stringify(frames));
      await cancel(r);
    });

    test("modifications not yet read are one record", HANG, async () => {
      mkdirSync(W("coalesce"));
      writeFileSync(W("coalesce/f"), "");
      const r = await watch("coalesce", { window: 0, autoCredit: false });
      for (let i = 0; i < 100; i++) appendFileSync(W("coalesce/f"), "x");
      agent.send(enc.window(r.id, S.OUT, 1 << 20));
      const recs = await step(r, "coalesce");
      assert.deepEqual(recs.map((e) => `${e.type} ${e.name}`), ["modify coalesce/f"]);
      await cancel(r);
    });

    for (const mode of ["a large window", "small credit granted slowly"]) {
      test(`10,000 files in a burst, ${mode}: every create or an overflow record`, HANG, async (t) => {
        const dir = `burst-${mode.split(" ")[0]}`;
        mkdirSync(W(dir));
        const slow = mode.startsWith("small");
        const r = await watch(dir, slow ? { window: WATCH_MAX, autoCredit: false } : {});
        let stop = false;
        const granter = slow
          ? (async () => {
              let credited = 0;
              while (!stop && !r.finished) {
                await r.until(() => stop || r.bytes[S.OUT] > credited);
                await new Promise((resolve) => setImmediate(resolve));
                const n = Math.min(r.bytes[S.OUT] - credited, WATCH_MAX);
                if (n > 0) {
                  credited += n;
                  agent.send(enc.window(r.id, S.OUT, n));
                }
              }
            })()
          : Promise.resolve();
        const N = 10000;
        for (let i = 0; i < N; i++) writeFileSync(W(dir, `f${i}`), "");
        const names = new Set();
        let overflow = false;
        let decoded = 0;
        const complete = () => {
          const recs = r.records();
          for (; decoded < recs.length; decoded++) {
            if (recs[decoded].type === "overflow") overflow = true;
            else if (recs[decoded].type === "create") names.add(recs[decoded].name);
          }
          return overflow || names.size >= N;
        };
        assert.ok(await r.until(complete), r.error?.kind ?? "the watch ended");
        if (!overflow) for (let i = 0; i < N; i++) assert.ok(names.has(`${dir}/f${i}`), `f${i}`);
        // Still watching afterwards.
        await step(r, dir);
        stop = true;
        r.dataWaiters.splice(0).forEach((w) => w());
        await granter;
        await cancel(r);
        t.diagnostic(`${names.size} creates, overflow ${overflow}, ${r.chunks[S.OUT].length} frames`);
      });
    }

    test("more events than the kernel queues, read only afterwards: one overflow record", HANG, async () => {
      let queued = 16384;
      try {
        queued = Number(readFileSync("/proc/sys/fs/inotify/max_queued_events", "utf8"));
      } catch {}
      const N = queued + 500;
      if (N > 200000) return; // a kernel configured with a huge queue: nothing to show
      mkdirSync(W("kq"));
      const r = await watch("kq", { window: 0, autoCredit: true });
      for (let i = 0; i < N; i++) writeFileSync(W("kq", `f${i}`), "");
      agent.send(enc.window(r.id, S.OUT, 1 << 20));
      // The overflow is the last event the kernel kept: once it is here the queue has been
      // read, and a barrier's event can be queued again.
      assert.ok(await r.until(() => r.records().some((e) => e.type === "overflow")), r.error?.kind);
      const recs = r.records().slice();
      assert.equal(recs.filter((e) => e.type === "overflow").length, 1);
      assert.equal(recs.at(-1).type, "overflow");
      assert.ok(recs.length >= queued - 1, `${recs.length} records`);
      assert.deepEqual(await step(r, "kq"), []);
      await cancel(r);
    });

    test("a directory moved in with more than the record buffer holds: its creates, then an overflow", HANG, async () => {
      mkdirSync(W("big"));
      mkdirSync(join(outside, "many"));
      for (let i = 0; i < 5000; i++) writeFileSync(join(outside, "many", `file-${String(i).padStart(4, "0")}`), "");
      const r = await watch("big", { recursive: true, window: 4096 });
      const recs = await step(r, "big", () => renameSync(join(outside, "many"), W("big/many")));
      assert.ok(has(recs, "create", "directory", "big/many"), JSON.stringify(recs.slice(0, 3)));
      const overflow = recs.findIndex((e) => e.type === "overflow");
      assert.ok(overflow > 1000, `overflow at ${overflow} of ${recs.length}`);
      assert.equal(recs.filter((e) => e.type === "overflow").length, 1);
      assert.ok(recs.slice(1, overflow).every((e) => e.type === "create" && e.name.startsWith("big/many/file-")));
      // Still watched, and its watch is in place.
      const after = await step(r, "big", () => writeFileSync(W("big/many/later"), ""));
      assert.ok(has(after, "create", "file", "big/many/later"), JSON.stringify(after));
      await cancel(r);
    });

    test("the agent's exit ends a watch with ERROR shutdown", HANG, async () => {
      mkdirSync(W("shut"));
      const a = await Agent.start(v, { workdir: W() });
      const r = a.watch("shut", { recursive: true });
      assert.ok(await a.ping());
      const st = await a.close();
      await r.done;
      assert.equal(st.code, 0, a.stderr);
      assert.equal(r.error?.kind, "shutdown");
      assert.deepEqual(a.strays, []);
    });
  });
}
