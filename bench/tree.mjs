// Tree transfers (issue 17): importTree and exportTree of a generated tree against the two
// ways there are without them, interleaved run by run with ratios taken pair by pair as in
// the rest of the bench:
//   - this package: runtime.importTree(hostDir) / runtime.exportTree(subtree, hostDir);
//   - a loop of this package's writeFile / readFile, one file at a time (the host file read
//     or written too), `loopConcurrency` in flight (1 by default: a plain loop);
//   - docker cp of the same directory, into the container / out of it (the CLI spawned as
//     a user would run it: one process per direction).
// All three work on one sandbox made by this package's client with the engine transport
// (root user, the bench image): tree transfers run on the engine path (the agent's table
// has no rows of its own for them yet), and so does the writeFile/readFile loop they are
// compared with. Every run imports into a fresh workspace directory and exports to a fresh
// host directory, both removed outside the timings, and each result is checked.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";

const TREE_IMPLS = ["package", "loop", "cp"];
export const TREE_LABEL = { package: "importTree/exportTree", loop: "writeFile/readFile loop", cp: "docker cp" };

/** `files` files of about `totalBytes` in all, in nested directories; their paths. */
export function generate(root, files, totalBytes) {
  const dirs = [""];
  for (let i = 0; dirs.length < Math.max(2, Math.round(files / 50)); i++) {
    const parent = dirs[i % dirs.length];
    const d = parent ? `${parent}/d${i}` : `d${i}`;
    if (d.split("/").length > 5) continue;
    mkdirSync(path.join(root, d));
    dirs.push(d);
  }
  const avg = totalBytes / files;
  const paths = [];
  let bytes = 0;
  for (let i = 0; i < files; i++) {
    const size = Math.max(1, Math.round(avg * (0.5 + ((i * 7919) % 1000) / 1000)));
    const rel = `${dirs[i % dirs.length] ? `${dirs[i % dirs.length]}/` : ""}f${i}.dat`;
    writeFileSync(path.join(root, rel), randomBytes(size));
    paths.push(rel);
    bytes += size;
  }
  return { paths, bytes };
}

export function hostTotals(dir) {
  let files = 0;
  let bytes = 0;
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        files++;
        bytes += statSync(p).size;
      }
    }
  };
  walk(dir);
  return { files, bytes };
}

export function docker(args) {
  return new Promise((resolve, reject) => {
    const child = spawn("docker", args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`docker ${args.join(" ")}: ${code}: ${err}`))));
  });
}

