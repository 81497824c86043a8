// Managed processes against a fake engine that plays the launch exec: a startup marker
// the sandbox forged (process group 1 or 0, which stopProcess would signal as
// `kill -TERM -1` or `kill -TERM -0`), and a process whose exec is already over (its
// group id may belong to another process by now): no stop script runs against either.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, expectCode, fakeSandbox, frame, until, upgradeHead } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer
const isLauncher = (exec) => exec?.body?.Cmd?.[3] === "anvia-process-launcher";
const isStopScript = (exec) => exec?.body?.Cmd?.[3] === "anvia-process-stop";

/**
 * Plays the launch exec: the 101 hijack, then `marker(markerArg)` on stdout; with
 * `exitAfterStart`, waits for the library's "start" line and ends with exit code 0.
 * Records what the library wrote to the launcher's stdin in `stdin`.
 */
function launcher(fake, { marker, exitAfterStart = false }) {
  const stdin = [];
  fake.route("POST", "/exec/:id/start", async (req, res, ctx) => {
    if (!isLauncher(ctx.exec)) return ctx.next();
    const input = ctx.conn.hijack();
    let gotStart;
    const started = new Promise((resolve) => (gotStart = resolve));
    input.on("data", (chunk) => {
      stdin.push(chunk);
      if (Buffer.concat(stdin).includes("start\n")) gotStart();
    });
    await res.write(upgradeHead());
    ctx.exec.Running = true;
    await res.write(frame(1, marker(ctx.exec.body.Cmd[6])));
    if (!exitAfterStart) return res.hang();
    await started; // the library's "start" line, however long it takes to come
    await res.write(frame(1, "done\n"));
    Object.assign(ctx.exec, { Running: false, ExitCode: 0 });
    res.end();
  });
  return { written: () => Buffer.concat(stdin).toString("latin1") };
}

for (const group of ["1", "0"]) {
  test(`a startup marker naming process group ${group} is refused: no "start", no record, nothing to signal`, T, async (t) => {
    const { fake, runtime } = await fakeSandbox(t);
    const launch = launcher(fake, { marker: (m) => `\x1e${m}:4242:${group}\x1e` });
    await expectCode(runtime.startProcess({ command: "sleep", args: ["60"] }), "process", /^Sandbox process returned invalid process IDs\.$/);
    assert.doesNotMatch(launch.written(), /start/, "the command was let run");
    assert.deepEqual(await runtime.listProcesses(), []);
    assert.deepEqual([...fake.state.execs.values()].filter(isStopScript), []);
  });
}

async function exitedProcess(t) {
  const sb = await fakeSandbox(t);
  launcher(sb.fake, { marker: (m) => `\x1e${m}:4242:4242\x1e`, exitAfterStart: true });
  const started = await sb.runtime.startProcess({ command: "sh", args: ["-c", "echo done"] });
  assert.equal(started.status, "running");
  // Its exec ends once the fake has had the "start" line: polled until the process shows it.
  const info = await until(async () => {
    const [p] = await sb.runtime.listProcesses();
    return p.status !== "running" && p;
  });
  assert.equal(info.status, "exited");
  return { ...sb, info };
}

test("stopping a process whose exec is over runs no stop script and reports it as it is", T, async (t) => {
  const { fake, runtime, info } = await exitedProcess(t);
  const stopped = await runtime.stopProcess({ processId: info.id, gracePeriodMs: 100 });
  assert.deepEqual(stopped, info);
  assert.equal(stopped.exitCode, 0);
  assert.deepEqual(
    [...fake.state.execs.values()].filter(isStopScript).map((e) => e.body.Cmd.slice(4)),
    [],
    "a stop script ran against the group of a process that had already exited",
  );
  assert.deepEqual(await runtime.listProcesses(), [info]);
});

test("stopping the sandbox runs no stop script for processes whose exec is over", T, async (t) => {
  const { fake, sandbox } = await exitedProcess(t);
  await sandbox.stop();
  assert.equal(sandbox.state, "stopped");
  assert.deepEqual([...fake.state.execs.values()].filter(isStopScript).map((e) => e.body.Cmd.slice(4)), []);
});
