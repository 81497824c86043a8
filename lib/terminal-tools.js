// The terminal tools of createDockerSandboxTools (lib/tools.js): start_terminal,
// write_terminal, read_terminal and stop_terminal, so a model can drive a REPL or any
// program that needs a terminal turn by turn. Each call that reads gathers the terminal's
// output from where this tool set's last read ended until the program has been quiet for
// `yieldMs`, `maxBytes` are read, the terminal ends, or the policy's maxYieldMs has passed
// since the call began (a program that never stops printing cannot hold a call forever).
//
// The tool set only reaches the terminals it started (not the host's own, nor another tool
// set's). The command policy of exec_command applies to the program a terminal starts; what
// is then typed into that program is the program's business (a shell in a terminal runs
// anything), which is why the default program, the sandbox's shell, needs a policy that
// admits that shell.
//
// Output is decoded as UTF-8 with replacement (terminal output is for display and may hold
// any byte), and a read never ends inside a character: the bytes of a character cut by the
// end of a read are left for the next one, so no character is split in two.
import { z } from "zod";
import { DockerSandboxError } from "./errors.js";
import { sandboxShell } from "./shell.js";

export const terminalToolNames = ["start_terminal", "write_terminal", "read_terminal", "stop_terminal"];

const maxToolTimeoutMs = 3e5;
const maxToolBytes = 1024 * 1024;
const defaults = { defaultYieldMs: 1e3, maxYieldMs: 3e4, maxOutputBytes: 64 * 1024, stopGracePeriodMs: 2e3 };

const terminalIdInput = z.string().min(1).describe("The terminalId start_terminal returned.");
const yieldInput = z
  .number()
  .int()
  .nonnegative()
  .max(maxToolTimeoutMs)
  .describe("Return once the output has been quiet this long (milliseconds).")
  .optional();
const maxBytesInput = z
  .number()
  .int()
  .positive()
  .max(maxToolBytes)
  .describe("Return at most this many bytes of output; read_terminal continues from nextOffset.")
  .optional();
const startTerminalInput = z.object({
  command: z
    .string()
    .min(1)
    .describe(
      "Program to run in the terminal. Omit for an interactive shell (/bin/bash when available, otherwise sh). Natural command lines use /bin/bash -c when available, otherwise sh -c."
    )
    .optional(),
  args: z.array(z.string()).describe("Optional exact arguments. Omit when command contains the complete command line.").optional(),
  cwd: z.string().describe("Workspace-relative directory or an absolute directory inside the sandbox workdir.").optional(),
  env: z.record(z.string(), z.string()).optional(),
  cols: z.number().int().min(1).max(1000).optional(),
  rows: z.number().int().min(1).max(1000).optional(),
  yieldMs: yieldInput,
  maxBytes: maxBytesInput
});
const writeTerminalInput = z.object({
  terminalId: terminalIdInput,
  input: z
    .string()
    .describe('Keystrokes to send, as typed: "\\n" is Enter, "\\u0003" is Ctrl-C, "\\u0004" is Ctrl-D.'),
  yieldMs: yieldInput,
  maxBytes: maxBytesInput
});
const readTerminalInput = z.object({
  terminalId: terminalIdInput,
  since: z
    .number()
    .int()
    .nonnegative()
    .describe("Byte offset to read from; omit to continue where the last read ended.")
    .optional(),
  yieldMs: yieldInput,
  maxBytes: maxBytesInput
});
const stopTerminalInput = z.object({ terminalId: terminalIdInput });

const outputFields = {
  terminalId: z.string(),
  output: z.string(),
  offset: z.number().int().nonnegative(),
  nextOffset: z.number().int().nonnegative(),
  droppedBytes: z.number().int().nonnegative(),
  outputTruncated: z.boolean(),
  status: z.enum(["running", "exited"]),
  exitCode: z.number().int().optional(),
  signal: z.string().nullable().optional()
};
const terminalOutput = z.object(outputFields);
const startTerminalOutput = z.object({ ...outputFields, pid: z.number().int() });
const stopTerminalOutput = z.object({
  terminalId: z.string(),
  status: z.literal("exited"),
  exitCode: z.number().int(),
  signal: z.string().nullable()
});

// The factory's checks of the `terminal` policy (shape errors TypeError, ranges tool_policy),
// and the policy with its defaults.
export function resolveTerminalPolicy(policy, toolPolicyError) {
  if (policy === undefined) return Object.freeze({ ...defaults });
  if (typeof policy !== "object" || policy === null || Array.isArray(policy)) {
    throw new TypeError("terminal must be an object.");
  }
  const resolved = { ...defaults };
  for (const [key, min, max] of [
    ["defaultYieldMs", 0, maxToolTimeoutMs],
    ["maxYieldMs", 1, maxToolTimeoutMs],
    ["maxOutputBytes", 1, maxToolBytes],
    ["stopGracePeriodMs", 0, maxToolTimeoutMs]
  ]) {
    const value = policy[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      throw toolPolicyError(`terminal.${key} must be an integer from ${min} to ${max}.`);
    }
    resolved[key] = value;
  }
  if (resolved.defaultYieldMs > resolved.maxYieldMs) {
    throw toolPolicyError("terminal.defaultYieldMs cannot exceed terminal.maxYieldMs.");
  }
  return Object.freeze(resolved);
}

