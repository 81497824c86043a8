// A fake engine in its own process for the long-run memory tests: its bookkeeping (every
// request it saw) must not count against the library's memory. Prints its host, then
// serves until killed.
import { startFakeEngine } from "./fake-engine.js";

const fake = await startFakeEngine();
fake.addContainer("leak");
fake.execProgram = (exec, input) => {
  const cmd = exec.body.Cmd ?? [];
  // find -printf '%y\0%s\0%p\0' (runtime/listing.c)
  if (cmd[0] === "find") return { stdout: "f\x003\x00/workspace/a.txt\x00d\x004096\x00/workspace/dir\x00", exitCode: 0 };
  if (cmd[0] === "echo") return { stdout: `${cmd.slice(1).join(" ")}\n`, exitCode: 0 };
  if (cmd[0] === "cat") return { stdout: input, exitCode: 0 };
  return { stdout: "", exitCode: 0 };
};
// Forget what was seen, so the fake itself stays small over a long run.
setInterval(() => {
  fake.requests.length = 0;
  // An exec finished at the previous sweep has been inspected by now.
  for (const [id, exec] of fake.state.execs) {
    if (exec.Running || exec.ExitCode === null) continue;
    if (exec.sweptOnce) fake.state.execs.delete(id);
    else exec.sweptOnce = true;
  }
}, 2000).unref();
process.stdout.write(`${fake.host}\n`);
process.on("SIGTERM", async () => {
  await fake.close();
  process.exit(0);
});
