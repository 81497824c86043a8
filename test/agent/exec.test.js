// EXEC through the agent, spawned directly on the host (no Docker): argv, environment,
// cwd, stdin, exit codes and signal deaths, spawn failures as typed errors, timeouts and
// cancellation ending whole process trees, frame order, and request bounds.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG, waitFor } from "./lib/agent.js";
import { isAlive, killQuietly, waitGone } from "./lib/procs.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { dec, enc, S, T } from "./lib/wire.js";

const readPids = (file) => {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  describe(`exec [${v.name}]`, () => {
    let wd;
    let agent;
    before(async () => {
      wd = tempWorkdir();
      agent = await Agent.start(v, {
        workdir: wd.dir,
        env: { ...v.env, FROM_AGENT: "agent", OVERRIDE_ME: "old", ANVIA_AGENT_SECRET: "must-not-leak" },
      });
    }, HANG);
    after(async () => {
      const st = await agent.close();
      assert.equal(st.code, 0, agent.stderr);
      assert.deepEqual(agent.strays, []);
      wd.cleanup();
    }, HANG);

    test("HELLO describes the agent", HANG, () => {
      assert.equal(agent.hello.versionMin, 1);
      assert.equal(agent.hello.versionMax, 1);
      assert.equal(agent.hello.maxData, 65536);
      assert.equal(agent.hello.maxPayload, 1 << 20);
      assert.equal(agent.hello.uid, process.getuid());
      assert.match(agent.hello.build, /^[0-9a-f]{16}$/);
      assert.equal(agent.hello.arch, v.name === "aarch64" ? "aarch64" : "x86_64");
      if (!v.emulated) {
        assert.equal(agent.hello.pid, agent.pid);
        assert.ok(agent.hello.caps & 2, "subreaper");
      }
      assert.ok(agent.hello.caps & 4, "/proc");
    });

    test("argv reaches the command verbatim", HANG, async () => {
      const args = ["two words", "", "it's", '"quoted"', "$HOME", "*", "ünïcødé €", "a\nb", "--flag=x", "\t"];
      const r = await agent.run({ argv: ["printf", "[%s]", ...args] });
      assert.equal(r.error, null);
      assert.equal(r.result.code, 0);
      assert.equal(r.text(), args.map((a) => `[${a}]`).join(""));
    });

    test("environment: inherited, overridden, added; nothing of the agent's own", HANG, async () => {
      const r = await agent.run({ argv: ["cat", "/proc/self/environ"], env: ["OVERRIDE_ME=new", "ADDED=1", "EQ=a=b", "ADDED=2"] });
      assert.equal(r.result.code, 0);
      const env = r.text().split("\0").filter(Boolean);
      assert.ok(env.includes("FROM_AGENT=agent"));
      assert.ok(env.includes("OVERRIDE_ME=new"));
      assert.ok(!env.includes("OVERRIDE_ME=old"));
      assert.ok(env.includes("ADDED=2") && !env.includes("ADDED=1"), "the last override wins");
      assert.ok(env.includes("EQ=a=b"));
      assert.ok(!env.some((e) => e.startsWith("ANVIA_AGENT_")), "the agent's variables do not leak");
      // Exactly the agent's environment plus the overrides: nothing added by the agent.
      const expected = Object.entries({ ...v.env, FROM_AGENT: "agent", OVERRIDE_ME: "new" })
        .filter(([k]) => !k.startsWith("ANVIA_AGENT_"))
        .map(([k, val]) => `${k}=${val}`)
        .concat(["ADDED=2", "EQ=a=b"]);
      assert.deepEqual([...env].sort(), [...new Set(expected)].sort());
    });

    test("cwd: absolute, the workdir by default, typed errors when unusable", HANG, async () => {
      let r = await agent.run({ argv: ["pwd"], cwd: "/tmp" });
      assert.equal(r.text(), "/tmp\n");
      r = await agent.run({ argv: ["pwd"] });
      assert.equal(r.text(), `${wd.dir}\n`);
      r = await agent.run({ argv: ["pwd"], cwd: "relative" });
      assert.equal(r.error.kind, "invalid");
      r = await agent.run({ argv: ["pwd"], cwd: "/nonexistent/dir" });
      assert.equal(r.error.kind, "spawn_failed");
      assert.equal(r.error.stage, 1);
      assert.equal(r.error.errno, 2);
      assert.equal(r.error.detail, "/nonexistent/dir");
      writeFileSync(join(wd.dir, "afile"), "x");
      r = await agent.run({ argv: ["pwd"], cwd: join(wd.dir, "afile") });
      assert.equal(r.error.kind, "spawn_failed");
      assert.equal(r.error.errno, 20); // ENOTDIR
    });

    test("spawn failures are typed errors, distinct from the command's own failure", HANG, async () => {
      let r = await agent.run({ argv: ["no-such-command-xyz"] });
      assert.equal(r.error.kind, "spawn_failed");
      assert.equal(r.error.stage, 2);
      assert.equal(r.error.errno, 2);
      assert.equal(r.error.value, 1n, "found by a PATH search");
      assert.equal(r.error.detail, "no-such-command-xyz");
      assert.equal(r.started, null, "no STARTED for a command that never ran");
      r = await agent.run({ argv: ["/nonexistent/x"] });
      assert.equal(r.error.errno, 2);
      assert.equal(r.error.value, 0n);
      writeFileSync(join(wd.dir, "notexec"), "#!/bin/sh\necho hi\n");
      chmodSync(join(wd.dir, "notexec"), 0o644);
      r = await agent.run({ argv: [join(wd.dir, "notexec")] });
      assert.equal(r.error.kind, "spawn_failed");
      assert.equal(r.error.errno, 13); // EACCES
      r = await agent.run({ argv: ["/tmp"] });
      assert.equal(r.error.errno, 13);
      // Not found on a PATH that the command's environment sets.
      r = await agent.run({ argv: ["sh", "-c", "true"], env: ["PATH=/nonexistent"] });
      assert.equal(r.error.kind, "spawn_failed");
      // Found on PATH but not a program: ENOEXEC, naming the path found (the engine prints
      // "exec <path>: exec format error" there).
      mkdirSync(join(wd.dir, "bin"), { recursive: true });
      writeFileSync(join(wd.dir, "bin", "garbage"), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7]));
      chmodSync(join(wd.dir, "bin", "garbage"), 0o755);
      r = await agent.run({ argv: ["garbage"], env: [`PATH=/nonexistent:${join(wd.dir, "bin")}`] });
      assert.equal(r.error.kind, "spawn_failed");
      assert.equal(r.error.errno, 8); // ENOEXEC
      assert.equal(r.error.value, 3n, "searched, and the detail is the path found");
      assert.equal(r.error.detail, join(wd.dir, "bin", "garbage"));
      r = await agent.run({ argv: [join(wd.dir, "bin", "garbage")] });
      assert.equal(r.error.errno, 8);
      assert.equal(r.error.value, 0n);
      // The command's own failure is a RESULT.
      r = await agent.run({ argv: ["sh", "-c", "no-such-command-xyz"] });
      assert.equal(r.error, null);
      assert.equal(r.result.code, 127);
    });

    test("stdin: none reads end-of-file at once; streamed bytes arrive whole", HANG, async () => {
      let r = await agent.run({ argv: ["cat"] });
      assert.equal(r.result.code, 0);
      assert.equal(r.bytes[S.OUT], 0);
      const big = Buffer.alloc(3 * 1024 * 1024 + 17);
      for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 12)) & 0xff;
      r = await agent.run({ argv: ["cat"], stdin: big });
      assert.equal(r.result.code, 0);
      assert.ok(r.buffer().equals(big), "stdout equals stdin");
      r = await agent.run({ argv: ["sh", "-c", "read a; read b; echo \"$b-$a\""], stdin: "one\ntwo\n" });
      assert.equal(r.text(), "two-one\n");
    });

    test("stdin to a command that exits without reading: the command's result", HANG, async () => {
      const r = await agent.run({ argv: ["true"], stdin: Buffer.alloc(8 * 1024 * 1024, 0x61) });
      assert.equal(r.error, null);
      assert.equal(r.result.code, 0);
    });

    test("exit codes, and signal deaths as 128 + signal", HANG, async () => {
      for (const code of [0, 1, 42, 255]) {
        const r = await agent.run({ argv: ["sh", "-c", `echo out; echo err >&2; exit ${code}`] });
        assert.equal(r.result.code, code);
        assert.equal(r.result.signaled, false);
        assert.equal(r.text(), "out\n");
        assert.equal(r.text(S.ERR), "err\n");
        assert.equal(r.result.outBytes, 4);
        assert.equal(r.result.errBytes, 4);
        assert.equal(r.exited.code, code);
      }
      let r = await agent.run({ argv: ["sh", "-c", "kill -TERM $$"] });
      assert.equal(r.result.signaled, true);
      assert.equal(r.result.signal, 15);
      assert.equal(r.result.code, 143);
      r = await agent.run({ argv: ["sh", "-c", "kill -KILL $$"] });
      assert.equal(r.result.code, 137);
      assert.equal(r.result.signal, 9);
    });

    test("frame order: STARTED, output, EXITED, RESULT; pid is the group", HANG, async () => {
      const r = await agent.run({ argv: ["sh", "-c", "echo $$; ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat"] });
      assert.equal(r.events[0], T.STARTED);
      assert.equal(r.events.at(-1), T.RESULT);
      const ei = r.events.indexOf(T.EXITED);
      assert.ok(ei > 0 && ei < r.events.length - 1);
      const [pid, pgid] = r.text().trim().split(/\s+/).map(Number);
      assert.equal(r.started.pid, pid);
      assert.equal(r.started.pgid, pid);
      assert.equal(pgid, pid, "each command leads its own group");
      assert.ok(r.result.durationUs > 0);
    });

    test("a command with background output: RESULT waits for the streams to close", HANG, async () => {
      const t0 = Date.now();
      const r = await agent.run({ argv: ["sh", "-c", "echo first; (sleep 0.3; echo late) &"] });
      assert.equal(r.text(), "first\nlate\n");
      assert.ok(Date.now() - t0 >= 250);
      const ei = r.events.indexOf(T.EXITED);
      assert.ok(r.events.lastIndexOf(`DATA${S.OUT}`) > ei, "output after EXITED, before RESULT");
    });

    test("timeout ends the whole tree, backgrounded and re-grouped grandchildren included", HANG, async () => {
      const script = (pidfile) =>
        [
          `sleep 100 & echo $! >> ${pidfile}`,
          `(trap '' TERM; sleep 100) & echo $! >> ${pidfile}`,
          // a grandchild that leaves the group but keeps its parent
          `sh -c 'setsid sleep 100 & echo $! >> ${pidfile}; wait' &`,
          // a grandchild whose parent exits (orphaned, reparented to the agent)
          `sh -c 'sleep 100 >/dev/null 2>&1 & echo $! >> ${pidfile}' &`,
          "sleep 100",
        ].join("\n");
      // The timeout must come once the whole tree runs: on a machine too slow to build it
      // within the timeout, the same again with twice the timeout.
      let timeoutMs = 600;
      for (;;) {
        const pidfile = join(wd.dir, `pids-timeout-${timeoutMs}`);
        const t0 = Date.now();
        const req = agent.exec({ argv: ["sh", "-c", script(pidfile)], timeoutMs });
        // The same tree with ten times the timeout, sent just after: the timeout ends the
        // first one before that one's comes, however busy the machine (both wait alike).
        const controlPids = join(wd.dir, `pids-control-${timeoutMs}`);
        const control = agent.exec({ argv: ["sh", "-c", script(controlPids)], timeoutMs: 10 * timeoutMs });
        const r = await req.done;
        const took = Date.now() - t0;
        const controlFirst = control.finished && control.finishSeq < r.finishSeq;
        agent.send(enc.cancel(control.id));
        await control.done;
        const pids = readPids(pidfile);
        for (const pid of readPids(controlPids)) killQuietly(pid);
        if (pids.length < 4 && timeoutMs < 60_000) {
          for (const pid of pids) assert.ok(await waitGone(pid), `process ${pid} survived the timeout`);
          timeoutMs *= 2;
          continue;
        }
        r.result = dec.execResult(r.raw);
        assert.equal(r.error, null);
        assert.equal(r.result.timedOut, true);
        assert.equal(r.result.signaled, true);
        assert.equal(r.result.signal, 9);
        assert.equal(r.result.code, 137);
        assert.ok(took >= timeoutMs - 50, `took ${took} ms of a timeout of ${timeoutMs} ms`);
        assert.equal(controlFirst, false, `a timeout of ${10 * timeoutMs} ms ended its tree first`);
        assert.equal(pids.length, 4);
        for (const pid of pids) assert.ok(await waitGone(pid), `process ${pid} survived the timeout`);
        assert.ok(!isAlive(r.started.pid));
        break;
      }
    });

    test("timeout ends a tree whose leader already exited but whose child holds the output", HANG, async () => {
      // The leader must exit before the timeout comes: on a machine too slow for that, the
      // same again with twice the timeout.
      let r;
      for (let timeoutMs = 400; ; timeoutMs *= 2) {
        r = await agent.run({ argv: ["sh", "-c", "sleep 100 & echo started"], timeoutMs });
        if (!r.result?.signaled || timeoutMs >= 60_000) break;
      }
      assert.equal(r.result.timedOut, true);
      assert.equal(r.result.signaled, false, "the leader exited by itself");
      assert.equal(r.result.code, 0);
      assert.equal(r.text(), "started\n");
    });

    test("CANCEL ends the tree and reports cancelled", HANG, async () => {
      const pidfile = join(wd.dir, "pids-cancel");
      const req = agent.exec({ argv: ["sh", "-c", `sleep 100 & echo $! > ${pidfile}; echo ready; wait`] });
      while (!req.text().includes("ready")) await req.waitData();
      agent.send(enc.cancel(req.id));
      await req.done;
      const res = dec.execResult(req.raw);
      assert.equal(res.cancelled, true);
      assert.equal(res.code, 137);
      assert.ok(await waitGone(Number(readFileSync(pidfile, "utf8"))));
    });

    test("many commands at once", HANG, async () => {
      const reqs = [];
      for (let i = 0; i < 40; i++) reqs.push(agent.run({ argv: ["sh", "-c", `echo ${i}; exit ${i % 7}`] }));
      const done = await Promise.all(reqs);
      done.forEach((r, i) => {
        assert.equal(r.text(), `${i}\n`);
        assert.equal(r.result.code, i % 7);
      });
    });

    test("bounds: argc, NUL bytes, env entries, duplicate ids", HANG, async () => {
      let r = await agent.run({ argv: Array.from({ length: 4097 }, () => "x") });
      assert.equal(r.error.kind, "limit");
      r = await agent.run({ argv: ["echo", "a\0b"] });
      assert.equal(r.error.kind, "invalid");
      r = await agent.run({ argv: ["true"], env: ["NOEQUALS"] });
      assert.equal(r.error.kind, "invalid");
      r = await agent.run({ argv: ["true"], env: ["=x"] });
      assert.equal(r.error.kind, "invalid");
      r = await agent.run({ argv: [""] });
      assert.equal(r.error.kind, "invalid");
      // An argument of 128 KiB is over the bound; 100 KiB is not.
      r = await agent.run({ argv: ["printf", "%s", "y".repeat(131072)] });
      assert.equal(r.error.kind, "limit");
      r = await agent.run({ argv: ["printf", "%s", "y".repeat(100000)] });
      assert.equal(r.result.code, 0);
      assert.equal(r.bytes[S.OUT], 100000);
    });

    test("an id in flight cannot be reused: duplicate_id, the first request goes on", HANG, async () => {
      // The first command waits for its input, which comes only after the refusal: it is
      // in flight when the second EXEC comes, however slow the machine.
      const first = agent.exec({ argv: ["sh", "-c", "read x; echo done"], stdin: "stream" });
      while (!first.started) await new Promise((r) => setTimeout(r, 5));
      agent.send(enc.exec(first.id, { argv: ["true"] }));
      await first.done;
      assert.equal(first.error?.kind, "duplicate_id");
      agent.send(enc.data(first.id, "go\n", true));
      // The first command's own frames still come, under the same id, after it.
      await waitFor(() => agent.strays.some((f) => f.id === first.id && f.type === T.RESULT));
      const late = agent.strays.filter((f) => f.id === first.id);
      assert.ok(late.some((f) => f.type === T.RESULT), "the first request still ends with its RESULT");
      agent.strays = agent.strays.filter((f) => f.id !== first.id);
    });
  });
}
