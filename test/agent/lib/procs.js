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

export async function waitGone(pid, ms = 3000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !isAlive(pid);
}

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
