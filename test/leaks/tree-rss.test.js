// Memory stays flat while importing and exporting 1 GiB (issue 17), on the real engine: the
// engine's own pace is the back-pressure under test (it extracts and archives slower than
// the generated source and the discarding consumer go), and the fake engine would buffer a
// whole upload in this test process. Each run is a process of its own
// (test/helpers/tree-rss-run.mjs) sampling its RSS every 10 ms:
//  - import: 1 GiB of generated file bytes (8 files of 128 MiB, pushed in 1 MiB chunks)
//    into a new sandbox; measured +2..4 MiB over the baseline;
//  - export: the same 1 GiB back to a consumer that drops every chunk; measured +40..56 MiB
//    as root (chunks of up to 256 KiB) and +6 MiB as a user (64 KiB): garbage the
//    collector has not reached yet, not a backlog (forcing a collection every 16 MiB gives
//    +6.5 MiB; Node's own fs.createReadStream of a 1 GiB file with 256 KiB chunks peaks at
//    +68 MiB on the same machine).
// Both as root (archive endpoints) and as a non-root user (exec, with the rchar window).
import test from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
const workload = fileURLToPath(new URL("../helpers/tree-rss-run.mjs", import.meta.url));
const MiB = 1024 * 1024;
const mib = (n) => (n / MiB).toFixed(1);

for (const user of ["", "1000:1000"]) {
  test(`1 GiB each way${user ? ` as user ${user}` : " as root"}: RSS stays flat`, { timeout: 600_000 }, async (t) => {
    const { stdout } = await run(process.execPath, [workload, "1024", ...(user ? [user] : [])], { env: process.env, maxBuffer: 1 << 20 });
    const r = JSON.parse(stdout.trim().split("\n").at(-1));
    const importGrowth = r.importPeak - r.baseline;
    const exportGrowth = r.exportPeak - r.between;
    t.diagnostic(
      `RSS baseline ${mib(r.baseline)} MiB; import peak +${mib(importGrowth)} MiB (${Math.round(r.importSummary.durationMs)} ms); ` +
        `export peak +${mib(exportGrowth)} MiB (${Math.round(r.exportSummary.durationMs)} ms)`,
    );
    assert.equal(r.importSummary.bytes, 1024 * MiB);
    assert.equal(r.exportSummary.bytes, 1024 * MiB);
    assert.equal(r.exportSummary.files, 8);
    assert.ok(importGrowth < 32 * MiB, `import grew RSS by ${mib(importGrowth)} MiB`);
    assert.ok(exportGrowth < 128 * MiB, `export grew RSS by ${mib(exportGrowth)} MiB`);
  });
}
