// TERM_* through the agent (the agent run locally over pipes, a temporary workdir and
// terminals' directory): a shell session in a pty (prompt, echo, exit code), `stty size`
// before and after TERM_RESIZE, ^C interrupting the foreground job and not the shell, a
// terminal that outlives its agent and is attached from another with its scrollback
// replayed, back-pressure (an attached consumer that grants credit slowly gets every byte,
// in order), a terminal with no consumer that overwrites its scrollback (the offsets say
// so), TERM_SIGNAL ending a program that ignores SIGHUP, TERM_LIST, and the errors: an
// unknown id, an id in use, an invalid id, a command that cannot start, a terminals'
// directory that is not the agent's user's alone.
//
// Every wait ends on an event (output that arrives, a RESULT) or on a state polled until
// it holds (a process in the foreground), never on a timer of its own.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG, waitFor } from "./lib/agent.js";
import { allProcs, isAlive } from "./lib/procs.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { enc, S, TERM } from "./lib/wire.js";

after(() => Agent.killAll());

const SH = "/bin/sh";
const IO = TERM.OUTPUT | TERM.INPUT;

// The foreground process group of the terminal whose session is `sid`, from /proc.
function tpgid(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[5]);
  } catch {
    return null;
  }
}
function comm(pid) {
  try {
    return readFileSync(`/proc/${pid}/comm`, "latin1").trim();
  } catch {
    return null;
  }
}

