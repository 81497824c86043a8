// importTree / exportTree through the in-sandbox agent (src/runtime/tree_agent.c), on a
// real engine. test/integration/tree.test.js runs its whole suite through whichever
// transport is the default (CI runs it with the agent and with the engine path); this
// file holds what is the agent backend's own:
//  - a transfer demonstrably goes through the agent: with ANVIA_SANDBOX_TRACE=1 (every
//    engine request printed), nothing reaches the engine during an import or an export;
//  - a command in the sandbox kills the agent mid-import and mid-export: a typed error,
//    nothing published, nothing left staged or running, and the next call works;
//  - back-pressure both ways: a sandbox tar that stops reading holds the source back (the
//    agent's credit on stdin), a consumer that stops reading holds the sandbox's tar back
//    (the credit withheld on stdout);
//  - where the agent cannot run: transport "auto" takes the engine path, transport
//    "agent" fails clearly.
import test, { after, describe } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DockerSandboxClient, DockerSandboxError } from "../../lib/index.js";
import { baseOptions, dockerExec } from "../helpers/docker.js";

const client = new DockerSandboxClient({ transport: "agent" });
const MiB = 1024 * 1024;
const BIG = { maxFileBytes: 128 * MiB, maxTotalBytes: 512 * MiB };
const sandboxes = [];
after(() => Promise.allSettled(sandboxes.map((s) => s.destroy())));
const work = mkdtempSync(path.join(tmpdir(), "anvia-tree-agent-"));
after(() => rmSync(work, { recursive: true, force: true }));
const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");
const text = (bytes) => new TextDecoder().decode(bytes);

async function make(extra = {}) {
  const sandbox = await client.createSandbox(baseOptions(extra));
  sandboxes.push(sandbox);
  return { sandbox, rt: sandbox.runtime, container: `anvia-sandbox-${sandbox.id}` };
}

/** The processes of a container, one command line a line, seen from outside the library. */
async function processes(container) {
  const out = await dockerExec(container, ["sh", "-c", 'for d in /proc/[0-9]*; do tr "\\000" " " < "$d/cmdline" 2>/dev/null; echo; done']);
  return out.stdout;
}

async function workspaceNames(container) {
  return (await dockerExec(container, ["busybox", "ls", "-A", "/workspace"])).stdout.split("\n").filter(Boolean);
}

/** Nothing staged is left and nothing of the script runs (waits a little: a clean-up ends). */
async function nothingLeft(container, running) {
  let names = [];
  let procs = "";
  for (let i = 0; i < 100; i++) {
    names = await workspaceNames(container);
    procs = await processes(container);
    if (!names.some((n) => n.startsWith(".anvia-")) && !running.test(procs)) return;
    await sleep(50);
  }
  assert.fail(`left behind: ${names.join(", ")}\n${procs}`);
}

function typedAgentFailure(error) {
  assert.ok(error instanceof DockerSandboxError, String(error?.stack ?? error));
  assert.equal(error.code, "docker_command_failed", error.message);
  assert.match(error.message, /agent/);
  return true;
}

// The pid of a process of the container whose command line matches, and its /proc/<pid>/io.
async function processIo(container, pattern) {
  const script = `for d in /proc/[0-9]*; do c=$(tr "\\000" " " < "$d/cmdline" 2>/dev/null); case "$c" in ${pattern}) echo "\${d#/proc/}"; cat "$d/io"; exit 0 ;; esac; done; exit 1`;
  const out = await dockerExec(container, ["sh", "-c", script]);
  if (out.exitCode !== 0 && !out.stdout) return undefined;
  const [pid, ...lines] = out.stdout.trim().split("\n");
  if (!pid) return undefined;
  const io = Object.fromEntries(lines.map((l) => l.split(": ")).map(([k, v]) => [k, Number(v)]));
  return { pid: Number(pid), ...io };
}

