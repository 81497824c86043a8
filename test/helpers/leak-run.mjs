// The mixed workload of the memory tests, runnable on its own (under valgrind, too):
//   node test/fake/leak-run.mjs <count> [warmup]
// starts its own fake engine process, runs the operations on one sandbox, and prints
// one JSON line: RSS and open descriptors after the warm-up and at the end.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";
import { DockerSandboxClient } from "../../lib/index.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");

export async function mixedOperations(runtime, count) {
  for (let i = 0; i < count; i++) {
    switch (i % 8) {
      case 0:
        await runtime.exec({ command: "echo", args: [`hello ${i}`] });
        break;
      case 1:
        await runtime.writeTextFile({ path: `dir/f${i % 50}.txt`, text: `content ${i}` });
        break;
      case 2:
        await runtime.readFile({ path: `dir/f${(i - 1) % 50}.txt` });
        break;
      case 3:
        if ((await runtime.listFiles({ path: "." })).length !== 2) throw new Error("listing changed");
        break;
      case 4:
        // A stream abandoned after its first event.
        for await (const event of runtime.execStream({ command: "echo", args: ["stream"] })) {
          void event;
          break;
        }
        break;
      case 5: {
        const controller = new AbortController();
        const pending = runtime.exec({ command: "cat", input: "x".repeat(1024), abortSignal: controller.signal });
        controller.abort(new Error("gone"));
        await pending.catch(() => undefined);
        break;
      }
      case 6:
        await runtime.exec({ command: "cat", input: new Uint8Array(4096) });
        break;
      default:
        await runtime.readFile({ path: "missing.txt" }).catch(() => undefined);
        break;
    }
  }
}

async function settle() {
  await new Promise((r) => setTimeout(r, 300)); // background kills of aborted execs
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

const sample = () => ({ rss: process.memoryUsage().rss, fds: readdirSync("/proc/self/fd").length });

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const count = Number(process.argv[2] ?? 1000);
  const warmup = Number(process.argv[3] ?? 0);
  const engine = spawn(process.execPath, [fileURLToPath(new URL("./leak-engine.mjs", import.meta.url))], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const [line] = await once(engine.stdout, "data");
    const client = new DockerSandboxClient({ host: String(line).trim() });
    const sandbox = await client.resumeSandbox({ id: "leak" });
    await mixedOperations(sandbox.runtime, warmup);
    await settle();
    const before = sample();
    await mixedOperations(sandbox.runtime, count);
    await settle();
    const after = sample();
    await sandbox.destroy();
    process.stdout.write(`${JSON.stringify({ count, warmup, before, after })}\n`);
  } finally {
    engine.kill("SIGTERM");
  }
}
