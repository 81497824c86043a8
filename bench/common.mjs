// Shared by the three implementations of the benchmark: the image, the workspace, the
// shell scripts the original package (and this one) run inside the container, a small
// tar writer/reader for the dockerode path, and the statistics.
import { randomUUID } from "node:crypto";
import path from "node:path";

export const IMAGE = process.env.ANVIA_TEST_IMAGE ?? "anvia-sandbox/bookworm:local";
export const WORKDIR = "/workspace";
export const PORT = 8080;

// The original's keep-alive command for the sandbox container (createRunArgs).
export const KEEP_ALIVE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done";

// The original's process launcher and wrapper (docker-process.ts), byte for byte.
export const PROCESS_LAUNCHER = [
  'wrapper="$1"',
  "shift",
  "if command -v setsid >/dev/null 2>&1 && setsid -w true >/dev/null 2>&1; then",
  '  exec setsid -w sh -c "$wrapper" "$@"',
  "fi",
  'exec sh -c "$wrapper" "$@"',
].join("\n");

export const PROCESS_WRAPPER = [
  'marker="$1"',
  "shift",
  "group=$$",
  `printf '\\036%s:%s:%s\\036' "$marker" "$$" "$group"`,
  "IFS= read -r ready || exit 125",
  '[ "$ready" = "start" ] || exit 125',
  '"$@" &',
  "child=$!",
  "terminate() {",
  '  wait "$child" 2>/dev/null || true',
  "  exit 143",
  "}",
  "trap terminate TERM INT",
  'wait "$child"',
  "exit $?",
].join("\n");

export const PROCESS_MARKER_PREFIX = "ANVIA_PROCESS";

// The original's port probe (one pass over /proc/net/tcp{,6}; exit 0 when listening).
export const PORT_PROBE = [
  `port="$(printf '%04X' "$1")"`,
  "for table in /proc/net/tcp /proc/net/tcp6; do",
  '  [ -r "$table" ] || continue',
  "  while read -r _ local _ state _; do",
  '    case "$local" in',
  '      "00000000:$port"|"00000000000000000000000000000000:$port")',
  '        [ "$state" = "0A" ] && exit 0',
  "        ;;",
  "    esac",
  '  done < "$table"',
  "done",
  "exit 1",
].join("\n");

// This package's port probe (src/ports.c): the same probe looped inside the container,
// so a wait is one exec. The dockerode path runs the same script.
export const PORT_PROBE_LOOP = [
  `port="$(printf '%04X' "$1")"`,
  "probe() {",
  "for table in /proc/net/tcp /proc/net/tcp6; do",
  '  [ -r "$table" ] || continue',
  "  while read -r _ local _ state _; do",
  '    case "$local" in',
  '      "00000000:$port"|"00000000000000000000000000000000:$port")',
  '        [ "$state" = "0A" ] && return 0',
  "        ;;",
  "    esac",
  '  done < "$table"',
  "done",
  "return 1",
  "}",
  "while :; do",
  "  probe && exit 0",
  '  sleep "$2" || exit 1',
  "done",
].join("\n");

// This package's stop in one exec (src/procmgr.c): TERM to the group, wait up to the
// grace period, KILL, wait up to one more second. The dockerode path runs the same script.
export const STOP_SCRIPT = [
  'pg="$1"',
  "n=$(( ($2 + 49) / 50 ))",
  'gone() { ! kill -0 "-$pg" 2>/dev/null; }',
  "gone && exit 0",
  'kill -TERM "-$pg" 2>/dev/null',
  "i=0",
  'while [ "$i" -lt "$n" ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done',
  "gone && exit 0",
  'kill -KILL "-$pg" 2>/dev/null',
  "i=0",
  'while [ "$i" -lt 20 ]; do gone && exit 0; sleep 0.05; i=$((i + 1)); done',
  "exit 1",
].join("\n");

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_COMMAND_TIMEOUT_MS = 30_000;
// The bench sandbox allows many managed processes, so that repeated start/stop runs
// measure starting and stopping, not the original's pruning of finished records.
export const BENCH_MAX_PROCESSES = 1000;