for (const v of variants()) {
  describe(`terminals [${v.name}]`, () => {
    let wd;
    let termDir;
    let agent;
    let seq = 0;
    const newId = () => `t${process.pid}-${v.name}-${seq++}`;
    const start = () => Agent.start(v, { workdir: join(wd.dir, "work"), args: ["--term-dir", termDir] });
    before(async () => {
      wd = tempWorkdir();
      mkdirSync(join(wd.dir, "work"));
      termDir = join(wd.dir, "terms");
      mkdirSync(termDir, { mode: 0o700 });
      agent = await start();
    }, HANG);
    after(async () => {
      // Whatever a failed test left running ends with its keeper's linger.
      const list = await agent.termList();
      for (const id of list.result ?? []) await agent.termSignal(id, 9);
      const st = await agent.close();
      assert.equal(st.code, 0, agent.stderr);
      assert.deepEqual(agent.strays, []);
      wd.cleanup();
    }, HANG);

    // An interactive shell with a prompt of its own, attached for output and input.
    function shell(a = agent, extra = {}) {
      const termId = newId();
      const r = a.termOpen({ termId, argv: [SH, "-i"], env: ["PS1=P> ", "ENV="], flags: IO, ...extra });
      return { termId, r };
    }
    const waitText = (r, text, from = 0) => r.until(() => r.output().subarray(from).includes(text));

    test("a shell session: prompt, echo, exit code, every byte at its offset", HANG, async () => {
      const { r } = shell();
      assert.ok(await waitText(r, "P> "), r.error?.detail);
      assert.ok(r.started.pid > 1);
      await r.sendInput("echo hi-$((1+2))\n", { end: false });
      assert.ok(await waitText(r, "hi-3\r\n"));
      await r.sendInput("exit 7\n", { end: false });
      await r.done;
      assert.equal(r.error, null);
      assert.equal(r.result.ended, true);
      assert.equal(r.result.how, 0);
      assert.equal(r.result.code, 7);
      const recs = r.records();
      assert.equal(recs[0].offset, 0);
      assert.equal(r.output().length, r.result.head);
      assert.ok(!isAlive(r.started.pid));
    });

    test("stty size before and after TERM_RESIZE", HANG, async () => {
      const { termId, r } = shell(agent, { cols: 80, rows: 24 });
      assert.ok(await waitText(r, "P> "));
      await r.sendInput("stty size\n", { end: false });
      assert.ok(await waitText(r, "24 80\r\n"));
      const rs = await agent.termResize(termId, 132, 43);
      assert.equal(rs.error, null);
      assert.equal(rs.result.cols, 132);
      assert.equal(rs.result.rows, 43);
      assert.equal(rs.result.ended, false);
      const from = r.output().length;
      await r.sendInput("stty size\n", { end: false });
      assert.ok(await waitText(r, "43 132\r\n", from));
      await r.sendInput("exit\n", { end: false });
      await r.done;
      assert.equal(r.result.code, 0);
    });

    test("^C interrupts the foreground job, not the shell", HANG, async () => {
      const { r } = shell();
      assert.ok(await waitText(r, "P> "));
      await r.sendInput("sleep 100\n", { end: false });
      const sid = r.started.pid;
      // The sleep in the foreground: its group is the terminal's foreground group.
      const sleeper = await waitFor(() => allProcs().find((p) => p.session === sid && comm(p.pid) === "sleep" && tpgid(p.pid) === p.pgrp));
      const from = r.output().length;
      await r.sendInput("\x03", { end: false });
      await waitFor(() => !isAlive(sleeper.pid));
      await r.sendInput("echo alive-$((6*7))\n", { end: false });
      assert.ok(await waitText(r, "alive-42\r\n", from));
      assert.ok(isAlive(sid));
      await r.sendInput("exit 3\n", { end: false });
      await r.done;
      assert.equal(r.result.code, 3);
    });

    test("a terminal outlives its agent; another attaches and replays the scrollback", HANG, async () => {
      const first = await start();
      const { termId, r } = shell(first);
      assert.ok(await waitText(r, "P> "));
      await r.sendInput("echo before-$((2*21))\n", { end: false });
      assert.ok(await waitText(r, "before-42\r\n"));
      const st = await first.close();
      assert.equal(st.code, 0, first.stderr);
      assert.ok(isAlive(r.started.pid), "the program outlived the agent");

      const second = await start();
      assert.ok((await second.termList()).result.includes(termId));
      const a = second.termAttach({ termId, flags: IO, since: 0 });
      assert.ok(await waitText(a, "before-42\r\n"));
      assert.equal(a.started.pid, r.started.pid);
      assert.equal(a.records()[0].offset, 0);
      await a.sendInput("echo after-$((3*3))\n", { end: false });
      assert.ok(await waitText(a, "after-9\r\n"));
      // An attachment from an offset gets the bytes from there.
      const at = a.output().indexOf("after-");
      const b = second.termAttach({ termId, flags: TERM.OUTPUT, since: at });
      assert.ok(await waitText(b, "after-9"));
      assert.equal(b.records()[0].offset, at);
      await a.sendInput("exit 4\n", { end: false });
      await Promise.all([a.done, b.done]);
      assert.equal(a.result.code, 4);
      assert.equal(b.result.code, 4);
      assert.equal(b.result.head, a.result.head);
      // Once ended, a WAIT attachment answers at once with the exit.
      const w = await second.termAttach({ termId, flags: TERM.WAIT }).done;
      assert.equal(w.result.ended, true);
      assert.equal(w.result.code, 4);
      assert.equal((await second.close()).code, 0, second.stderr);
    });

    test("an attached consumer that grants credit slowly gets every byte, in order", HANG, async () => {
      const termId = newId();
      const lines = 200000; // about 1.3 MiB through a 64 KiB scrollback
      const r = agent.termOpen({
        termId,
        argv: [SH, "-c", `stty -echo; seq 1 ${lines}`],
        flags: TERM.OUTPUT,
        scrollback: 65536,
        window: 4096,
        autoCredit: false,
      });
      let got = 0;
      const hash = createHash("sha256");
      while (!r.finished) {
        const recs = r.chunks[S.OUT];
        if (got < recs.length) {
          const n = recs.slice(got).reduce((s, c) => s + c.length, 0);
          got = recs.length;
          // Slow: credit a frame at a time, after a turn of the event loop.
          await new Promise((res) => setImmediate(res));
          agent.send(enc.window(r.id, S.OUT, n));
        } else {
          await r.waitData();
        }
      }
      await r.done;
      assert.equal(r.error, null, r.error?.detail);
      const out = r.output();
      assert.equal(r.records()[0].offset, 0);
      hash.update(out);
      const expected = createHash("sha256");
      const want = [];
      for (let i = 1; i <= lines; i++) want.push(`${i}\r\n`);
      expected.update(want.join(""));
      assert.equal(out.length, r.result.head);
      assert.equal(hash.digest("hex"), expected.digest("hex"));
      assert.equal(r.result.code, 0);
    });

    test("with no consumer the scrollback overwrites: the program never waits", HANG, async () => {
      const termId = newId();
      const lines = 100000;
      const open = await agent.termOpen({ termId, argv: [SH, "-c", `seq 1 ${lines}`], flags: 0, scrollback: 16384 }).done;
      assert.equal(open.error, null, open.error?.detail);
      assert.equal(open.result.ended, false);
      const w = await agent.termAttach({ termId, flags: TERM.WAIT }).done;
      assert.equal(w.result.code, 0);
      assert.ok(w.result.head > 16384);
      assert.equal(w.result.tail, w.result.head - 16384);
      const a = await agent.termAttach({ termId, flags: TERM.OUTPUT, since: 0 }).done;
      assert.equal(a.records()[0].offset, w.result.tail, "the first record says where the kept bytes start");
      assert.equal(a.output().length, 16384);
      assert.ok(a.output().toString().endsWith(`${lines}\r\n`));
    });

    test("TERM_SIGNAL ends a program that ignores SIGHUP", HANG, async () => {
      const termId = newId();
      const r = agent.termOpen({ termId, argv: [SH, "-c", "trap '' HUP; echo ready; while :; do sleep 1; done"], flags: IO });
      assert.ok(await waitText(r, "ready"));
      const hup = await agent.termSignal(termId, 1);
      assert.equal(hup.result.delivered, 1);
      assert.ok(isAlive(r.started.pid));
      const kill = await agent.termSignal(termId, 9);
      assert.equal(kill.result.delivered, 1);
      await r.done;
      assert.equal(r.result.how, 1);
      assert.equal(r.result.signal, 9);
      assert.equal(r.result.code, 137);
      // Ended: a signal reaches no one.
      const late = await agent.termSignal(termId, 9);
      assert.equal(late.result.delivered, 0);
    });

    test("errors: unknown id, id in use, invalid id, a command that cannot start", HANG, async () => {
      const none = await agent.termAttach({ termId: "no-such-terminal", flags: TERM.OUTPUT }).done;
      assert.equal(none.error?.kind, "not_found");
      assert.equal((await agent.termResize("no-such-terminal", 10, 10)).error?.kind, "not_found");
      assert.equal((await agent.termSignal("no-such-terminal", 9)).error?.kind, "not_found");
      for (const termId of ["", ".hidden", "a/b", "..", "sp ace", "nul\0"]) {
        const bad = await agent.termOpen({ termId, argv: [SH] }).done;
        assert.equal(bad.error?.kind, "invalid", termId);
      }
      const long = await agent.termOpen({ termId: "x".repeat(65), argv: [SH] }).done;
      assert.equal(long.error?.kind, "limit");
      const { termId, r } = shell();
      assert.ok(await waitText(r, "P> "));
      const dup = await agent.termOpen({ termId, argv: [SH] }).done;
      assert.equal(dup.error?.kind, "invalid");
      assert.match(dup.error.detail, /exists/);
      const missing = await agent.termOpen({ termId: newId(), argv: ["/no/such/program"] }).done;
      assert.equal(missing.error?.kind, "spawn_failed");
      assert.equal(missing.error.detail, "/no/such/program");
      await r.sendInput("exit\n", { end: false });
      await r.done;
    });

    test("a terminals' directory others can write is refused", HANG, async () => {
      const open = join(wd.dir, "open");
      mkdirSync(open);
      chmodSync(open, 0o777);
      const a = await Agent.start(v, { workdir: join(wd.dir, "work"), args: ["--term-dir", open] });
      const r = await a.termOpen({ termId: newId(), argv: [SH] }).done;
      assert.equal(r.error?.kind, "permission");
      assert.equal((await a.termList()).error?.kind, "permission");
      assert.equal((await a.close()).code, 0, a.stderr);
    });
  });
}