async function pool(items, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/**
 * Runs the measurements; returns { config, import, export } where each direction has per
 * implementation summaries, the samples, and the pair ratios loop/package and cp/package.
 */
export async function benchTree({ files, totalBytes, runs, warmup, loopConcurrency, loopRuns = runs, directions, sandbox, log, summarize, pairRatios }) {
  const rt = sandbox.handle.runtime;
  const container = sandbox.containerName;
  const work = mkdtempSync(path.join(os.tmpdir(), "anvia-bench-tree-"));
  const src = path.join(work, "src");
  mkdirSync(src);
  const tree = generate(src, files, totalBytes);
  log(`tree: ${tree.paths.length} files, ${(tree.bytes / 2 ** 20).toFixed(1)} MiB, ${directions.join(" and ")}, ${runs} runs (+${warmup} warm-up; the loop, ${loopConcurrency} in flight, in ${Math.min(loopRuns, runs)})`);
  const out = { config: { files: tree.paths.length, bytes: tree.bytes, runs, warmup, loopConcurrency, loopRuns: Math.min(loopRuns, runs) } };
  // The loop runs in the first `loopRuns` measured runs only (and the warm-up ones).
  const skip = (impl, i) => impl === "loop" && (loopRuns === 0 || i >= warmup + loopRuns);
  const clean = async (dir) => {
    const r = await rt.exec({ command: "rm", args: ["-rf", dir] });
    if (r.exitCode !== 0) throw new Error(`rm -rf ${dir} failed`);
  };
  const countIn = async (dir) => {
    const r = await rt.exec({ command: "sh", args: ["-c", `find '${dir}' -type f | wc -l; find '${dir}' -type f -exec cat {} + | wc -c`] });
    const [n, b] = Buffer.from(r.stdout).toString().trim().split(/\s+/).map(Number);
    return { files: n, bytes: b };
  };
  try {
    if (directions.includes("import")) {
      const imports = {
        package: (dest) => rt.importTree(src, { path: dest }),
        loop: (dest) => pool(tree.paths, loopConcurrency, async (rel) => rt.writeFile({ path: `${dest}/${rel}`, data: await readFile(path.join(src, rel)) })),
        cp: (dest) => docker(["cp", src, `${container}:/workspace/${dest}`]),
      };
      const samples = { package: [], loop: [], cp: [] };
      for (let i = 0; i < warmup + runs; i++) {
        for (const impl of rotate(TREE_IMPLS, i)) {
          if (skip(impl, i)) continue;
          const dest = `imp-${impl}-${i}`;
          const s = performance.now();
          await imports[impl](dest);
          const ms = performance.now() - s;
          const got = await countIn(`/workspace/${dest}`);
          if (got.files !== tree.paths.length || got.bytes !== tree.bytes) throw new Error(`${impl} import: ${got.files} files, ${got.bytes} bytes`);
          await clean(`/workspace/${dest}`);
          if (i >= warmup) samples[impl].push(ms);
          log(`  import run ${i + 1 - warmup}/${runs} ${impl}: ${ms.toFixed(0)} ms`);
        }
      }
      out.import = summarizeAll(samples, summarize, pairRatios);
    }
    if (directions.includes("export")) {
      await rt.importTree(src, { path: "tree-src" });
      const exports = {
        package: (dest) => rt.exportTree({ kind: "subtree", path: "tree-src" }, dest),
        loop: async (dest) => {
          const made = new Set();
          await pool(tree.paths, loopConcurrency, async (rel) => {
            const data = await rt.readFile({ path: `tree-src/${rel}` });
            const parent = path.dirname(path.join(dest, "tree-src", rel));
            if (!made.has(parent)) {
              await mkdir(parent, { recursive: true });
              made.add(parent);
            }
            await writeFile(path.join(dest, "tree-src", rel), data);
          });
        },
        cp: async (dest) => {
          mkdirSync(dest);
          await docker(["cp", `${container}:/workspace/tree-src`, path.join(dest, "tree-src")]);
        },
      };
      const samples = { package: [], loop: [], cp: [] };
      for (let i = 0; i < warmup + runs; i++) {
        for (const impl of rotate(TREE_IMPLS, i)) {
          if (skip(impl, i)) continue;
          const dest = path.join(work, `exp-${impl}-${i}`);
          const s = performance.now();
          await exports[impl](dest);
          const ms = performance.now() - s;
          const got = hostTotals(path.join(dest, "tree-src"));
          if (got.files !== tree.paths.length || got.bytes !== tree.bytes) throw new Error(`${impl} export: ${got.files} files, ${got.bytes} bytes`);
          rmSync(dest, { recursive: true, force: true });
          if (i >= warmup) samples[impl].push(ms);
          log(`  export run ${i + 1 - warmup}/${runs} ${impl}: ${ms.toFixed(0)} ms`);
        }
      }
      out.export = summarizeAll(samples, summarize, pairRatios);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return out;
}

function summarizeAll(samples, summarize, pairRatios) {
  const r = { samplesMs: samples };
  for (const impl of TREE_IMPLS) r[impl] = summarize(samples[impl]);
  r.ratios = { loopOverPackage: pairRatios(samples.loop, samples.package), cpOverPackage: pairRatios(samples.cp, samples.package) };
  return r;
}

function rotate(list, i) {
  const k = i % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}
