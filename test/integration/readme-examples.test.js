// The README's examples as tests (issue 30): every fenced TypeScript block of README.md is
// type-checked against types/index.d.ts (the package as a consumer imports it:
// node_modules/@anvia/sandbox is this checkout) and run against the real engine, so an
// example that stops working fails the suite. The fence's info string says how:
//   ```ts                 type-checked, then run as a module of its own
//   ```ts sandbox         as above, with a `sandbox` (a DockerSandbox of the local image)
//                         in scope, made before the example and destroyed after it
//   ```ts check ...       type-checked only (an example that needs what this machine has
//                         not: a registry, the network); it says so in its fence
// A run starts in a scratch directory holding what the examples name: my-repo/ (with
// dist/ and report.json) and data.bin.
import test, { after, before } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { IMAGE } from "../helpers/docker.js";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const tsc = join(repo, "node_modules/typescript/bin/tsc");
const T = { timeout: 300_000 };

/** The README's TypeScript blocks: { line, info: ["ts", ...words], code }. */
function readmeExamples(text) {
  const out = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(ts|typescript)(\s.*)?$/.exec(lines[i]);
    if (!open) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== "```") end++;
    out.push({ line: start, info: lines[i].slice(3).trim().split(/\s+/), code: lines.slice(start, end).join("\n") });
    i = end;
  }
  return out;
}

/** The module a block becomes: its imports first, then (for `sandbox`) the sandbox made,
 * the example, and the sandbox destroyed. */
function moduleOf(example) {
  const lines = example.code.split("\n");
  const imports = lines.filter((l) => /^import\s/.test(l));
  const body = lines.filter((l) => !/^import\s/.test(l)).join("\n");
  if (!example.info.includes("sandbox")) return `${imports.join("\n")}\n${body}\nexport {};\n`;
  return `${imports.join("\n")}
import { DockerSandboxClient as __Client } from "@anvia/sandbox";
const sandbox = await new __Client().createSandbox({ image: ${JSON.stringify(IMAGE)}, workspace: { type: "ephemeral" }, network: { mode: "none" } });
try {
${body}
} finally {
  await sandbox.destroy();
}
export {};
`;
}

const examples = readmeExamples(readFileSync(join(repo, "README.md"), "utf8"));
const work = mkdtempSync(join(tmpdir(), "anvia-readme-"));
const name = (e) => `example-${e.line}`;
let compiled;

before(() => {
  mkdirSync(join(work, "node_modules/@anvia"), { recursive: true });
  symlinkSync(repo, join(work, "node_modules/@anvia/sandbox"));
  writeFileSync(join(work, "package.json"), JSON.stringify({ type: "module" }));
  writeFileSync(
    join(work, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2022", "ESNext.Disposable"],
        types: ["node"],
        typeRoots: [join(repo, "node_modules/@types")],
        outDir: "out",
        skipLibCheck: true,
      },
      include: ["*.ts"],
    }),
  );
  for (const e of examples) writeFileSync(join(work, `${name(e)}.ts`), moduleOf(e));
  // One compile for all: it type-checks, and emits out/<name>.js for the runs (even with
  // type errors, so a run says what breaks at run time too).
  compiled = spawnSync(process.execPath, [tsc, "-p", join(work, "tsconfig.json"), "--pretty", "false"], { cwd: work, encoding: "utf8" });
});
after(() => rmSync(work, { recursive: true, force: true }));

test("the README has TypeScript examples, each fenced as run, sandbox or check", () => {
  assert.ok(examples.length >= 2, `${examples.length} examples found`);
  for (const e of examples) {
    // "check" may be followed by why; before it, only "sandbox".
    const words = e.info.slice(1);
    const k = words.indexOf("check");
    for (const w of k >= 0 ? words.slice(0, k) : words) assert.equal(w, "sandbox", `README.md:${e.line}: fence word ${w}`);
  }
});

test("every README example type-checks against types/index.d.ts, as a consumer's module", T, () => {
  // A message names the example by its first line in README.md (example-<line>.ts).
  assert.equal(compiled.status, 0, `tsc:\n${compiled.stdout}${compiled.stderr}`);
});

for (const e of examples.filter((x) => !x.info.includes("check"))) {
  test(`README.md:${e.line} runs against the engine`, T, () => {
    const cwd = mkdtempSync(join(work, "run-"));
    mkdirSync(join(cwd, "my-repo/dist"), { recursive: true });
    writeFileSync(join(cwd, "my-repo/dist/index.html"), "<h1>hi</h1>\n");
    writeFileSync(join(cwd, "my-repo/report.json"), "{}\n");
    writeFileSync(join(cwd, "data.bin"), Buffer.alloc(4096, 7));
    const r = spawnSync(process.execPath, [join(work, "out", `${name(e)}.js`)], { cwd, encoding: "utf8", timeout: 240_000 });
    assert.equal(r.status, 0, `README.md:${e.line} failed (${r.signal ?? r.status}):\n${r.stdout}${r.stderr}`);
  });
}