describe("through the agent, nothing through the engine", () => {
  for (const user of ["", "1000:1000"]) {
    test(`an import and an export ${user ? `as user ${user}` : "as root"}: no engine request during either`, { timeout: 120_000 }, () => {
      // In a child process: ANVIA_SANDBOX_TRACE is read when the addon loads.
      const script = `
        import { DockerSandboxClient } from ${JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)))};
        const box = await new DockerSandboxClient({ transport: "agent" }).createSandbox(${JSON.stringify(baseOptions(user ? { user } : {}))});
        try {
          const rt = box.runtime;
          await rt.exec({ command: "true" }); // the agent is up
          await new Promise((r) => setTimeout(r, 300));
          const big = new Uint8Array(5 * 1024 * 1024 + 3).map((_, i) => (i * 7) & 255);
          process.stderr.write("=== import\\n");
          const imported = await rt.importTree([
            { kind: "directory", path: "d", mode: 0o750 },
            { kind: "file", path: "d/a.txt", bytes: new TextEncoder().encode("alpha"), mode: 0o600 },
            { kind: "file", path: "d/e/big.bin", bytes: big },
          ], { path: "traced" });
          process.stderr.write("=== export\\n");
          const got = {};
          const exported = await rt.exportTree({ kind: "subtree", path: "traced" }, async (entry) => {
            const parts = [];
            if (entry.kind === "file") for await (const c of entry.bytes) parts.push(c);
            got[entry.path] = { kind: entry.kind, mode: entry.mode, length: Buffer.concat(parts).length };
          });
          process.stderr.write("=== done\\n");
          const owner = new TextDecoder().decode((await rt.exec({ command: "busybox", args: ["stat", "-c", "%u:%g", "traced/d/a.txt"] })).stdout).trim();
          console.log(JSON.stringify({ imported, exported, got, owner }));
        } finally {
          await box.destroy();
        }`;
      const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
        env: { ...process.env, ANVIA_SANDBOX_TRACE: "1" },
        encoding: "utf8",
        timeout: 100_000,
      });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout.trim().split("\n").at(-1));
      assert.equal(out.imported.files, 2);
      assert.equal(out.imported.bytes, 5 * MiB + 3 + 5);
      assert.equal(out.exported.files, 2);
      assert.equal(out.exported.bytes, out.imported.bytes);
      assert.deepEqual(Object.keys(out.got).sort(), ["traced", "traced/d", "traced/d/a.txt", "traced/d/e", "traced/d/e/big.bin"]);
      assert.equal(out.got["traced/d"].mode, 0o750);
      assert.equal(out.got["traced/d/a.txt"].mode, 0o600);
      assert.equal(out.got["traced/d/e/big.bin"].length, 5 * MiB + 3);
      assert.equal(out.owner, user ? "1000:1000" : "0:0");
      // The trace works (the sandbox was made through the engine) ...
      const before = r.stderr.slice(0, r.stderr.indexOf("=== import"));
      assert.match(before, /POST \/containers\/create/);
      assert.match(before, /agent ready/);
      // ... and shows no engine request while the transfers ran.
      const during = r.stderr.slice(r.stderr.indexOf("=== import"), r.stderr.indexOf("=== done"));
      assert.doesNotMatch(during, /\/exec|\/archive|exec start|exec connection/, during);
      assert.match(during, /=== export/);
    });
  }
});

