// Terminals on a real engine (src/runtime/agent_term.c, src/agent/term.c, keeper.c):
// a shell session, the size and SIGWINCH, ^C, 64 MiB through a slow output() consumer
// intact, reattach from another Node process, kill of a program that ignores SIGHUP,
// 16 at once against maxProcesses, a busybox-only image and a non-root user. Then the
// same calls on the engine path (a client with transport "engine").
//
// Nothing here waits on a timer: each step waits for the output that says it happened,
// matched so that the echo of the typed input cannot match it, and whatever the shell
// printed before it (input typed ahead of the prompt comes out before the prompt).
import test, { after, describe } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { BUSYBOX_IMAGE, CONTAINER_RUNTIME, baseOptions } from "../helpers/docker.js";

const client = new DockerSandboxClient();
const enginePath = process.env.ANVIA_SANDBOX_TRANSPORT === "engine";
// gVisor (Debian's runsc 20221219) keeps no foreground process group for a pty of its own
// kernel: through the agent neither ^C nor a resize signals the program (README
// "Terminals"; seen with `runsc do` alone). The engine path's Tty exec gets runsc's console,
// a pty of the host's kernel, which does, but has no name inside the sandbox.
const gvisor = CONTAINER_RUNTIME === "runsc";
const noPtySignals = gvisor && "gVisor 20221219 delivers no signals from its own ptys (README: Terminals)";
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));

async function make(extra = {}) {
  const sandbox = await client.createSandbox(baseOptions(extra));
  sandboxes.push(sandbox);
  return sandbox;
}

// Follows a terminal's output from offset 0: the text so far, and a wait for a pattern.
function follow(terminal) {
  const it = terminal.output()[Symbol.asyncIterator]();
  let text = "";
  let next = 0;
  let ended = false;
  return {
    get text() {
      return text;
    },
    async until(re, what = String(re)) {
      while (!re.test(text)) {
        if (ended) throw new Error(`the output ended before ${what}: ${JSON.stringify(text.slice(-300))}`);
        const r = await it.next();
        if (r.done) {
          ended = true;
          continue;
        }
        assert.equal(r.value.offset, next, "offsets follow one another");
        next += r.value.data.byteLength;
        text += Buffer.from(r.value.data).toString("latin1");
      }
    },
    close: () => it.return?.(),
  };
}

// SIGWINCH, seen by a program that runs its trap between short sleeps, on a resize.
async function winchReaches(sandbox) {
  const watcher = await sandbox.runtime.startTerminal({
    command: "sh",
    args: ["-c", "trap 'echo WINCH-$(stty size | tr \" \" x)' WINCH; echo ready; while :; do sleep 0.05; done"],
  });
  const seen = follow(watcher);
  await seen.until(/ready/);
  await watcher.resize({ cols: 70, rows: 11 });
  await seen.until(/WINCH-11x70/, "the trap's line");
  await watcher.kill();
  await seen.close();
}

// `size` random bytes through output() with a slow consumer (`slow` runs after every
// `every` chunks) and a 64 KiB scrollback: the bytes reach it only because the program is
// held back. Raw mode and no echo first; "R" says so; then the start signal: every byte
// after the "R" is the file's.
async function bulkIntact(sandbox, size, every, slow) {
  const made = await sandbox.runtime.exec({
    command: "sh",
    args: ["-c", `head -c ${size} /dev/urandom > /tmp/blob && sha256sum /tmp/blob`],
    timeoutMs: 120000,
  });
  const want = Buffer.from(made.stdout).toString().split(" ")[0];
  const terminal = await sandbox.runtime.startTerminal({
    command: "sh",
    args: ["-c", "stty raw -echo; printf R; read -r go; exec cat /tmp/blob"],
    scrollbackBytes: 64 * 1024,
  });
  const hash = createHash("sha256");
  let total = 0;
  let n = 0;
  let ready;
  const isReady = new Promise((resolve) => (ready = resolve));
  const reading = (async () => {
    for await (const { offset, data } of terminal.output()) {
      assert.equal(offset, total, "contiguous offsets from 0");
      let bytes = data;
      if (total === 0) {
        assert.equal(bytes[0], 0x52, "the program's R comes first");
        bytes = bytes.subarray(1);
        ready();
      }
      hash.update(bytes);
      total += data.byteLength;
      if (++n % every === 0) await slow();
    }
  })();
  await isReady;
  await terminal.write("go\n");
  await reading;
  assert.equal(total, size + 1);
  assert.equal(hash.digest("hex"), want);
  assert.deepEqual(await terminal.wait(), { exitCode: 0, signal: null });
}

