// The agent's lifetime and the commands it leaves behind: host silence (heartbeat) and end
// of input end every command but detached ones; detached commands keep running (and keep
// writing: no SIGPIPE) after the agent exits, and a new agent can stop them with SIGNAL and
// see them with GROUP_ALIVE; nothing is left as a zombie; signals to the agent.
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Agent, HANG, waitFor } from "./lib/agent.js";
import { isAlive, killQuietly, waitGone, zombiesOf, childrenOf } from "./lib/procs.js";
import { tempWorkdir, variants } from "./lib/variants.js";
import { S } from "./lib/wire.js";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startedPid(req) {
  while (!req.started && !req.finished) await sleep(5);
  assert.ok(req.started, `not started: ${JSON.stringify(req.error)}`);
  return req.started.pid;
}

// The host's longest silence so far was a heartbeat or more: an agent that ended then was
// right to, and the attempt says nothing (a machine too slow for that heartbeat).
function hostFellSilent(agent, heartbeatMs) {
  return agent.maxSendGap >= heartbeatMs;
}

// Whatever a failed test left running ends with the file.
after(() => Agent.killAll());

for (const v of variants()) {
  describe(`lifetime [${v.name}]`, () => {
    let wd;
    const leftovers = [];
    before(() => {
      wd = tempWorkdir();
    }, HANG);
    after(() => {
      for (const pid of leftovers) killQuietly(-pid);
      wd.cleanup();
    }, HANG);

    test("host silence past the heartbeat ends commands, not detached ones", HANG, async () => {
      // The commands must all run before the host falls silent: PINGs keep the agent up
      // while they start (any byte counts). Should the host itself fall silent for a whole
      // heartbeat meanwhile (a machine too slow for it), the same again with twice as long.
      let hb = 400;
      let agent, plain, tree, detached;
      for (;;) {
        agent = await Agent.start(v, { workdir: wd.dir, heartbeatMs: hb });
        const keepAlive = setInterval(() => agent.ping(), hb / 8);
        plain = agent.exec({ argv: ["sleep", "100"] });
        tree = agent.exec({ argv: ["sh", "-c", "sleep 100 & echo $!; wait"] });
        detached = agent.exec({ argv: ["sleep", "100"], detached: true });
        for (const r of [plain, tree, detached]) while (!r.started && !r.finished) await sleep(5);
        if (detached.started) leftovers.push(detached.started.pid);
        while (!tree.text() && !tree.finished) await tree.waitData();
        clearInterval(keepAlive);
        if (!agent.exited && tree.text()) break;
        assert.ok(hostFellSilent(agent, hb), `exited while pinged: ${JSON.stringify(agent.exited)} ${agent.stderr}`);
        await agent.exit;
        hb *= 2;
      }
      const [p1, p2, pd] = [plain, tree, detached].map((r) => r.started.pid);
      const grandchild = Number(tree.text());
      // From here on the host sends nothing. A second agent, with ten times the heartbeat
      // and the same commands, falls silent after it: it must outlive the first, which a
      // busy machine slows down as much.
      const silentSince = agent.lastSentAt;
      const control = await Agent.start(v, { workdir: wd.dir, heartbeatMs: 10 * hb });
      control.exec({ argv: ["sleep", "100"] });
      control.exec({ argv: ["sh", "-c", "sleep 100 & echo $!; wait"] });
      const st = await agent.exit;
      const took = performance.now() - silentSince;
      const controlExited = control.exited;
      assert.equal((await control.close()).code, controlExited ? 2 : 0);
      assert.equal(st.code, 2, `exit ${JSON.stringify(st)} ${agent.stderr}`);
      assert.ok(took >= 0.75 * hb, `exited after ${took.toFixed(0)} ms of silence, heartbeat ${hb} ms`);
      assert.equal(controlExited, undefined, `an agent with a heartbeat of ${10 * hb} ms ended first`);
      assert.ok(await waitGone(p1), "plain command survived");
      assert.ok(await waitGone(p2), "tree leader survived");
      assert.ok(await waitGone(grandchild), "grandchild survived");
      assert.ok(isAlive(pd), "the detached command was ended");
      agent.checkClean();
      // The commands that were ended got their RESULT on the way out.
      assert.equal(plain.lostAgent ?? false, false);
      assert.ok(plain.raw, "RESULT before exiting");
      // A new agent sees the detached group and stops it.
      const again = await Agent.start(v, { workdir: wd.dir });
      let a = await again.alive(pd);
      assert.equal(a.result.alive, 1);
      assert.equal(a.result.members, 1);
      const s = await again.signal(pd, 15);
      assert.equal(s.result.delivered, 1);
      assert.ok(await waitGone(pd), "SIGNAL did not stop the detached command");
      a = await again.alive(pd);
      assert.equal(a.result.alive, 0);
      await again.close();
    });

    test("PINGs keep a heartbeat agent alive", HANG, async () => {
      // PINGs a seventh of a heartbeat apart for over two heartbeats, and on while a command
      // runs. Should the host itself fall silent for a heartbeat (a machine too slow for
      // it: the gaps between its sends are measured), the same again with twice as long.
      for (let hb = 700; ; hb *= 2) {
        const agent = await Agent.start(v, { workdir: wd.dir, heartbeatMs: hb });
        let pinging = true;
        const pinger = (async () => {
          while (pinging && !agent.exited) {
            await agent.ping();
            await sleep(hb / 7);
          }
        })();
        const since = performance.now();
        while (performance.now() - since < (hb * 15) / 7 && !agent.exited) await sleep(hb / 7);
        const exitedWhilePinged = agent.exited;
        const r = await agent.run({ argv: ["echo", "alive"] });
        pinging = false;
        await pinger;
        const st = await agent.close();
        if ((exitedWhilePinged || st.code !== 0) && hostFellSilent(agent, hb)) continue;
        assert.equal(exitedWhilePinged, undefined, "exited while pinged");
        assert.equal(r.text(), "alive\n");
        assert.equal(st.code, 0);
        break;
      }
    });

    test("end of input ends commands; detached ones keep running and writing", HANG, async () => {
      const agent = await Agent.start(v, { workdir: wd.dir });
      const plain = agent.exec({ argv: ["sh", "-c", "sleep 100 & wait"] });
      const ticks = join(wd.dir, "ticks");
      const detached = agent.exec({
        argv: ["sh", "-c", `i=0; while :; do echo tick $i; echo tick $i >&2; i=$((i+1)); echo $i > ${ticks}; sleep 0.02; done`],
        detached: true,
      });
      const [pp, pd] = [await startedPid(plain), await startedPid(detached)];
      leftovers.push(pd);
      while (detached.bytes[S.OUT] === 0) await detached.waitData();
      const st = await agent.close();
      assert.equal(st.code, 0);
      assert.ok(await waitGone(pp));
      // The detached command goes on writing with nobody reading the agent's side: its
      // count moves on (or it dies, and the test says so), however long that takes here.
      const readTicks = async () => {
        for (;;) {
          let s = "";
          try {
            s = readFileSync(ticks, "utf8");
          } catch {}
          if (s.endsWith("\n")) return Number(s); // not between its truncation and write
          await sleep(5);
        }
      };
      const n1 = await readTicks();
      await waitFor(async () => !isAlive(pd) || (await readTicks()) > n1 + 3);
      const n2 = await readTicks();
      assert.ok(isAlive(pd), "the detached command died after the agent left (SIGPIPE?)");
      assert.ok(n2 > n1 + 3, `ticks ${n1} -> ${n2}`);
      // Tree signal from a new agent: TERM, frozen first, continued after.
      const again = await Agent.start(v, { workdir: wd.dir });
      const s = await again.signal(pd, 15, true);
      assert.equal(s.result.delivered, 1);
      assert.ok(s.result.count >= 1);
      assert.ok(await waitGone(pd), "tree SIGNAL did not stop it");
      await again.close();
    });

    test("no zombies: orphans of finished commands are reaped", { ...HANG, skip: v.emulated && "qemu-user has no PR_SET_CHILD_SUBREAPER" }, async () => {
      const agent = await Agent.start(v, { workdir: wd.dir });
      // Orphans that run until told to end (a file appears), so they are all still there
      // when counted, however slow the machine.
      const go = join(wd.dir, "orphans-go");
      const orphan = `sh -c 'while [ ! -e ${go} ]; do sleep 0.05; done' >/dev/null 2>&1`;
      for (let i = 0; i < 10; i++) {
        const r = await agent.run({ cwd: "/", argv: ["sh", "-c", `(${orphan} &) ; ${orphan} & exit 0`] });
        assert.equal(r.result.code, 0);
      }
      // The orphans were reparented to the agent (the subreaper); once they exit, none stays a zombie.
      const orphaned = childrenOf(agent.pid).length;
      writeFileSync(go, "");
      await waitFor(() => childrenOf(agent.pid).length === 0);
      assert.deepEqual(zombiesOf(agent.pid), []);
      assert.deepEqual(childrenOf(agent.pid), []);
      assert.ok(orphaned > 0, "the orphans were not the agent's (subreaper)");
      await agent.close();
    });

    test("SIGNAL and GROUP_ALIVE refuse pgid <= 1 and the agent's own group", HANG, async () => {
      const agent = await Agent.start(v, { workdir: wd.dir });
      for (const pgid of [0, 1, -5]) {
        assert.equal((await agent.signal(pgid, 9)).error.kind, "invalid");
        assert.equal((await agent.alive(pgid)).error.kind, "invalid");
      }
      assert.equal((await agent.signal(agent.hello.pid, 9)).error.kind, "invalid");
      // A group that does not exist: not delivered, not alive.
      const gone = 4194000;
      assert.equal((await agent.signal(gone, 15)).result.delivered, 0);
      assert.equal((await agent.signal(gone, 15, true)).result.delivered, 0);
      assert.equal((await agent.alive(gone)).result.alive, 0);
      await agent.close();
      assert.equal(agent.exited.code, 0);
    });

    test(
      "as a non-root user: files are the user's, and its commands cannot reach the agent through /proc",
      { ...HANG, skip: (process.getuid() !== 0 || !existsSync("/usr/bin/setpriv")) && "needs root and setpriv" },
      async () => {
        const dir = join(wd.dir, "nobody");
        chmodSync(wd.dir, 0o711);
        mkdirSync(dir, { mode: 0o777 });
        chmodSync(dir, 0o777);
        const agent = await Agent.start(v, {
          workdir: dir,
          prefix: ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
        });
        assert.equal(agent.hello.uid, 65534);
        const pid = agent.hello.pid;
        const r = await agent.run({
          argv: ["sh", "-c", `ls /proc/${pid}/fd >/dev/null 2>&1; echo $?; (echo x > /proc/${pid}/fd/0) 2>/dev/null; echo $?`],
        });
        assert.deepEqual(r.text().trim().split("\n"), ["2", "2"], "the agent's descriptors were reachable");
        const w = await agent.write("sub/owned.txt", "x");
        assert.equal(w.error, null);
        assert.equal(statSync(join(dir, "sub", "owned.txt")).uid, 65534);
        assert.equal(statSync(join(dir, "sub")).uid, 65534);
        assert.ok(await agent.ping(), "the agent is intact");
        assert.equal((await agent.close()).code, 0);
      },
    );

    test("SIGTERM to the agent ends its commands, and it exits", HANG, async () => {
      const agent = await Agent.start(v, { workdir: wd.dir });
      const r = agent.exec({ argv: ["sleep", "100"] });
      const pid = await startedPid(r);
      agent.child.kill("SIGTERM");
      const st = await agent.exit;
      assert.equal(st.code, 4);
      assert.ok(await waitGone(pid));
      await r.done;
      agent.checkClean();
    });
  });
}
