// The symbolic link race of issue 13, on a real engine, with a sandbox running as
// 1000:1000: a static program inside the sandbox swaps workspace/d (a real directory) and
// workspace/d.link (a symbolic link to /etc) with renameat2(RENAME_EXCHANGE) as fast as it
// can, while the library writes workspace/d/escape-N and reads workspace/d/hostname and
// workspace/d/shadow over and over. Before the fix, 16 writes created /etc/escape-N and
// most reads returned /etc/hostname and /etc/shadow. Now: no file appears in /etc, and
// every read that succeeds returns the workspace's own file. Refusals (a link on the way)
// are expected and counted.
//
// The race is bounded by events, not by a duration: the swapper says when it has swapped
// 1000 times (a marker file), the library then goes on for ROUNDS more rounds of calls, and
// only then tells the swapper to stop. A fixed 10 s once gave a busy machine under gVisor,
// whose renames are slow, 392 swaps and a failure that said nothing about the library.
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec } from "../helpers/docker.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const ROUNDS = 200;
const CAP_MS = 300_000;

// The swapper (test/agent/c/swapper.c), built static so it needs nothing in the image.
function swapperBinary() {
  const out = `${root}build-test/swapper`;
  const src = `${root}test/agent/c/swapper.c`;
  if (!existsSync(out) || statSync(src).mtimeMs > statSync(out).mtimeMs) {
    mkdirSync(`${root}build-test`, { recursive: true });
    execFileSync("cc", ["-static", "-O2", "-o", out, src]);
  }
  return readFileSync(out);
}

const transport = process.env.ANVIA_SANDBOX_TRANSPORT;

test(`a directory <-> /etc link swapped in a loop through 1000 swaps and ${ROUNDS} rounds of calls: no write lands in /etc, no read leaves the workspace`, { timeout: CAP_MS + 90_000 }, async (t) => {
  const client = new DockerSandboxClient();
  const box = await client.createSandbox(baseOptions({ user: "1000:1000", runtime: { commandTimeoutMs: 60_000 } }));
  t.after(() => box.destroy());
  const rt = box.runtime;
  const container = `anvia-sandbox-${box.id}`;
  await rt.writeFile({ path: "swapper", data: swapperBinary() });
  await rt.writeTextFile({ path: "d/hostname", text: "the workspace's hostname\n" });
  await rt.writeTextFile({ path: "d/shadow", text: "the workspace's shadow\n" });
  const setup = await rt.exec({ command: "sh", args: ["-c", "chmod 755 swapper && ln -s /etc d.link && test -f /etc/shadow"] });
  assert.equal(setup.exitCode, 0, Buffer.from(setup.stderr).toString());

  const swapping = rt.exec({ command: "./swapper", args: ["/workspace", "0", "swapper"], timeoutMs: CAP_MS + 30_000 });
  let swapperEnded = false;
  swapping.then(() => (swapperEnded = true), () => (swapperEnded = true));
  const stats = { writes: 0, writesRefused: 0, reads: 0, readsRefused: 0, foreign: [] };
  const refused = (error) => {
    if (!(error instanceof DockerSandboxError)) throw error;
    return error;
  };
  // The marker is read through the engine, as root, so that the check is not one more
  // call of the library in the race.
  const running = async () => (await dockerExec(container, ["sh", "-c", "test -e /workspace/swapper.running && echo yes || true"])).stdout.trim() === "yes";
  const cap = Date.now() + CAP_MS;
  let i = 0;
  let roundsLeft = -1;
  while (roundsLeft !== 0 && !swapperEnded) {
    assert.ok(Date.now() < cap, roundsLeft < 0 ? `the swapper did not swap 1000 times within ${CAP_MS / 1000} s (round ${i})` : `the library did not finish ${ROUNDS} rounds within ${CAP_MS / 1000} s (${roundsLeft} left)`);
    if (roundsLeft < 0 && i % 25 === 0 && (await running())) roundsLeft = ROUNDS;
    if (roundsLeft > 0) roundsLeft--;
    const n = i++;
    const results = await Promise.allSettled([
      rt.writeTextFile({ path: `d/escape-${n}`, text: `escape ${n}\n` }),
      rt.readTextFile({ path: "d/hostname" }),
      rt.readTextFile({ path: "d/shadow" }),
    ]);
    if (results[0].status === "fulfilled") stats.writes++;
    else refused(results[0].reason) && stats.writesRefused++;
    for (const [k, want] of [[1, "the workspace's hostname\n"], [2, "the workspace's shadow\n"]]) {
      const r = results[k];
      if (r.status === "fulfilled") {
        stats.reads++;
        if (r.value !== want) stats.foreign.push(r.value.slice(0, 80));
      } else {
        refused(r.reason);
        stats.readsRefused++;
      }
    }
  }
  assert.ok(!swapperEnded, "the swapper ended before it was told to stop");
  await dockerExec(container, ["sh", "-c", ": > /workspace/swapper.stop"]);
  const swapped = await swapping;
  const [swaps] = Buffer.from(swapped.stdout).toString().trim().split(" ").map(Number);
  t.diagnostic(`swaps ${swaps}; rounds ${i}; ${JSON.stringify({ ...stats, foreign: stats.foreign.length })}; transport ${transport ?? "default"}`);
  assert.equal(swapped.exitCode, 0, Buffer.from(swapped.stderr).toString());
  assert.ok(swaps >= 1000, `the swapper swapped (${swapped.stdout})`);
  if (stats.writes + stats.reads === 0) {
    // On a busy machine every call may have met a swap (how often one falls between two
    // depends on the scheduler, not on the library). Then show that the refusals were the
    // race's: with the swapper stopped and d the directory again, the same calls succeed.
    const restore = "cd /workspace && if [ -L d ]; then mv d d.tmp && mv d.link d && mv d.tmp d.link; fi && [ -d d ] && [ ! -L d ]";
    assert.equal((await dockerExec(container, ["sh", "-c", restore])).exitCode, 0, "d is the directory again");
    assert.equal(await rt.readTextFile({ path: "d/hostname" }), "the workspace's hostname\n", "a read with the link away");
    await rt.writeTextFile({ path: "d/after-race", text: "after\n" });
    t.diagnostic("no call fell between two swaps; the calls succeed once the race is over");
  }
  // Nothing in the container's /etc, looked at as root, outside the sandbox user's view.
  const etc = await dockerExec(container, ["sh", "-c", "busybox ls /etc | grep -c '^escape-' || true"]);
  assert.equal(etc.stdout.trim(), "0", "files written into /etc");
  assert.deepEqual(stats.foreign, [], "reads that returned a file from outside the workspace");
});