// A step that never comes fails its test rather than holding the run.
describe("terminals through the agent", { skip: enginePath && "the default client takes the engine path (tested below)", timeout: 180000 }, () => {
  test("a shell session: prompt, echo, the exit code", async () => {
    const sandbox = await make();
    const terminal = await sandbox.runtime.startTerminal();
    assert.match(terminal.id, /^[A-Za-z0-9._-]{1,64}$/);
    assert.ok(Number.isInteger(terminal.pid) && terminal.pid > 1);
    const out = follow(terminal);
    await terminal.write("echo hi-$((40 + 2)); echo \"TERM=$TERM\"; tty\n");
    await out.until(/hi-42/);
    await out.until(/TERM=xterm-256color/);
    await out.until(/\/dev\/pts\/\d+/);
    await terminal.write("exit 3\n");
    assert.deepEqual(await terminal.wait(), { exitCode: 3, signal: null });
    await out.close();
    const listed = await sandbox.runtime.listTerminals();
    assert.ok(listed.some((t) => t.id === terminal.id), "an ended terminal is listed while its keeper stays");
  });

  test("stty size before and after resize", async () => {
    const sandbox = await make();
    const terminal = await sandbox.runtime.startTerminal({ command: "sh", cols: 90, rows: 20 });
    const out = follow(terminal);
    await terminal.write("stty size\n");
    await out.until(/20 90\r?\n/);
    assert.deepEqual(await terminal.resize({ cols: 132, rows: 43 }), { cols: 132, rows: 43 });
    await terminal.write("stty size\n");
    await out.until(/43 132/);
    await assert.rejects(terminal.resize({ cols: 0, rows: 10 }), TypeError);
    await terminal.kill();
    await out.close();
  });

  test("a resize delivers SIGWINCH to the program", { skip: noPtySignals }, async () => {
    await winchReaches(await make());
  });

  test("\\x03 interrupts the foreground job and the shell stays", { skip: noPtySignals }, async () => {
    const sandbox = await make();
    const terminal = await sandbox.runtime.startTerminal({ command: "sh" });
    const out = follow(terminal);
    // An interactive shell drops the rest of a line whose job was interrupted: the status
    // is asked for afterwards (the line discipline takes the ^C before those bytes).
    await terminal.write("echo started; sleep 100\n");
    await out.until(/started\r?\n/);
    await terminal.write("\x03");
    await terminal.write("echo alive-$?\n");
    await out.until(/alive-130\r?\n/, "the shell, after the sleep ended by SIGINT");
    await terminal.kill();
    await out.close();
  });

  test("64 MiB through output() with a slow consumer: nothing lost, hash intact", async () => {
    await bulkIntact(await make(), 64 * 1024 * 1024, 64, () => new Promise((resolve) => setImmediate(resolve)));
  });

  test("a terminal outlives the Node process that started it: another attaches and replays", async () => {
    const sandbox = await make();
    const script = fileURLToPath(new URL("../helpers/terminal-start.mjs", import.meta.url));
    const id = await new Promise((resolve, reject) =>
      execFile(process.execPath, [script, sandbox.id], { env: process.env, timeout: 60000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim()),
      ),
    );
    assert.ok((await sandbox.runtime.listTerminals()).some((t) => t.id === id));
    const terminal = await sandbox.runtime.attachTerminal({ id });
    assert.equal(terminal.id, id);
    const out = follow(terminal);
    await out.until(/marker-from-the-first-process/, "the replayed scrollback");
    await terminal.write("echo second-$((6 * 7))\n");
    await out.until(/second-42/);
    await terminal.write("exit\n");
    assert.equal((await terminal.wait()).exitCode, 0);
    await out.close();
    await assert.rejects(sandbox.runtime.attachTerminal({ id: "no-such-terminal" }), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "process");
      assert.match(error.message, /Unknown sandbox terminal: no-such-terminal/);
      return true;
    });
  });

  test("kill ends a program that ignores SIGHUP, with its children", async () => {
    const sandbox = await make();
    const terminal = await sandbox.runtime.startTerminal({
      command: "sh",
      args: ["-c", "trap '' HUP; sleep 1000 & echo ready-$!; wait"],
    });
    const out = follow(terminal);
    await out.until(/ready-\d+\r?\n/);
    const sleeper = /ready-(\d+)/.exec(out.text)[1];
    assert.deepEqual(await terminal.kill("SIGHUP"), { delivered: true });
    assert.deepEqual(await terminal.kill(), { delivered: true });
    assert.deepEqual(await terminal.wait(), { exitCode: 137, signal: "SIGKILL" });
    // The container's own keep-alive is a sleep too: this one is asked by its pid.
    const left = await sandbox.runtime.exec({ command: "sh", args: ["-c", `s=$(cut -d' ' -f3 /proc/${sleeper}/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]`] });
    assert.notEqual(left.exitCode, 0, "the sleep went with it");
    await assert.rejects(terminal.kill("SIGBOGUS"), TypeError);
    await out.close();
  });

  test("16 terminals at once; maxProcesses counts them", async () => {
    const sandbox = await make({ runtime: { maxProcesses: 16 } });
    const terminals = await Promise.all(
      Array.from({ length: 16 }, (_, i) => sandbox.runtime.startTerminal({ command: "sh", env: { N: String(i) } })),
    );
    await assert.rejects(sandbox.runtime.startTerminal(), /Sandbox process limit reached \(16 >= 16\)/);
    await assert.rejects(sandbox.runtime.startProcess({ command: "sleep", args: ["1"] }), /process limit reached/);
    await Promise.all(
      terminals.map(async (terminal, i) => {
        const out = follow(terminal);
        await terminal.write("echo n=$((N * 3))\n");
        await out.until(new RegExp(`n=${i * 3}\\r?\\n`));
        await out.close();
      }),
    );
    // One ends: the next start finds out (it asks), and has its place.
    await terminals[0].write("exit\n");
    await terminals[0].wait();
    const more = await sandbox.runtime.startTerminal({ command: "sh" });
    await Promise.all([...terminals.slice(1), more].map((terminal) => terminal.kill()));
  });

  test("a busybox-only image as a non-root user: the default shell", async () => {
    const sandbox = await make({ image: BUSYBOX_IMAGE, user: "65534:65534" });
    const terminal = await sandbox.runtime.startTerminal();
    const out = follow(terminal);
    await terminal.write("echo uid=$(id -u) shell=$0\n");
    await out.until(/uid=65534 shell=\/bin\/sh/);
    await terminal.write("exit 0\n");
    assert.deepEqual(await terminal.wait(), { exitCode: 0, signal: null });
    await out.close();
  });

  test("bad arguments are refused before any I/O", async () => {
    const sandbox = await make();
    const rt = sandbox.runtime;
    await assert.rejects(rt.startTerminal({ args: ["-c", "true"] }), /args needs a command/);
    await assert.rejects(rt.startTerminal({ cols: 5000 }), /cols must be an integer from 1 to 4096/);
    await assert.rejects(rt.startTerminal({ scrollbackBytes: 10 }), /scrollbackBytes must be an integer/);
    await assert.rejects(rt.startTerminal({ command: "sh", cwd: "../x" }), DockerSandboxError);
    await assert.rejects(rt.attachTerminal({ id: "../etc" }), /id must be a terminal id/);
    await assert.rejects(rt.attachTerminal({ id: "x".repeat(65) }), /id must be a terminal id/);
    await assert.rejects(rt.startTerminal({ command: "/no/such/program" }), /Sandbox terminal command cannot start/);
  });
});