// The length of the longest prefix of bytes[0, end) that does not end inside a UTF-8
// character (a lead byte whose continuation bytes are not all there).
export function utf8Boundary(bytes, end) {
  let i = end;
  let back = 0;
  while (i > 0 && back < 4 && (bytes[i - 1] & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i === 0) return end;
  const lead = bytes[i - 1];
  const need = lead >= 0xf8 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > 1 && end - (i - 1) < need ? i - 1 : end;
}

const QUIET = Symbol("quiet");
const decoder = new TextDecoder("utf-8");

// The terminal's output from `since`: until quiet for yieldMs, maxBytes, the terminal's
// end or the deadline. -> { bytes, offset, next, dropped, truncated, ended }
export async function gatherOutput(terminal, since, { yieldMs, maxBytes, deadlineMs, abortSignal }) {
  abortSignal?.throwIfAborted();
  const stop = new AbortController();
  const onAbort = () => stop.abort(abortSignal.reason);
  abortSignal?.addEventListener("abort", onAbort, { once: true });
  let quietTimer;
  const quiet = () => {
    clearTimeout(quietTimer);
    quietTimer = setTimeout(() => stop.abort(QUIET), yieldMs);
  };
  const deadline = setTimeout(() => stop.abort(QUIET), deadlineMs);
  const parts = [];
  let size = 0;
  let offset;
  let truncated = false;
  let ended = false;
  quiet();
  try {
    for await (const chunk of terminal.output({ since, abortSignal: stop.signal })) {
      offset ??= chunk.offset;
      let data = chunk.data;
      if (size + data.byteLength > maxBytes) {
        data = data.subarray(0, utf8Boundary(data, maxBytes - size));
        truncated = true;
      }
      parts.push(data);
      size += data.byteLength;
      if (truncated) break;
      quiet();
    }
    ended = !truncated;
  } catch (error) {
    if (stop.signal.reason !== QUIET) throw error;
  } finally {
    clearTimeout(quietTimer);
    clearTimeout(deadline);
    abortSignal?.removeEventListener("abort", onAbort);
  }
  abortSignal?.throwIfAborted();
  let bytes = Buffer.concat(parts, size);
  // A character cut by the end of a read that goes on waits for the next read.
  if (!ended) bytes = bytes.subarray(0, utf8Boundary(bytes, bytes.byteLength));
  offset ??= since;
  return { bytes, offset, next: offset + bytes.byteLength, dropped: offset - since, truncated, ended };
}

// The four tools over one set of terminals. `kit` is lib/tools.js's: createTool,
// resolveInvocation, toolPath, toolPolicyError.
export function createTerminalTools(options, kit) {
  const policy = options.terminal;
  const sandbox = options.sandbox;
  const terminals = new Map(); // terminalId -> { terminal, next }

  const entry = (terminalId) => {
    const found = terminals.get(terminalId);
    if (found === undefined) throw new DockerSandboxError(`Unknown sandbox terminal: ${terminalId}`, "process");
    return found;
  };
  const limits = (yieldMs, maxBytes) => {
    const effectiveYieldMs = yieldMs ?? policy.defaultYieldMs;
    if (effectiveYieldMs > policy.maxYieldMs) {
      throw kit.toolPolicyError(`Terminal yield exceeds policy (${effectiveYieldMs} > ${policy.maxYieldMs}).`);
    }
    const effectiveMaxBytes = maxBytes ?? policy.maxOutputBytes;
    if (effectiveMaxBytes > policy.maxOutputBytes) {
      throw kit.toolPolicyError(`Terminal output request exceeds policy (${effectiveMaxBytes} > ${policy.maxOutputBytes}).`);
    }
    return { yieldMs: effectiveYieldMs, maxBytes: effectiveMaxBytes, deadlineMs: policy.maxYieldMs };
  };
  // Reads for a tool call and answers with what it read, the offsets and the status.
  const answer = async (terminalId, since, limit, abortSignal) => {
    const held = entry(terminalId);
    const got = await gatherOutput(held.terminal, since ?? held.next, { ...limit, abortSignal });
    held.next = got.next;
    let result = {
      terminalId,
      output: decoder.decode(got.bytes),
      offset: got.offset,
      nextOffset: got.next,
      droppedBytes: got.dropped,
      outputTruncated: got.truncated,
      status: got.ended ? "exited" : "running"
    };
    if (got.ended) {
      const exit = await held.terminal.wait(abortSignal === undefined ? {} : { abortSignal });
      result = { ...result, exitCode: exit.exitCode, signal: exit.signal };
    }
    return result;
  };
  const withSignal = (object, abortSignal) => (abortSignal === undefined ? object : { ...object, abortSignal });

  const tools = {
    start_terminal: () =>
      kit.createTool({
        name: "start_terminal",
        description:
          "Start a program in an interactive terminal (a pty) inside the sandbox, by default a shell, and return its first output. Drive it with write_terminal.",
        inputSchema: startTerminalInput,
        outputSchema: startTerminalOutput,
        execute: async ({ command, args, cwd, env, cols, rows, yieldMs, maxBytes }, context) => {
          const limit = limits(yieldMs, maxBytes);
          const toolCwd = cwd === undefined ? undefined : kit.toolPath(sandbox, cwd, true);
          let invocation;
          if (command === undefined) {
            if (args !== undefined) throw new TypeError("args needs a command.");
            const shell = await sandboxShell(sandbox, context.abortSignal);
            kit.assertCommandAllowed(shell, options.exec?.commands);
            invocation = { command: shell, args: ["-i"] };
          } else {
            invocation = await kit.resolveInvocation(options, command, args, context.abortSignal);
          }
          let startOptions = { command: invocation.command };
          if (invocation.args !== undefined) startOptions = { ...startOptions, args: invocation.args };
          if (toolCwd !== undefined) startOptions = { ...startOptions, cwd: toolCwd };
          if (env !== undefined) startOptions = { ...startOptions, env };
          if (cols !== undefined) startOptions = { ...startOptions, cols };
          if (rows !== undefined) startOptions = { ...startOptions, rows };
          const terminal = await sandbox.startTerminal(withSignal(startOptions, context.abortSignal));
          terminals.set(terminal.id, { terminal, next: 0 });
          return { ...(await answer(terminal.id, 0, limit, context.abortSignal)), pid: terminal.pid };
        }
      }),
    write_terminal: () =>
      kit.createTool({
        name: "write_terminal",
        description:
          "Type input into a terminal started by start_terminal, then return the output that follows until it has been quiet for yieldMs.",
        inputSchema: writeTerminalInput,
        outputSchema: terminalOutput,
        execute: async ({ terminalId, input, yieldMs, maxBytes }, context) => {
          const limit = limits(yieldMs, maxBytes);
          await entry(terminalId).terminal.write(input, withSignal({}, context.abortSignal));
          return answer(terminalId, undefined, limit, context.abortSignal);
        }
      }),
    read_terminal: () =>
      kit.createTool({
        name: "read_terminal",
        description:
          "Read a terminal's output from where the last read ended (or from since), until it has been quiet for yieldMs.",
        inputSchema: readTerminalInput,
        outputSchema: terminalOutput,
        execute: async ({ terminalId, since, yieldMs, maxBytes }, context) =>
          answer(terminalId, since, limits(yieldMs, maxBytes), context.abortSignal)
      }),
    stop_terminal: () =>
      kit.createTool({
        name: "stop_terminal",
        description: "End a terminal started by start_terminal: hang up, then kill what is left after a grace period.",
        inputSchema: stopTerminalInput,
        outputSchema: stopTerminalOutput,
        execute: async ({ terminalId }, context) => {
          const { terminal } = entry(terminalId);
          const abortSignal = context.abortSignal;
          try {
            await terminal.kill("SIGHUP", withSignal({}, abortSignal));
          } catch (error) {
            // A program that already ended leaves its exit status to be read; else as it is.
            if (error?.code !== "process") throw error;
          }
          // A timer of our own, not AbortSignal.timeout(): that one does not keep the
          // process alive while the grace period runs.
          const grace = new AbortController();
          const graceTimer = setTimeout(() => grace.abort(), policy.stopGracePeriodMs);
          const waitSignal = abortSignal === undefined ? grace.signal : AbortSignal.any([grace.signal, abortSignal]);
          let exit;
          try {
            exit = await terminal.wait({ abortSignal: waitSignal });
          } catch (error) {
            abortSignal?.throwIfAborted();
            if (!grace.signal.aborted) throw error;
            await terminal.kill("SIGKILL", withSignal({}, abortSignal));
            exit = await terminal.wait(withSignal({}, abortSignal));
          } finally {
            clearTimeout(graceTimer);
          }
          terminals.delete(terminalId);
          return { terminalId, status: "exited", exitCode: exit.exitCode, signal: exit.signal };
        }
      })
  };
  return (name) => tools[name]();
}