describe("the agent dies mid-transfer", () => {
  for (const user of ["", "1000:1000"]) {
    test(`${user ? `user ${user}` : "root"}: a command kills the agent mid-import: typed error, nothing published or staged, the next import works`, { timeout: 60_000 }, async () => {
      const { rt, container } = await make(user ? { user } : {});
      await rt.exec({ command: "true" });
      const block = randomBytes(MiB);
      let pulled = 0;
      async function* chunks() {
        for (let i = 0; i < 64; i++) {
          if (i === 8) {
            // The import's tar runs; the killer's parent is the agent.
            assert.match(await processes(container), /tar -x -f -/);
            await rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {});
          }
          pulled += block.length;
          yield block;
        }
      }
      await assert.rejects(
        rt.importTree([
          { kind: "file", path: "first.txt", bytes: new TextEncoder().encode("first") },
          { kind: "file", path: "big.bin", byteLength: 64 * MiB, open: chunks },
        ], { path: "killed", quotas: BIG }),
        typedAgentFailure,
      );
      assert.ok(pulled < 64 * MiB, "the source was not read to its end");
      await nothingLeft(container, /tar -x|anvia-import/);
      assert.ok(!(await workspaceNames(container)).includes("killed"), "nothing was published");
      // A new agent serves the next import.
      const again = await rt.importTree([{ kind: "file", path: "x/y.txt", bytes: new TextEncoder().encode("again") }], { path: "killed" });
      assert.equal(again.files, 1);
      assert.equal(await rt.readTextFile({ path: "killed/x/y.txt" }), "again");
    });

    test(`${user ? `user ${user}` : "root"}: a command kills the agent mid-export: typed error, nothing on the host, the next export works`, { timeout: 60_000 }, async () => {
      const { rt, container } = await make(user ? { user } : {});
      const made = await rt.exec({ command: "sh", args: ["-c", "mkdir -p big && head -c 33554432 /dev/urandom > big/data.bin && echo small > big/small.txt && sha256sum big/data.bin"] });
      assert.equal(made.exitCode, 0, text(made.stderr));
      const expected = text(made.stdout).split(" ")[0];
      let seen = 0;
      let killed = false;
      await assert.rejects(
        rt.exportTree({ kind: "subtree", path: "big" }, async (entry) => {
          if (entry.kind !== "file") return;
          for await (const chunk of entry.bytes) {
            seen += chunk.byteLength;
            if (!killed && seen >= MiB) {
              killed = true;
              await rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {});
            }
          }
        }, { quotas: BIG }),
        typedAgentFailure,
      );
      assert.ok(killed);
      await nothingLeft(container, /tar -c/);
      // A new agent serves the next export, to a host directory, byte for byte.
      const out = path.join(work, `after-kill-${user ? "user" : "root"}`);
      const s = await rt.exportTree({ kind: "subtree", path: "big" }, out, { quotas: BIG });
      assert.equal(s.files, 2);
      assert.equal(sha(readFileSync(path.join(out, "big/data.bin"))), expected);
      assert.equal(readFileSync(path.join(out, "big/small.txt"), "utf8"), "small\n");
    });
  }

  test("the agent dies as the stream ends (the publish may run): all of it is published or none, nothing staged", { timeout: 120_000 }, async (t) => {
    const { rt, container } = await make({ user: "1000:1000" });
    const outcomes = [];
    for (let round = 0; round < 4; round++) {
      await rt.exec({ command: "sh", args: ["-c", `mkdir -p late${round} && echo old > late${round}/kept.txt`] });
      const entries = Array.from({ length: 40 }, (_, i) => ({ kind: "file", path: `sub${i % 4}/f${i}.bin`, bytes: randomBytes(256 * 1024) }));
      // Right after the end was handed on (onProgress reports the last counts then), and a
      // little later each round: the script extracts, or publishes (a merge: the
      // destination exists), or is done.
      let killer;
      const importing = rt.importTree(entries, {
        path: `late${round}`,
        onProgress: (p) => {
          if (p.files === entries.length && !killer)
            killer = sleep(round * 15).then(() => rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {}));
        },
      });
      const outcome = await importing.then(() => "published", (e) => (typedAgentFailure(e), "failed"));
      await killer;
      await nothingLeft(container, /tar -x|anvia-import/);
      const listed = text((await rt.exec({ command: "sh", args: ["-c", `cd late${round} && find . -type f | sort`] })).stdout).trim().split("\n");
      const imported = listed.filter((p) => p !== "./kept.txt");
      assert.ok(listed.includes("./kept.txt"), "what was there stays");
      assert.ok(imported.length === 0 || imported.length === entries.length, `all or nothing, got ${imported.length} of ${entries.length} (${outcome})`);
      if (outcome === "published") assert.equal(imported.length, entries.length);
      outcomes.push(`${outcome} (${imported.length ? "all" : "none"} there)`);
    }
    t.diagnostic(`outcomes: ${outcomes.join(", ")}`);
  });

  test("this process dies mid-import: the agent exits, the import's script removes what it staged", { timeout: 90_000 }, async (t) => {
    const script = `
      import { DockerSandboxClient } from ${JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)))};
      const box = await new DockerSandboxClient({ transport: "agent" }).createSandbox(${JSON.stringify(baseOptions({ user: "1000:1000" }))});
      console.log(box.id);
      const block = new Uint8Array(1 << 20);
      async function* endless() {
        for (let i = 0; ; i++) {
          if (i === 8) console.log("importing");
          yield block;
        }
      }
      await box.runtime.importTree([{ kind: "file", path: "big.bin", byteLength: 2 ** 40, open: endless }], { path: "orphan", quotas: { maxFileBytes: 2 ** 41, maxTotalBytes: 2 ** 41 } });`;
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    await new Promise((resolve, reject) => {
      child.stdout.on("data", (d) => {
        out += d;
        if (/importing/.test(out)) resolve();
      });
      child.on("exit", () => reject(new Error(`the child ended early: ${out}`)));
    });
    const id = out.trim().split("\n")[0];
    // Removed at the end through a client of this process (resuming restarts the container).
    t.after(async () => (await client.resumeSandbox({ id })).destroy());
    const container = `anvia-sandbox-${id}`;
    assert.match(await processes(container), /tar -x -f -/);
    assert.ok((await workspaceNames(container)).some((n) => n.startsWith(".anvia-import.")), "the import is staged");
    child.kill("SIGKILL");
    await nothingLeft(container, /tar -x|anvia-import|anvia-agent/);
    assert.deepEqual(await workspaceNames(container), []);
  });

  test("a host directory export whose agent dies is not published", { timeout: 60_000 }, async () => {
    const { rt, container } = await make();
    await rt.exec({ command: "sh", args: ["-c", "mkdir -p h && for i in 1 2 3 4 5 6 7 8; do head -c 8388608 /dev/urandom > h/f$i; done"] });
    const out = path.join(work, "host-killed");
    const exporting = rt.exportTree({ kind: "subtree", path: "h" }, out, {
      onProgress: (p) => {
        if (p.files === 1) rt.exec({ command: "sh", args: ["-c", "kill -9 $PPID"] }).catch(() => {});
      },
    });
    await assert.rejects(exporting, typedAgentFailure);
    assert.ok(!existsSync(out), "the host directory was not made");
    assert.deepEqual(readdirSync(work).filter((n) => n.startsWith(".host-killed.")), [], "no temporary directory is left");
    await nothingLeft(container, /tar -c/);
  });
});