// The engine path (src/runtime/engine_term.c): a Tty exec held by this process. The same
// calls and result shapes; a terminal ends with this Node process (no reattach from
// another), so a second handle here attaches instead.
const engineClient = new DockerSandboxClient({ transport: "engine" });

async function makeEngine(extra = {}) {
  const sandbox = await engineClient.createSandbox(baseOptions(extra));
  sandboxes.push(sandbox);
  return sandbox;
}

describe("terminals on the engine path", { timeout: 240000 }, () => {
  test("a shell session: prompt, echo, the exit code", async () => {
    const sandbox = await makeEngine();
    const terminal = await sandbox.runtime.startTerminal();
    assert.match(terminal.id, /^[A-Za-z0-9._-]{1,64}$/);
    assert.ok(Number.isInteger(terminal.pid) && terminal.pid > 1, `pid ${terminal.pid}`);
    const out = follow(terminal);
    await terminal.write("echo hi-$((40 + 2)); echo \"TERM=$TERM\"; [ -t 0 ] && echo is-a-$(echo tty); tty; echo pid-$$\n");
    await out.until(/hi-42/);
    await out.until(/TERM=xterm-256color/);
    await out.until(/is-a-tty/);
    // gVisor's Tty exec is a pty of the host's runsc, which has no name in the sandbox
    // (`tty` says "not a tty" although stdin is one).
    if (!gvisor) await out.until(/\/dev\/pts\/\d+/);
    await out.until(/pid-\d+\r?\n/);
    assert.equal(Number(/pid-(\d+)\r?\n/.exec(out.text)[1]), terminal.pid, "the pid is the shell's");
    assert.ok((await sandbox.runtime.listTerminals()).some((t) => t.id === terminal.id));
    await terminal.write("exit 3\n");
    assert.deepEqual(await terminal.wait(), { exitCode: 3, signal: null });
    await out.close();
    assert.ok(!(await sandbox.runtime.listTerminals()).some((t) => t.id === terminal.id), "an ended one is not listed");
    await assert.rejects(terminal.write("echo late\n"), /Sandbox terminal has ended/);
  });

  test("stty size before and after resize", async () => {
    const sandbox = await makeEngine();
    const terminal = await sandbox.runtime.startTerminal({ command: "sh", cols: 90, rows: 20 });
    const out = follow(terminal);
    await terminal.write("stty size\n");
    await out.until(/20 90\r?\n/);
    assert.deepEqual(await terminal.resize({ cols: 132, rows: 43 }), { cols: 132, rows: 43 });
    await terminal.write("stty size\n");
    await out.until(/43 132/);
    await assert.rejects(terminal.resize({ cols: 0, rows: 10 }), TypeError);
    await terminal.kill();
    await out.close();
  });

  // Under gVisor too: runsc's console for a Tty exec is a pty of the host's kernel.
  test("a resize (POST /exec/{id}/resize) delivers SIGWINCH to the program", async () => {
    await winchReaches(await makeEngine());
  });

  test("\\x03 interrupts the foreground job and the shell stays", async () => {
    const sandbox = await makeEngine();
    const terminal = await sandbox.runtime.startTerminal({ command: "sh" });
    const out = follow(terminal);
    await terminal.write("echo started; sleep 100\n");
    await out.until(/started\r?\n/);
    await terminal.write("\x03");
    await terminal.write("echo alive-$?\n");
    await out.until(/alive-130\r?\n/, "the shell, after the sleep ended by SIGINT");
    await terminal.kill();
    await out.close();
  });

  test("8 MiB through output() with a slow consumer: nothing lost, hash intact", async () => {
    await bulkIntact(await makeEngine(), 8 * 1024 * 1024, 16, () => new Promise((resolve) => setTimeout(resolve, 5)));
  });

  test("attach replays to a new handle; resumeSandbox's restart ends the terminal", async () => {
    const sandbox = await makeEngine();
    const terminal = await sandbox.runtime.startTerminal({ command: "sh" });
    const first = follow(terminal);
    await terminal.write("echo marker-from-the-$(echo first)-handle\n");
    await first.until(/marker-from-the-first-handle/);
    await first.close();
    const again = await sandbox.runtime.attachTerminal({ id: terminal.id });
    assert.equal(again.id, terminal.id);
    assert.equal(again.pid, terminal.pid);
    const out = follow(again);
    await out.until(/marker-from-the-first-handle/, "the replayed scrollback");
    await again.write("echo second-$((6 * 7))\n");
    await out.until(/second-42/);
    await out.close();
    // From an offset: the replay starts there.
    const from = first.text.length;
    const tail = again.output({ since: from })[Symbol.asyncIterator]();
    assert.equal((await tail.next()).value.offset, from);
    await tail.return();
    // resumeSandbox stops a running container before it starts it again: the exec ends.
    const waited = terminal.wait();
    const other = await engineClient.resumeSandbox({ id: sandbox.id });
    assert.equal(typeof (await waited).exitCode, "number");
    assert.ok(!(await other.runtime.listTerminals()).some((t) => t.id === terminal.id));
    await assert.rejects(again.write("echo late\n"), /Sandbox terminal has ended/);
    await assert.rejects(other.runtime.attachTerminal({ id: "no-such-terminal" }), (error) => {
      assert.ok(error instanceof DockerSandboxError);
      assert.equal(error.code, "process");
      assert.match(error.message, /Unknown sandbox terminal: no-such-terminal/);
      return true;
    });
  });

  test("a terminal ends with the Node process that holds it (its leash)", async () => {
    const sandbox = await makeEngine();
    const script = fileURLToPath(new URL("../helpers/terminal-start.mjs", import.meta.url));
    const env = { ...process.env, ANVIA_SANDBOX_TRANSPORT: "engine" };
    const id = await new Promise((resolve, reject) =>
      execFile(process.execPath, [script, sandbox.id], { env, timeout: 60000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim()),
      ),
    );
    assert.match(id, /^[A-Za-z0-9._-]{1,64}$/);
    await assert.rejects(sandbox.runtime.attachTerminal({ id }), /Unknown sandbox terminal/, "not this process's");
    // The engine would keep the exec's program running; the leash ends it once the
    // process's connection is gone. Every terminal program carries TERM=xterm-256color.
    const look = 'for d in /proc/[0-9]*; do tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx TERM=xterm-256color && echo "${d#/proc/}"; done; true';
    let left = "?";
    for (let i = 0; i < 300 && left !== ""; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      left = Buffer.from((await sandbox.runtime.exec({ command: "sh", args: ["-c", look] })).stdout).toString().trim();
    }
    assert.equal(left, "", "no terminal program is left");
  });

  test("kill ends a program that ignores SIGHUP, with its children", async () => {
    const sandbox = await makeEngine();
    const terminal = await sandbox.runtime.startTerminal({
      command: "sh",
      args: ["-c", "trap '' HUP; sleep 1000 & echo ready-$!; wait"],
    });
    const out = follow(terminal);
    await out.until(/ready-\d+\r?\n/);
    const sleeper = /ready-(\d+)/.exec(out.text)[1];
    assert.deepEqual(await terminal.kill("SIGHUP"), { delivered: true });
    assert.deepEqual(await terminal.kill(), { delivered: true });
    assert.deepEqual(await terminal.wait(), { exitCode: 137, signal: "SIGKILL" });
    const left = await sandbox.runtime.exec({ command: "sh", args: ["-c", `s=$(cut -d' ' -f3 /proc/${sleeper}/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]`] });
    assert.notEqual(left.exitCode, 0, "the sleep went with it");
    assert.deepEqual(await terminal.kill(), { delivered: false }, "nothing left to signal");
    await assert.rejects(terminal.kill("SIGBOGUS"), TypeError);
    await out.close();
  });

  test("maxProcesses counts the terminals", async () => {
    const sandbox = await makeEngine({ runtime: { maxProcesses: 4 } });
    const terminals = await Promise.all(
      Array.from({ length: 4 }, (_, i) => sandbox.runtime.startTerminal({ command: "sh", env: { N: String(i) } })),
    );
    await assert.rejects(sandbox.runtime.startTerminal(), /Sandbox process limit reached \(4 >= 4\)/);
    await assert.rejects(sandbox.runtime.startProcess({ command: "sleep", args: ["1"] }), /process limit reached/);
    await Promise.all(
      terminals.map(async (terminal, i) => {
        const out = follow(terminal);
        await terminal.write("echo n=$((N * 3))\n");
        await out.until(new RegExp(`n=${i * 3}\\r?\\n`));
        await out.close();
      }),
    );
    await terminals[0].write("exit\n");
    await terminals[0].wait();
    const more = await sandbox.runtime.startTerminal({ command: "sh" });
    await Promise.all([...terminals.slice(1), more].map((terminal) => terminal.kill()));
  });

  test("a busybox-only image as a non-root user: the default shell, its pid, kill", async () => {
    const sandbox = await makeEngine({ image: BUSYBOX_IMAGE, user: "65534:65534" });
    const terminal = await sandbox.runtime.startTerminal();
    assert.ok(terminal.pid > 1, `pid ${terminal.pid}`);
    const out = follow(terminal);
    await terminal.write("echo uid=$(id -u) shell=$0 pid=$$ size=$(stty size | tr ' ' x)\n");
    await out.until(/uid=65534 shell=\/bin\/sh pid=\d+ size=24x80/);
    assert.equal(Number(/pid=(\d+) size/.exec(out.text)[1]), terminal.pid);
    assert.deepEqual(await terminal.kill("SIGTERM"), { delivered: true });
    await terminal.kill();
    assert.deepEqual(await terminal.wait(), { exitCode: 137, signal: "SIGKILL" });
    await out.close();
  });

  test("a program that cannot be found; bad arguments before any I/O", async () => {
    const sandbox = await makeEngine();
    const rt = sandbox.runtime;
    await assert.rejects(rt.startTerminal({ command: "/no/such/program" }), /Sandbox terminal command cannot start/);
    await assert.rejects(rt.startTerminal({ args: ["-c", "true"] }), /args needs a command/);
    await assert.rejects(rt.startTerminal({ cols: 5000 }), /cols must be an integer from 1 to 4096/);
    await assert.rejects(rt.attachTerminal({ id: "../etc" }), /id must be a terminal id/);
  });
});
