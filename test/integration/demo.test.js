// The README's first command plays scripts/demo.mjs: it must run to the end and show
// every step of the session.
import test from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
const demo = fileURLToPath(new URL("../../scripts/demo.mjs", import.meta.url));

// The demo takes seconds; its child is killed after two minutes (a hang must end the test
// with the transcript so far, never leave a process that keeps the test file alive).
test("the demo runs to the end and shows each step", { timeout: 180_000 }, async () => {
  let stdout;
  try {
    ({ stdout } = await run(process.execPath, [demo], {
      env: process.env,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 120_000,
      killSignal: "SIGKILL",
    }));
  } catch (error) {
    const how = error.killed ? "was killed after 120 s" : `failed (${error.code ?? error.signal})`;
    assert.fail(`the demo ${how}; its output:\n${error.stdout ?? ""}\n${error.stderr ?? ""}`);
  }
  const steps = [
    /create sandbox with initial files/,
    /write a small program/,
    /\| FizzBuzz/,
    /exit  status exited, exit code 0/,
    /stdout: build\.\.\./,
    /stream ended  status exited/,
    /start a web server/,
    /wait for its port/,
    /Hello from inside the sandbox/,
    /tool definitions offered to the model  write_file, exec_command/,
    /tool write_file/,
    /"bytesWritten": 35/,
    /tool exec_command/,
    /"stdout": "1\\n2\\nFizz\\n4\\nBuzz\\n"/,
    /tool read_file/,
    /"content": "2\. run it\\n"/,
    /tool list_files/,
    /tool wait_for_port/,
    /response:200/,
    /tool stop_process/,
    /policy refused a command  tool_policy/,
    /stop the sandbox/,
    /resume it/,
    /read back  10 lines/,
    /destroy/,
    /done  nothing left on the engine/,
  ];
  let from = 0;
  for (const step of steps) {
    const match = step.exec(stdout.slice(from));
    assert.ok(match, `missing step ${step} after offset ${from} in:\n${stdout}`);
    from += match.index + match[0].length;
  }
});
