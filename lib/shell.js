// Natural command lines for the agent tools (upstream after 1.1.3): which command lines need a
// shell, the shell interpreters an allow-mode policy keeps out unless it opts in, and which
// shell a sandbox has. Pure JS over the runtime interface, used only by lib/tools.js.
import { DockerSandboxError } from "./errors.js";

// Executables that run whatever their arguments say (`sh -c "..."`): an allow-mode command
// policy refuses them, by basename, unless it sets allowShellInterpreters: true.
export const shellInterpreters = Object.freeze(["sh", "bash", "zsh", "ksh", "dash", "ash", "busybox", "fish", "csh", "tcsh"]);

// The text after the last "/" ("/usr/bin/bash" is "bash").
export function commandBasename(command) {
  return command.slice(command.lastIndexOf("/") + 1);
}

export function isShellInterpreter(command) {
  return shellInterpreters.includes(commandBasename(command));
}

// A command given without args is a natural command line when it holds white space (as
// JavaScript's \s sees it, Unicode spaces included) or one of the characters a shell gives a
// meaning to. `args: []` is an exact argv and never one.
const shellCharacters = new Set("|&;<>()$`'\"*?[]{}!#~=");
const whiteSpace = /\s/u;
export function isNaturalCommandLine(command, args) {
  if (args !== undefined) return false;
  for (const character of command) {
    if (shellCharacters.has(character) || whiteSpace.test(character)) return true;
  }
  return false;
}

// One detection per runtime object, shared by every tool of every factory made for it: the
// promise of "/bin/bash" or "sh". A failed detection is forgotten, so the next call tries again.
const detected = new WeakMap();

// The shell for a natural command line. The caller's signal ends only the caller's wait (with
// signal.reason): the detection itself carries no signal and goes on for the others.
export async function sandboxShell(sandbox, abortSignal) {
  abortSignal?.throwIfAborted();
  let shell = detected.get(sandbox);
  if (shell === undefined) {
    shell = detectShell(sandbox).catch((error) => {
      if (detected.get(sandbox) === shell) detected.delete(sandbox);
      throw error;
    });
    detected.set(sandbox, shell);
  }
  if (abortSignal === undefined) return shell;
  let onAbort;
  const aborted = new Promise((_, reject) => {
    onAbort = () => reject(abortSignal.reason);
    abortSignal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([shell, aborted]);
  } finally {
    abortSignal.removeEventListener("abort", onAbort);
  }
}

// A fixed probe: nothing of the caller's (cwd, env, signal) goes into it. Exit 0: bash is
// there; exit 1: it is not; anything else says nothing about bash and is an error.
async function detectShell(sandbox) {
  const result = await sandbox.exec({ command: "sh", args: ["-c", "test -x /bin/bash"], timeoutMs: 5000 });
  if (result.status === "timed_out") {
    throw new DockerSandboxError("Sandbox shell detection timed out.", "timeout");
  }
  if (result.exitCode === 0) return "/bin/bash";
  if (result.exitCode === 1) return "sh";
  throw new DockerSandboxError("Could not detect the sandbox shell.", "docker_command_failed");
}