export function containerNameFor(id) {
  return `anvia-sandbox-${id}`;
}

// Sandbox ids of a run: <prefix>-<what>-<random>; the prefix (--id-prefix) lets a caller
// find exactly the sandboxes of its own run.
let idPrefix = "bench";
export function setIdPrefix(prefix) {
  if (!/^[a-z0-9][a-z0-9_.-]{0,30}$/.test(prefix)) throw new Error(`invalid --id-prefix: ${prefix}`);
  idPrefix = prefix;
}
export function newSandboxId(tag) {
  return `${idPrefix}-${tag}-${randomUUID().slice(0, 8)}`;
}

export function containerPath(workdir, relative) {
  return path.posix.join(workdir, relative);
}

export function parentSandboxPath(relative) {
  return path.posix.dirname(relative);
}

// The labels the original puts on its container (createRunArgs), for the CLI and
// dockerode paths.
export function runtimeLabels({ id, volumeName, networkMode, maxProcesses = 4 }) {
  return {
    "anvia.sandbox.schema": "1",
    "anvia.sandbox.id": id,
    "anvia.sandbox.workdir": WORKDIR,
    "anvia.sandbox.workspace.type": "ephemeral",
    "anvia.sandbox.workspace.volume": volumeName,
    "anvia.sandbox.network.mode": networkMode,
    "anvia.sandbox.runtime.command-timeout-ms": `${DEFAULT_COMMAND_TIMEOUT_MS}`,
    "anvia.sandbox.runtime.max-output-bytes": `${DEFAULT_MAX_OUTPUT_BYTES}`,
    "anvia.sandbox.runtime.max-file-bytes": `${DEFAULT_MAX_FILE_BYTES}`,
    "anvia.sandbox.runtime.max-processes": `${maxProcesses}`,
  };
}

// ---------------------------------------------------------------- find -printf parsing

export function parseFindOutput(text, workdir) {
  return text
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => {
      const [absolutePath, rawType, rawSize] = line.split("\t");
      if (absolutePath === undefined || rawType === undefined || rawSize === undefined) {
        throw new Error("Docker returned invalid file metadata.");
      }
      const relativePath = path.posix.relative(workdir, absolutePath);
      const size = Number(rawSize);
      const type = rawType === "f" ? "file" : rawType === "d" ? "directory" : rawType === "l" ? "symlink" : "other";
      const entry = { path: path.posix.normalize(relativePath), type };
      if (type === "file" && Number.isSafeInteger(size) && size >= 0) entry.size = size;
      return entry;
    });
}

// ---------------------------------------------------------------- tar, by hand (ustar)

function octal(value, width) {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function tarHeader({ name, mode, size, mtime, type }) {
  const h = Buffer.alloc(512, 0);
  if (Buffer.byteLength(name) > 100) throw new Error(`tar name too long for this writer: ${name}`);
  h.write(name, 0, 100, "utf8");
  h.write(octal(mode, 8), 100, 8, "ascii");
  h.write(octal(0, 8), 108, 8, "ascii"); // uid
  h.write(octal(0, 8), 116, 8, "ascii"); // gid
  h.write(octal(size, 12), 124, 12, "ascii");
  h.write(octal(mtime, 12), 136, 12, "ascii");
  h.write("        ", 148, 8, "ascii"); // checksum placeholder
  h.write(type, 156, 1, "ascii");
  h.write("ustar\0", 257, 6, "ascii");
  h.write("00", 263, 2, "ascii");
  h.write("root", 265, 32, "ascii");
  h.write("root", 297, 32, "ascii");
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += h[i];
  h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8, "ascii");
  return h;
}

