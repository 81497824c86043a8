// The kill-tree exec (src/engine/sh/exec_kill.sh) ends the processes whose
// environment holds the timed-out command's own ANVIA_SANDBOX_EXEC_ID entry, and nothing
// else: not a process whose variable's value holds that entry after a newline, nor one
// whose value is that entry, nor one whose marker has the command's as a prefix. Run on
// the Debian image (dash, GNU tr and grep) and on the busybox one (ash, busybox applets).
import test, { after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { DockerSandboxClient } from "../../lib/index.js";
import { BUSYBOX_IMAGE, IMAGE, baseOptions, dockerExec } from "../helpers/docker.js";

// The kill script is the engine path's (the agent ends trees without environments).
const client = new DockerSandboxClient({ transport: "engine" });
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));

// Every process's command line, read from /proc (busybox's ps has no -o args).
const CMDLINES = 'for d in /proc/[0-9]*; do tr "\\000" " " < "$d/cmdline" 2>/dev/null; echo; done';
async function cmdlines(container) {
  const out = await dockerExec(container, ["sh", "-c", CMDLINES]);
  assert.equal(out.exitCode, 0, out.stderr);
  return out.stdout;
}

// The environment entry of the process carrying KT_ROLE=<role>: "ANVIA_SANDBOX_EXEC_ID=<uuid>".
const FIND_MARKER = `for d in /proc/[0-9]*; do
  if tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx "KT_ROLE=$1"; then
    tr "\\000" "\\n" < "$d/environ" | grep "^ANVIA_SANDBOX_EXEC_ID="; exit 0
  fi
done
exit 1`;

// Bystanders started outside the library (no marker of their own), detached.
const BYSTANDERS = `m="$1"
env "KT_NL=$(printf 'x\\n%s' "$m")" sleep 3101 >/dev/null 2>&1 &
env "KT_PART=$m" sleep 3102 >/dev/null 2>&1 &
env "ANVIA_SANDBOX_EXEC_ID=\${m#*=}0" sleep 3103 >/dev/null 2>&1 &
env "KT_TAIL=$m" "KT_NL2=$(printf '%s\\ny' "$m")" sleep 3104 >/dev/null 2>&1 &
exit 0`;

for (const [name, image] of [["debian", IMAGE], ["busybox", BUSYBOX_IMAGE]]) {
  test(`${name}: a timeout ends only the command's own processes, not look-alike environments`, { timeout: 60_000 }, async (t) => {
    const sandbox = await client.createSandbox(baseOptions({ image }));
    sandboxes.push(sandbox);
    const container = `anvia-sandbox-${sandbox.id}`;
    const victim = sandbox.runtime.exec({ command: "sleep", args: ["3100"], env: { KT_ROLE: "victim" }, timeoutMs: 4000 });
    let marker;
    for (let i = 0; i < 100 && !marker; i++) {
      const found = await dockerExec(container, ["sh", "-c", FIND_MARKER, "find", "victim"]);
      if (found.exitCode === 0) marker = found.stdout.trim();
      else await sleep(30);
    }
    assert.match(marker ?? "", /^ANVIA_SANDBOX_EXEC_ID=[0-9a-f-]{36}$/);
    const started = await dockerExec(container, ["sh", "-c", BYSTANDERS, "bystanders", marker]);
    assert.equal(started.exitCode, 0, started.stderr);
    for (let i = 0; i < 100 && !/sleep 3104/.test(await cmdlines(container)); i++) await sleep(30);

    const result = await victim;
    assert.equal(result.status, "timed_out");
    const listing = await cmdlines(container);
    t.diagnostic(listing.split("\n").filter((l) => /sleep/.test(l)).join(" | "));
    assert.doesNotMatch(listing, /sleep 3100/, "the timed-out command is still running");
    for (const n of [3101, 3102, 3103, 3104]) assert.match(listing, new RegExp(`sleep ${n}`), `bystander sleep ${n} was killed`);
  });
}