describe("back-pressure through the agent's credit", () => {
  test("a slow export consumer holds the sandbox's tar back; the export completes byte for byte", { timeout: 90_000 }, async (t) => {
    const { rt, container } = await make();
    const made = await rt.exec({ command: "sh", args: ["-c", "mkdir -p slow && head -c 100663296 /dev/urandom > slow/data.bin && sha256sum slow/data.bin"] });
    assert.equal(made.exitCode, 0, text(made.stderr));
    const expected = text(made.stdout).split(" ")[0];
    const hash = createHash("sha256");
    let got = 0;
    const readings = [];
    const summary = await rt.exportTree({ kind: "subtree", path: "slow" }, async (entry) => {
      if (entry.kind !== "file") return;
      for await (const chunk of entry.bytes) {
        hash.update(chunk);
        got += chunk.byteLength;
        if (readings.length === 0 && got >= 4 * MiB) {
          // The consumer stalls: the sandbox's tar must stop writing once what lies between
          // them is full. How soon depends on how busy the machine is, so its count is read
          // until two readings 700 ms apart agree (for at most about 40 s); a tar that is not
          // held back writes all 96 MiB and exits meanwhile.
          let first = await processIo(container, "tar\\ -c*");
          let second;
          for (let i = 0; i < 56; i++) {
            await sleep(700);
            second = await processIo(container, "tar\\ -c*");
            if (!first || !second || second.wchar === first.wchar) break;
            first = second;
          }
          readings.push({ got, first, second });
        }
      }
    }, { quotas: BIG });
    assert.equal(hash.digest("hex"), expected);
    assert.equal(summary.bytes, 96 * MiB);
    const [{ got: at, first, second }] = readings;
    assert.ok(first && second, "tar was still running while the consumer stalled");
    t.diagnostic(`consumer stalled at ${(at / MiB).toFixed(1)} MiB; tar had written ${(first.wchar / MiB).toFixed(1)} MiB, then ${(second.wchar / MiB).toFixed(1)} MiB`);
    assert.equal(second.wchar, first.wchar, "tar is blocked while the consumer stalls");
    // What tar wrote ahead of the consumer: the agent's credit (1 MiB), a pipe, the native
    // queue (4 MiB) and lib/tree.js's (4 MiB), and what was in flight: far from 96 MiB.
    assert.ok(second.wchar - at < 16 * MiB, `tar wrote ${((second.wchar - at) / MiB).toFixed(1)} MiB ahead of the consumer`);
  });

  // A transfer held back sends the agent nothing: the host's heartbeat keeps it alive past
  // its silence limit (20 s), a stalled import source and a stalled export consumer at once.
  test("a source and a consumer that stall longer than the agent's silence limit: both transfers complete", { timeout: 120_000 }, async () => {
    const { rt } = await make();
    await rt.exec({ command: "sh", args: ["-c", "mkdir -p stall && head -c 16777216 /dev/urandom > stall/data.bin"] });
    const STALL = 23_000;
    const block = randomBytes(MiB);
    async function* chunks() {
      for (let i = 0; i < 8; i++) {
        if (i === 4) await sleep(STALL);
        yield block;
      }
    }
    let got = 0;
    const [imported, exported] = await Promise.all([
      rt.importTree([{ kind: "file", path: "stalled/in.bin", byteLength: 8 * MiB, open: chunks }]),
      rt.exportTree({ kind: "subtree", path: "stall" }, async (entry) => {
        if (entry.kind !== "file") return;
        for await (const chunk of entry.bytes) {
          if (got === 0) await sleep(STALL);
          got += chunk.byteLength;
        }
      }, { quotas: BIG }),
    ]);
    assert.equal(imported.bytes, 8 * MiB);
    assert.equal(exported.bytes, 16 * MiB);
    assert.equal(got, 16 * MiB);
  });

  test("a sandbox tar that stops reading holds the import's source back; the import completes", { timeout: 90_000 }, async (t) => {
    const { rt, container } = await make({ user: "1000:1000" });
    await rt.exec({ command: "true" });
    const block = randomBytes(MiB);
    let pulled = 0;
    const readings = [];
    async function* chunks() {
      for (let i = 0; i < 96; i++) {
        if (i === 16) {
          // Freeze the sandbox's tar, then see how far the source is read meanwhile.
          const tar = await processIo(container, "tar\\ -x*");
          assert.ok(tar, "the import's tar runs");
          await dockerExec(container, ["kill", "-STOP", String(tar.pid)]);
          const before = pulled;
          const probe = (async () => {
            // Read until two readings 800 ms apart agree (at most about 40 s): how soon
            // the buffers between are full depends on how busy the machine is.
            let mid = pulled;
            for (let i = 0; i < 50; i++) {
              await sleep(800);
              if (pulled === mid) break;
              mid = pulled;
            }
            // What tar read (/proc/PID/io); gVisor has no such file: what tar wrote then,
            // which is what it read less its own small buffer.
            const io = await processIo(container, "tar\\ -x*");
            const written = async () => {
              const r = await dockerExec(container, ["sh", "-c", "busybox find /workspace -name data.bin -exec busybox stat -c %s {} \\;"]);
              return Number(r.stdout.trim().split("\n")[0]);
            };
            readings.push({ before, mid, after: pulled, rchar: Number.isFinite(io?.rchar) ? io.rchar : await written() });
            await dockerExec(container, ["kill", "-CONT", String(tar.pid)]);
          })();
          probe.catch(() => {});
          readings.probe = probe;
        }
        pulled += block.length;
        yield block;
      }
    }
    const summary = await rt.importTree([{ kind: "file", path: "held/data.bin", byteLength: 96 * MiB, open: chunks }], { quotas: BIG });
    await readings.probe;
    assert.equal(summary.bytes, 96 * MiB);
    const [{ before, mid, after, rchar }] = readings;
    t.diagnostic(`tar stopped with the source at ${(before / MiB).toFixed(1)} MiB; read ${(rchar / MiB).toFixed(1)} MiB; source at ${(mid / MiB).toFixed(1)}, then ${(after / MiB).toFixed(1)} MiB`);
    assert.equal(after, mid, "the source is not read while the sandbox's tar is stopped");
    // Ahead of what tar read: a pipe, the agent's stdin window (256 KiB), what waits for
    // credit here (TREE_IMPORT_HIGH, 1 MiB) and a chunk or two in JavaScript.
    assert.ok(after - rchar < 8 * MiB, `the source ran ${((after - rchar) / MiB).toFixed(1)} MiB ahead of tar`);
    const check = await rt.exec({ command: "sh", args: ["-c", "wc -c < held/data.bin"] });
    assert.equal(text(check.stdout).trim(), String(96 * MiB));
  });
});

