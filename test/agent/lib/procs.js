// Process inspection for the agent tests: liveness by /proc (a zombie is not alive), the
// agent's children, and waiting for a pid to go.
import { readFileSync, readdirSync } from "node:fs";

export function procStat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "latin1");
    const close = s.lastIndexOf(")");
    const f = s.slice(close + 2).split(" ");
    return { pid, state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]) };
  } catch {
    return null;
  }
}

export function isAlive(pid) {
  const st = procStat(pid);
  return st !== null && st.state !== "Z" && st.state !== "X";
}

export function allProcs() {
  const out = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

export function childrenOf(pid) {
  return allProcs().filter((p) => p.ppid === pid);
}

export function zombiesOf(pid) {
  return childrenOf(pid).filter((p) => p.state === "Z");
}

// Polls until the process is gone (the test's own timeout bounds a process that stays).
export async function waitGone(pid) {
  while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
  return true;
}

// The system call a sleeping process is blocked in, from /proc/<pid>/syscall: { nr, fd }
// (fd: its first argument), or null while the process runs (a task preempted in a call
// reads "running") or once it is gone; undefined where the file cannot be read at all (no
// ptrace access), for callers to fall back on something weaker.
export function blockedSyscall(pid) {
  let s;
  try {
    s = readFileSync(`/proc/${pid}/syscall`, "latin1").trim();
  } catch (e) {
    return e.code === "ENOENT" || e.code === "ESRCH" ? null : undefined;
  }
  const st = procStat(pid);
  if (st === null || st.state !== "S" || !/^\d+ /.test(s)) return null;
  const [nr, first] = s.split(" ");
  return { nr: Number(nr), fd: Number(BigInt(first)) };
}

// Whether the process sleeps in a write(2) to `fd`, as a writer to a full pipe does (the
// commands the agent runs are host programs, under qemu too). undefined: cannot tell.
export function blockedWriting(pid, fd = 1) {
  const sc = blockedSyscall(pid);
  if (sc === undefined) return undefined;
  return sc !== null && sc.nr === SYS_WRITE && sc.fd === fd;
}
const SYS_WRITE = { x64: 1, arm64: 64 }[process.arch] ?? 1;

export function killQuietly(pid, sig = "SIGKILL") {
  try {
    process.kill(pid, sig);
  } catch {}
}

// CPU time (user + system, in clock ticks of 10 ms) a process has used.
export function cpuTicks(pid) {
  const s = readFileSync(`/proc/${pid}/stat`, "latin1");
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
}