// entries: [{ path, data?: Buffer }] (no data: a directory). Paths are relative.
export function buildTar(entries) {
  const mtime = Math.floor(Date.now() / 1000);
  const parts = [];
  for (const entry of entries) {
    if (entry.data === undefined) {
      parts.push(tarHeader({ name: `${entry.path.replace(/\/+$/, "")}/`, mode: 0o755, size: 0, mtime, type: "5" }));
    } else {
      parts.push(tarHeader({ name: entry.path, mode: 0o644, size: entry.data.length, mtime, type: "0" }));
      parts.push(entry.data);
      const pad = (512 - (entry.data.length % 512)) % 512;
      if (pad > 0) parts.push(Buffer.alloc(pad, 0));
    }
  }
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}

// The directories (parents first, each once) and files of an upload.
export function uploadEntries(files, { withParents = true } = {}) {
  const entries = [];
  const dirs = new Set();
  for (const [filePath, content] of files) {
    if (withParents) {
      const parts = path.posix.dirname(filePath).split("/").filter((p) => p !== "." && p !== "");
      for (let i = 1; i <= parts.length; i++) {
        const dir = parts.slice(0, i).join("/");
        if (!dirs.has(dir)) {
          dirs.add(dir);
          entries.push({ path: dir });
        }
      }
    }
    entries.push({ path: filePath, data: Buffer.isBuffer(content) ? content : Buffer.from(content) });
  }
  return entries;
}

function readOctal(buf, start, width) {
  const field = buf.subarray(start, start + width);
  if (field[0] & 0x80) {
    // base-256 (GNU) for large values
    let value = 0;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i];
    return value;
  }
  const text = field.toString("ascii").replace(/\0.*$/s, "").trim();
  return text.length === 0 ? 0 : parseInt(text, 8);
}

// The first regular file of a tar stream (PAX and GNU long-name headers are skipped).
export function firstRegularFile(tar) {
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const size = readOctal(header, 124, 12);
    const type = String.fromCharCode(header[156] || 48);
    const dataStart = offset + 512;
    if (type === "0" || type === "\0" || header[156] === 0) {
      if (dataStart + size > tar.length) throw new Error("truncated tar stream");
      return { type: "file", data: tar.subarray(dataStart, dataStart + size) };
    }
    if (type === "2" || type === "5") return { type: type === "2" ? "symlink" : "directory" };
    offset = dataStart + Math.ceil(size / 512) * 512;
  }
  throw new Error("no entry in tar stream");
}

// ---------------------------------------------------------------- statistics

export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  if (sorted.length === 1) return sorted[0];
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    mean: sorted.length ? sum / sorted.length : NaN,
    min: sorted[0] ?? NaN,
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

// A small deterministic PRNG so the bootstrap interval is reproducible.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Ratios baseline/package, pair by pair (run i of one against run i of the other), with
// the median, the 5th and 95th percentiles of the pair ratios, and a bootstrap 95%
// interval of their median.
export function pairRatios(baseline, pkg) {
  const n = Math.min(baseline.length, pkg.length);
  const ratios = [];
  for (let i = 0; i < n; i++) ratios.push(baseline[i] / pkg[i]);
  const sorted = [...ratios].sort((a, b) => a - b);
  let ci = [NaN, NaN];
  if (n >= 5) {
    const rand = mulberry32(0x5eed + n);
    const medians = [];
    for (let b = 0; b < 2000; b++) {
      const sample = [];
      for (let i = 0; i < n; i++) sample.push(ratios[Math.floor(rand() * n)]);
      sample.sort((x, y) => x - y);
      medians.push(quantile(sample, 0.5));
    }
    medians.sort((x, y) => x - y);
    ci = [quantile(medians, 0.025), quantile(medians, 0.975)];
  }
  return {
    n,
    median: quantile(sorted, 0.5),
    p5: quantile(sorted, 0.05),
    p95: quantile(sorted, 0.95),
    ci95: ci,
    pairs: ratios,
  };
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