// An agent that cannot run (the package's agent directory replaced by a script printing
// garbage): transport "auto" imports and exports through the engine, transport "agent"
// fails clearly. In a child process (the directory is read at load).
test("where the agent cannot run: auto takes the engine path, agent fails with docker_unavailable", { timeout: 120_000 }, (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), "anvia-liar-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const arch of ["x86_64", "aarch64"]) {
    mkdirSync(path.join(dir, arch));
    writeFileSync(path.join(dir, arch, "anvia-agent"), "#!/bin/sh\nprintf 'GARBAGE\\377\\377\\377\\377 not the protocol at all'\nsleep 2\n");
    chmodSync(path.join(dir, arch, "anvia-agent"), 0o755);
  }
  const script = `
    import { DockerSandboxClient } from ${JSON.stringify(fileURLToPath(new URL("../../lib/index.js", import.meta.url)))};
    const options = ${JSON.stringify(baseOptions())};
    const out = {};
    for (const transport of ["auto", "agent"]) {
      const box = await new DockerSandboxClient({ transport }).createSandbox(options);
      try {
        const i = await box.runtime.importTree([{ kind: "file", path: "f.txt", bytes: new TextEncoder().encode("fine") }], { path: "t" });
        const names = [];
        const e = await box.runtime.exportTree({ kind: "subtree", path: "t" }, async (entry) => { names.push(entry.path); });
        out[transport] = { imported: i.files, exported: e.files, names };
      } catch (e) {
        out[transport] = { code: e.code, message: e.message };
      }
      try {
        await box.runtime.exportTree({ kind: "workspace" }, async () => {});
        out[transport + "Export"] = "ok";
      } catch (e) {
        out[transport + "Export"] = { code: e.code, message: e.message };
      } finally {
        await box.destroy();
      }
    }
    console.log(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
    env: { ...process.env, ANVIA_SANDBOX_AGENT_DIR: dir },
    encoding: "utf8",
    timeout: 100_000,
  });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split("\n").at(-1));
  assert.deepEqual(out.auto, { imported: 1, exported: 1, names: ["t", "t/f.txt"] });
  assert.equal(out.autoExport, "ok");
  assert.equal(out.agent.code, "docker_unavailable");
  assert.match(out.agent.message, /^The sandbox agent is not available: /);
  assert.equal(out.agentExport.code, "docker_unavailable");
  assert.match(out.agentExport.message, /^The sandbox agent is not available: /);
});
