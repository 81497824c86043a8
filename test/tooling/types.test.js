// The public types compile for real consumer code (test/types/consumer.ts, with its
// `@ts-expect-error` misuse lines), and the check is able to fail: the same consumer with one
// deliberate misuse added, type-checked from a temporary directory, must be rejected.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsc = path.join(root, "node_modules/typescript/bin/tsc");
const projectConfig = path.join(root, "test/types/tsconfig.json");

function runTsc(configPath) {
  return spawnSync(process.execPath, [tsc, "-p", configPath, "--pretty", "false"], {
    cwd: root,
    encoding: "utf8",
    timeout: 120_000
  });
}

test("the consumer type-checks against types/index.d.ts", () => {
  const result = runTsc(projectConfig);
  assert.equal(result.status, 0, `tsc failed:\n${result.stdout}${result.stderr}`);
});

test("a consumer with a type error fails the same check", (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), "anvia-sandbox-types-"));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const consumer = readFileSync(path.join(root, "test/types/consumer.ts"), "utf8");
  // Reading exitCode without narrowing on status is the misuse the types exist to stop.
  const broken = `${consumer}
export async function misuse(runtime: import("@anvia/sandbox").DockerSandboxRuntime) {
  const result = await runtime.exec({ command: "true" });
  return result.exitCode;
}
`;
  writeFileSync(path.join(directory, "consumer.ts"), broken);
  // An ES module consumer with the package installed: node_modules/@anvia/sandbox is this
  // repository, so the import resolves through its package.json `exports`, as in the project.
  writeFileSync(path.join(directory, "package.json"), JSON.stringify({ type: "module" }));
  mkdirSync(path.join(directory, "node_modules/@anvia"), { recursive: true });
  symlinkSync(root, path.join(directory, "node_modules/@anvia/sandbox"), "dir");
  symlinkSync(path.join(root, "node_modules/@types"), path.join(directory, "node_modules/@types"), "dir");
  writeFileSync(
    path.join(directory, "tsconfig.json"),
    JSON.stringify({ extends: projectConfig, files: ["consumer.ts"] })
  );
  const result = runTsc(path.join(directory, "tsconfig.json"));
  assert.notEqual(result.status, 0, "tsc accepted a broken consumer");
  const output = `${result.stdout}${result.stderr}`;
  assert.match(output, /error TS2339: Property 'exitCode' does not exist/);
  // Only the deliberate error: the rest of the copy still type-checks.
  assert.equal(output.match(/error TS\d+/g)?.length, 1, output);
});
