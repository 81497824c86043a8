// The workload of test/leaks/tree-rss.test.js, in a process of its own:
//   node test/helpers/tree-rss-run.mjs <MiB> [user]
// imports <MiB> of generated file bytes into a new sandbox on the real engine, then exports
// them back to a consumer that discards them, sampling this process's RSS every 10 ms.
// Prints one JSON line: the baseline, the peak during each transfer, the summaries.
import { randomBytes } from "node:crypto";
import v8 from "node:v8";
import vm from "node:vm";
import { DockerSandboxClient } from "../../lib/index.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");
const MiB = 1024 * 1024;
const total = Number(process.argv[2] ?? 1024) * MiB;
const user = process.argv[3];
const FILES = 8;
const perFile = total / FILES;

const client = new DockerSandboxClient();
const sandbox = await client.createSandbox({
  image: process.env.ANVIA_TEST_IMAGE ?? "anvia-sandbox/bookworm:local",
  workspace: { type: "ephemeral" },
  network: { mode: "none" },
  ...(user ? { user } : {}),
});
const rss = () => process.memoryUsage().rss;
let peak = 0;
const timer = setInterval(() => (peak = Math.max(peak, rss())), 10);
const quotas = { maxFileBytes: perFile, maxTotalBytes: total };
try {
  // Warm up both directions (code paths, malloc arenas), then measure.
  const block = randomBytes(MiB);
  const entries = (files, size) => ({
    *[Symbol.iterator]() {
      for (let f = 0; f < files; f++)
        yield {
          kind: "file",
          path: `big/f${f}.bin`,
          byteLength: size,
          async *open() {
            for (let off = 0; off < size; off += MiB) yield block.subarray(0, Math.min(MiB, size - off));
          },
        };
    },
  });
  const discard = async (entry) => {
    if (entry.bytes) for await (const chunk of entry.bytes) void chunk;
  };
  await sandbox.runtime.importTree(entries(2, 8 * MiB), { path: "warm" });
  await sandbox.runtime.exportTree({ kind: "subtree", path: "warm" }, discard);
  for (let i = 0; i < 3; i++) gc();
  await new Promise((r) => setTimeout(r, 200));
  const baseline = rss();
  peak = baseline;
  const importSummary = await sandbox.runtime.importTree(entries(FILES, perFile), { path: "data", quotas });
  const importPeak = peak;
  for (let i = 0; i < 3; i++) gc();
  await new Promise((r) => setTimeout(r, 200));
  const between = rss();
  peak = between;
  const exportSummary = await sandbox.runtime.exportTree({ kind: "subtree", path: "data" }, discard, { quotas });
  const exportPeak = peak;
  console.log(JSON.stringify({ baseline, importPeak, between, exportPeak, importSummary, exportSummary }));
} finally {
  clearInterval(timer);
  await sandbox.destroy();
}
