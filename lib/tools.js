// Agent tools: `createDockerSandboxTools(options)` hands a policy-bounded subset of a sandbox
// runtime to an LLM. The ten tools of the seed's `src/tools.ts` (1.0.0-rc.10), as upstream ships
// them now (after 1.1.3): the same names, zod schemas, factory validation, error classes and
// messages, plus upstream's later changes: allowShellInterpreters in allow-mode command
// policies, natural command lines run through the sandbox's shell (lib/shell.js), tool paths
// that may be absolute inside the sandbox's workdir, and the descriptions that say so. JS over
// the runtime interface; the one native call is the path rule (src/codec/paths.c).
import { z } from "zod";
import { DockerSandboxError, decodeUtf8 } from "./errors.js";
import { native } from "./native.js";
import { isNaturalCommandLine, isShellInterpreter, sandboxShell } from "./shell.js";
import { createTerminalTools, resolveTerminalPolicy, terminalToolNames } from "./terminal-tools.js";

// The seed builds its tools with `createTool` from `@anvia/core/tool`. When that package is
// installed, use it so the tools are exactly the original's (same object shape, same JSON Schema
// conversion). Only "not installed" falls back to the local factory below: a core that is
// installed but fails to load is an error worth seeing, not something to paper over.
let createTool = createLocalTool;
try {
  const core = await import("@anvia/core/tool");
  if (typeof core.createTool === "function") createTool = core.createTool;
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND" && error?.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") {
    throw error;
  }
}

// Local stand-in for `@anvia/core/tool`'s createTool (same contract as core's):
// - `definition(prompt)` returns `{ name, description, parameters }`, where `parameters` is the
//   JSON Schema of the input as core sends it to providers: `z.toJSONSchema(inputSchema)` (output
//   side, so objects carry `additionalProperties: false`, which strict provider modes such as
//   OpenAI structured outputs require) with the top-level `$schema` key removed (OpenAI, Anthropic
//   and Gemini all take a bare object schema as `parameters` / `input_schema`).
// - `call(args, context)` validates the input with zod, runs `execute(parsedArgs, context)` and
//   validates the output. `context.abortSignal` goes down to the runtime through `execute`; a
//   signal that is already aborted rejects at once with its reason, before anything runs.
// - `parseInput(args)` is input validation alone (`parseApprovalArgs` is core's name for it).
function createLocalTool({ name, description, inputSchema, outputSchema, execute }) {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(inputSchema);
  const parseInput = (args) => inputSchema.parse(args);
  return {
    name,
    description,
    inputSchema,
    outputSchema,
    // A fresh copy each time, so a caller that decorates the schema cannot change the tool.
    definition(_prompt) {
      return { name, description, parameters: structuredClone(parameters) };
    },
    async call(args, context = {}) {
      context.abortSignal?.throwIfAborted();
      const parsedArgs = inputSchema.parse(args);
      return outputSchema.parse(await execute(parsedArgs, context));
    },
    parseInput,
    parseApprovalArgs: parseInput
  };
}

// ---- from here on: the seed's src/tools.ts, with upstream's later changes ----

const allToolNames = [
  "exec_command",
  "read_file",
  "write_file",
  "list_files",
  "list_ports",
  "start_process",
  "list_processes",
  "read_process_logs",
  "stop_process",
  "wait_for_port",
  // Ours (lib/terminal-tools.js), not upstream's.
  ...terminalToolNames
];
// What the model reads in the JSON Schema (upstream's texts, word for word).
const commandText =
  "Command to run. Natural command lines use /bin/bash -c when available, otherwise sh -c. Use args for exact argv execution.";
const argsText = "Optional exact arguments. Omit when command contains the complete command line.";
const directoryText = "Workspace-relative directory or an absolute directory inside the sandbox workdir.";
const filePathText = "Workspace-relative path or an absolute path inside the sandbox workdir.";
const naturalLinesText =
  "Natural command lines use /bin/bash -c when available, otherwise sh -c; supply args for exact argv execution.";

const commandInput = z.string().min(1).describe(commandText);
const argsInput = z.array(z.string()).describe(argsText).optional();
const execCommandInput = z.object({
  command: commandInput,
  args: argsInput,
  cwd: z.string().describe(directoryText).optional(),
  env: z.record(z.string(), z.string()).optional(),
  timeoutMs: z.number().int().positive().max(3e5).optional(),
  input: z.string().optional()
});
const execResultOutput = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("exited"),
    exitCode: z.number().int(),
    stdout: z.string(),
    stderr: z.string(),
    durationMs: z.number().nonnegative(),
    stdoutTruncated: z.boolean(),
    stderrTruncated: z.boolean()
  }),
  z.object({
    status: z.literal("timed_out"),
    stdout: z.string(),
    stderr: z.string(),
    durationMs: z.number().nonnegative(),
    stdoutTruncated: z.boolean(),
    stderrTruncated: z.boolean()
  })
]);
const readFileInput = z.object({
  path: z.string().min(1).describe(filePathText),
  startLine: z.number().int().positive().optional(),
  lineCount: z.number().int().positive().max(1e4).optional()
});
const readFileOutput = z.object({
  content: z.string(),
  startLine: z.number().int().positive(),
  endLine: z.number().int().positive().nullable(),
  nextStartLine: z.number().int().positive().nullable(),
  truncated: z.boolean(),
  truncatedBy: z.enum(["lines", "bytes"]).nullable()
});
const writeFileInput = z.object({
  path: z.string().min(1).describe(filePathText),
  content: z.string()
});
const writeFileOutput = z.object({
  path: z.string(),
  bytesWritten: z.number().int().nonnegative()
});
const listFilesInput = z.object({ path: z.string().describe(directoryText).optional() });
const fileEntryOutput = z.object({
  path: z.string(),
  type: z.enum(["file", "directory", "symlink", "other"]),
  size: z.number().int().nonnegative().optional()
});
const listFilesOutput = z.object({
  path: z.string(),
  entries: z.array(fileEntryOutput)
});
const emptyInput = z.object({});
const publishedPortOutput = z.object({
  containerPort: z.number().int(),
  host: z.literal("127.0.0.1"),
  hostPort: z.number().int(),
  protocol: z.literal("tcp")
});
const listPortsOutput = z.object({ ports: z.array(publishedPortOutput) });
const startProcessInput = z.object({
  command: commandInput,
  args: argsInput,
  cwd: z.string().describe(directoryText).optional(),
  env: z.record(z.string(), z.string()).optional()
});
const processInfoOutput = z.object({
  id: z.string(),
  command: z.string(),
  args: z.array(z.string()),
  cwd: z.string().optional(),
  status: z.enum(["running", "exited", "stopped"]),
  exitCode: z.number().int().optional(),
  startedAt: z.string(),
  endedAt: z.string().optional()
});
const listProcessesOutput = z.object({ processes: z.array(processInfoOutput) });
const processIdInput = z.object({ processId: z.string().min(1) });
const readProcessLogsInput = processIdInput.extend({
  tailBytes: z.number().int().nonnegative().max(1024 * 1024).optional()
});
const processLogsOutput = z.object({
  processId: z.string(),
  stdout: z.string(),
  stderr: z.string(),
  stdoutTruncated: z.boolean(),
  stderrTruncated: z.boolean()
});
const waitForPortInput = z.object({
  containerPort: z.number().int().min(1).max(65535),
  timeoutMs: z.number().int().positive().max(3e5).optional()
});
const waitForPortOutput = z.object({ port: publishedPortOutput });
const defaultReadFileLineCount = 500;
const defaultReadFileMaxLineCount = 2e3;
const defaultReadFileMaxBytes = 64 * 1024;
const maxToolReadFileLines = 1e4;
const maxToolBytes = 1024 * 1024;
const maxToolTimeoutMs = 3e5;

export function createDockerSandboxTools(options) {
  validateFactoryOptions(options);
  options = snapshotFactoryOptions(options);
  const selected = new Set(options.tools);
  const tools = [];
  const terminalTool = terminalToolNames.some((name) => selected.has(name))
    ? createTerminalTools(options, { createTool, resolveInvocation, toolPath, toolPolicyError, assertCommandAllowed })
    : undefined;
  // Tools come back in the order they were asked for.
  for (const name of options.tools) {
    if (terminalToolNames.includes(name)) tools.push(terminalTool(name));
    else if (name === "exec_command") tools.push(createExecCommandTool(options));
    else if (name === "read_file") tools.push(createReadFileTool(options));
    else if (name === "write_file") tools.push(createWriteFileTool(options));
    else if (name === "list_files") tools.push(createListFilesTool(options.sandbox));
    else if (name === "list_ports") tools.push(createListPortsTool(options.sandbox));
    else if (name === "start_process") tools.push(createStartProcessTool(options));
    else if (name === "list_processes") tools.push(createListProcessesTool(options.sandbox));
    else if (name === "read_process_logs") tools.push(createReadProcessLogsTool(options));
    else if (name === "stop_process") tools.push(createStopProcessTool(options));
    else if (name === "wait_for_port") tools.push(createWaitForPortTool(options));
  }
  if (tools.length !== selected.size) {
    throw toolPolicyError("Sandbox tool selection contains an unsupported tool name.");
  }
  return Object.freeze(tools);
}

function createExecCommandTool(options) {
  return createTool({
    name: "exec_command",
    description: `Run a command inside the sandbox. ${naturalLinesText}`,
    inputSchema: execCommandInput,
    outputSchema: execResultOutput,
    execute: async ({ command, args, cwd, env, timeoutMs, input }, context) => {
      // Upstream's order: the timeout policy and the cwd first, then the command (with the
      // shell detection for a natural command line). rc.10 checked the command first.
      const effectiveTimeoutMs = timeoutMs ?? options.exec?.defaultTimeoutMs;
      assertTimeoutAllowed(effectiveTimeoutMs, options.exec?.maxTimeoutMs);
      const toolCwd = cwd === undefined ? undefined : toolPath(options.sandbox, cwd, true);
      const invocation = await resolveInvocation(options, command, args, context.abortSignal);
      let execOptions = { command: invocation.command };
      if (invocation.args !== undefined) execOptions = { ...execOptions, args: invocation.args };
      if (toolCwd !== undefined) execOptions = { ...execOptions, cwd: toolCwd };
      if (env !== undefined) execOptions = { ...execOptions, env };
      if (effectiveTimeoutMs !== undefined) {
        execOptions = { ...execOptions, timeoutMs: effectiveTimeoutMs };
      }
      if (input !== undefined) execOptions = { ...execOptions, input };
      if (context.abortSignal !== undefined) {
        execOptions = { ...execOptions, abortSignal: context.abortSignal };
      }
      return serializeExecResult(await options.sandbox.exec(execOptions));
    }
  });
}

function createReadFileTool(options) {
  // Resolved when the tool is made: a bad line-count policy fails the factory call.
  const limits = resolveReadFileLimits(options);
  return createTool({
    name: "read_file",
    description: "Read a bounded page of a UTF-8 text file from the sandbox workspace.",
    inputSchema: readFileInput,
    outputSchema: readFileOutput,
    execute: async ({ path, startLine, lineCount }, context) => {
      const effectiveLineCount = lineCount ?? limits.defaultLineCount;
      if (effectiveLineCount > limits.maxLineCount) {
        throw toolPolicyError(
          `File read line count exceeds policy (${effectiveLineCount} > ${limits.maxLineCount}).`
        );
      }
      let readOptions = {
        path: toolPath(options.sandbox, path),
        startLine: startLine ?? 1,
        lineCount: effectiveLineCount,
        maxBytes: limits.maxBytes
      };
      if (context.abortSignal !== undefined) {
        readOptions = { ...readOptions, abortSignal: context.abortSignal };
      }
      return options.sandbox.readTextFilePage(readOptions);
    }
  });
}

function createWriteFileTool(options) {
  return createTool({
    name: "write_file",
    description: "Write a complete UTF-8 text file inside the sandbox workspace.",
    inputSchema: writeFileInput,
    outputSchema: writeFileOutput,
    execute: async ({ path, content }, context) => {
      const bytesWritten = new TextEncoder().encode(content).byteLength;
      const maxBytes = options.writeFile?.maxBytes;
      if (maxBytes !== undefined && bytesWritten > maxBytes) {
        throw toolPolicyError(`File content exceeds policy (${bytesWritten} > ${maxBytes}).`);
      }
      // The result names the file as the runtime wrote it: "app/output.txt" for
      // "/workspace/app/output.txt", "a.txt" for "./a.txt".
      const written = toolPath(options.sandbox, path);
      let writeOptions = { path: written, text: content };
      if (context.abortSignal !== undefined) {
        writeOptions = { ...writeOptions, abortSignal: context.abortSignal };
      }
      await options.sandbox.writeTextFile(writeOptions);
      return { path: written, bytesWritten };
    }
  });
}

function createListFilesTool(sandbox) {
  return createTool({
    name: "list_files",
    description: "List direct children of a directory in the sandbox workspace.",
    inputSchema: listFilesInput,
    outputSchema: listFilesOutput,
    execute: async ({ path }, context) => {
      const listed = path === undefined ? "." : toolPath(sandbox, path, true);
      let listOptions = {};
      if (path !== undefined) listOptions = { ...listOptions, path: listed };
      if (context.abortSignal !== undefined) {
        listOptions = { ...listOptions, abortSignal: context.abortSignal };
      }
      return { path: listed, entries: [...(await sandbox.listFiles(listOptions))] };
    }
  });
}

function createListPortsTool(sandbox) {
  return createTool({
    name: "list_ports",
    description: "List explicitly published localhost TCP ports for the sandbox.",
    inputSchema: emptyInput,
    outputSchema: listPortsOutput,
    execute: async () => ({ ports: [...sandbox.publishedPorts] })
  });
}

function createStartProcessTool(options) {
  return createTool({
    name: "start_process",
    description: `Start a managed long-running process inside the sandbox. ${naturalLinesText}`,
    inputSchema: startProcessInput,
    outputSchema: processInfoOutput,
    execute: async ({ command, args, cwd, env }, context) => {
      const toolCwd = cwd === undefined ? undefined : toolPath(options.sandbox, cwd, true);
      const invocation = await resolveInvocation(options, command, args, context.abortSignal);
      let startOptions = { command: invocation.command };
      if (invocation.args !== undefined) startOptions = { ...startOptions, args: invocation.args };
      if (toolCwd !== undefined) startOptions = { ...startOptions, cwd: toolCwd };
      if (env !== undefined) startOptions = { ...startOptions, env };
      if (context.abortSignal !== undefined) {
        startOptions = { ...startOptions, abortSignal: context.abortSignal };
      }
      return serializeProcessInfo(await options.sandbox.startProcess(startOptions));
    }
  });
}

function createListProcessesTool(sandbox) {
  return createTool({
    name: "list_processes",
    description: "List processes managed by this live sandbox handle.",
    inputSchema: emptyInput,
    outputSchema: listProcessesOutput,
    execute: async (_, context) => ({
      processes: (
        await sandbox.listProcesses(
          context.abortSignal === undefined ? {} : { abortSignal: context.abortSignal }
        )
      ).map(serializeProcessInfo)
    })
  });
}

function createReadProcessLogsTool(options) {
  const maxLogBytes = options.process?.maxLogBytes ?? 64 * 1024;
  return createTool({
    name: "read_process_logs",
    description: "Read bounded UTF-8 output from a managed sandbox process.",
    inputSchema: readProcessLogsInput,
    outputSchema: processLogsOutput,
    execute: async ({ processId, tailBytes }, context) => {
      const effectiveTailBytes = tailBytes ?? maxLogBytes;
      if (effectiveTailBytes > maxLogBytes) {
        throw toolPolicyError(
          `Process log request exceeds policy (${effectiveTailBytes} > ${maxLogBytes}).`
        );
      }
      let readOptions = { processId, tailBytes: effectiveTailBytes };
      if (context.abortSignal !== undefined) {
        readOptions = { ...readOptions, abortSignal: context.abortSignal };
      }
      const logs = await options.sandbox.readProcessLogs(readOptions);
      return {
        processId,
        stdout: decodeUtf8(logs.stdout),
        stderr: decodeUtf8(logs.stderr),
        stdoutTruncated: logs.stdoutTruncated,
        stderrTruncated: logs.stderrTruncated
      };
    }
  });
}

function createStopProcessTool(options) {
  return createTool({
    name: "stop_process",
    description: "Stop a process managed by this live sandbox handle.",
    inputSchema: processIdInput,
    outputSchema: processInfoOutput,
    execute: async ({ processId }, context) => {
      let stopOptions = {
        processId,
        gracePeriodMs: options.process?.stopGracePeriodMs ?? 5e3
      };
      if (context.abortSignal !== undefined) {
        stopOptions = { ...stopOptions, abortSignal: context.abortSignal };
      }
      return serializeProcessInfo(await options.sandbox.stopProcess(stopOptions));
    }
  });
}

function createWaitForPortTool(options) {
  return createTool({
    name: "wait_for_port",
    description: "Wait until an explicitly published sandbox TCP port is listening.",
    inputSchema: waitForPortInput,
    outputSchema: waitForPortOutput,
    execute: async ({ containerPort, timeoutMs }, context) => {
      const effectiveTimeoutMs = timeoutMs ?? options.process?.defaultWaitTimeoutMs ?? 3e4;
      const maxWaitTimeoutMs = options.process?.maxWaitTimeoutMs ?? maxToolTimeoutMs;
      if (effectiveTimeoutMs > maxWaitTimeoutMs) {
        throw toolPolicyError(
          `Port wait timeout exceeds policy (${effectiveTimeoutMs} > ${maxWaitTimeoutMs}).`
        );
      }
      let waitOptions = { containerPort, timeoutMs: effectiveTimeoutMs };
      if (context.abortSignal !== undefined) {
        waitOptions = { ...waitOptions, abortSignal: context.abortSignal };
      }
      return { port: await options.sandbox.waitForPort(waitOptions) };
    }
  });
}

// Byte output becomes strict UTF-8 text: invalid bytes throw TypeError rather than turning into
// U+FFFD behind the model's back.
function serializeExecResult(result) {
  const output = {
    status: result.status,
    stdout: decodeUtf8(result.stdout),
    stderr: decodeUtf8(result.stderr),
    durationMs: result.durationMs,
    stdoutTruncated: result.stdoutTruncated,
    stderrTruncated: result.stderrTruncated
  };
  return result.status === "exited"
    ? { ...output, status: "exited", exitCode: result.exitCode }
    : { ...output, status: "timed_out" };
}

function serializeProcessInfo(process) {
  let serialized = {
    id: process.id,
    command: process.command,
    args: [...process.args],
    status: process.status,
    startedAt: process.startedAt
  };
  if (process.cwd !== undefined) serialized = { ...serialized, cwd: process.cwd };
  if (process.exitCode !== undefined) serialized = { ...serialized, exitCode: process.exitCode };
  if (process.endedAt !== undefined) serialized = { ...serialized, endedAt: process.endedAt };
  return serialized;
}

// A path or cwd as the model gave it, relative to the workspace or absolute inside the sandbox's
// workdir, as the workspace-relative path the runtime takes; DockerSandboxError invalid_path
// with upstream's messages otherwise. The rule is the runtime's own (src/codec/paths.c) with
// the workdir mode; the runtime methods themselves still take relative paths only.
function toolPath(sandbox, input, allowRoot = false) {
  return native.normalizeSandboxPath(input, allowRoot, sandbox.workdir);
}

// Shape errors are TypeError; policy values out of range are DockerSandboxError "tool_policy".
function validateFactoryOptions(options) {
  if (!isRecord(options)) {
    throw new TypeError("options must be an object.");
  }
  if (!isDockerSandboxRuntime(options.sandbox)) {
    throw new TypeError("sandbox must be a DockerSandboxRuntime.");
  }
  if (!Array.isArray(options.tools) || options.tools.length === 0) {
    throw new TypeError("tools must be a non-empty array.");
  }
  const known = new Set(allToolNames);
  const seen = new Set();
  for (const name of options.tools) {
    if (typeof name !== "string" || !known.has(name)) {
      throw new TypeError("tools contains an unsupported sandbox tool name.");
    }
    if (seen.has(name)) throw new TypeError(`tools contains a duplicate: ${name}`);
    seen.add(name);
  }
  for (const [name, policy] of [
    ["exec", options.exec],
    ["readFile", options.readFile],
    ["writeFile", options.writeFile],
    ["process", options.process]
  ]) {
    if (policy !== undefined && !isRecord(policy)) {
      throw new TypeError(`${name} must be an object.`);
    }
  }
  validateCommandPolicy(options.exec?.commands);
  resolveTerminalPolicy(options.terminal, toolPolicyError);
  if (
    terminalToolNames.some((name) => seen.has(name)) &&
    typeof options.sandbox.startTerminal !== "function"
  ) {
    throw new TypeError("sandbox must have startTerminal for the terminal tools.");
  }
  assertOptionalPositiveInteger(options.exec?.defaultTimeoutMs, "exec.defaultTimeoutMs");
  assertOptionalPositiveInteger(options.exec?.maxTimeoutMs, "exec.maxTimeoutMs");
  if (
    (options.exec?.defaultTimeoutMs ?? 0) > maxToolTimeoutMs ||
    (options.exec?.maxTimeoutMs ?? 0) > maxToolTimeoutMs
  ) {
    throw toolPolicyError(`Sandbox tool command timeouts cannot exceed ${maxToolTimeoutMs}.`);
  }
  if (
    options.exec?.defaultTimeoutMs !== undefined &&
    options.exec.maxTimeoutMs !== undefined &&
    options.exec.defaultTimeoutMs > options.exec.maxTimeoutMs
  ) {
    throw toolPolicyError("exec.defaultTimeoutMs cannot exceed exec.maxTimeoutMs.");
  }
  assertOptionalBoundedPositiveInteger(options.readFile?.maxBytes, "readFile.maxBytes");
  assertOptionalPositiveInteger(options.readFile?.defaultLineCount, "readFile.defaultLineCount");
  assertOptionalPositiveInteger(options.readFile?.maxLineCount, "readFile.maxLineCount");
  assertOptionalBoundedNonNegativeInteger(options.writeFile?.maxBytes, "writeFile.maxBytes");
  assertOptionalBoundedNonNegativeInteger(options.process?.maxLogBytes, "process.maxLogBytes");
  assertOptionalPositiveInteger(
    options.process?.defaultWaitTimeoutMs,
    "process.defaultWaitTimeoutMs"
  );
  assertOptionalPositiveInteger(options.process?.maxWaitTimeoutMs, "process.maxWaitTimeoutMs");
  assertOptionalNonNegativeInteger(options.process?.stopGracePeriodMs, "process.stopGracePeriodMs");
  const defaultWaitTimeoutMs = options.process?.defaultWaitTimeoutMs;
  const maxWaitTimeoutMs = options.process?.maxWaitTimeoutMs ?? maxToolTimeoutMs;
  if (maxWaitTimeoutMs > maxToolTimeoutMs) {
    throw toolPolicyError(`process.maxWaitTimeoutMs cannot exceed ${maxToolTimeoutMs}.`);
  }
  if (defaultWaitTimeoutMs !== undefined && defaultWaitTimeoutMs > maxWaitTimeoutMs) {
    throw toolPolicyError("process.defaultWaitTimeoutMs cannot exceed process.maxWaitTimeoutMs.");
  }
}

// A frozen copy taken once: later changes to the caller's objects do not move the policy.
function snapshotFactoryOptions(options) {
  const toolNames = Object.freeze([...options.tools]);
  const commands = options.exec?.commands === undefined ? undefined : snapshotCommandPolicy(options.exec.commands);
  let snapshot = { sandbox: options.sandbox, tools: toolNames };
  if (options.exec !== undefined) {
    let exec = { ...options.exec };
    if (commands !== undefined) exec = { ...exec, commands };
    snapshot = { ...snapshot, exec: Object.freeze(exec) };
  }
  if (options.readFile !== undefined) {
    snapshot = { ...snapshot, readFile: Object.freeze({ ...options.readFile }) };
  }
  if (options.writeFile !== undefined) {
    snapshot = { ...snapshot, writeFile: Object.freeze({ ...options.writeFile }) };
  }
  if (options.process !== undefined) {
    snapshot = { ...snapshot, process: Object.freeze({ ...options.process }) };
  }
  // Always present: the terminal tools read their policy with its defaults.
  snapshot = { ...snapshot, terminal: resolveTerminalPolicy(options.terminal, toolPolicyError) };
  return Object.freeze(snapshot);
}

// allowShellInterpreters is kept only where it means something: an allow-mode policy that set it.
function snapshotCommandPolicy(policy) {
  let snapshot = { mode: policy.mode, values: Object.freeze([...policy.values]) };
  if (policy.mode === "allow" && policy.allowShellInterpreters !== undefined) {
    snapshot = { ...snapshot, allowShellInterpreters: policy.allowShellInterpreters };
  }
  return Object.freeze(snapshot);
}

function validateCommandPolicy(policy) {
  if (policy === undefined) return;
  if (!isRecord(policy)) throw toolPolicyError("exec.commands must be an object.");
  if (policy.mode !== "allow" && policy.mode !== "block") {
    throw toolPolicyError("exec.commands must use mode allow or block.");
  }
  // Checked before the values, as upstream does; a block-mode policy ignores the key.
  if (
    policy.mode === "allow" &&
    policy.allowShellInterpreters !== undefined &&
    typeof policy.allowShellInterpreters !== "boolean"
  ) {
    throw toolPolicyError("exec.commands.allowShellInterpreters must be a boolean.");
  }
  if (!Array.isArray(policy.values)) {
    throw toolPolicyError("exec.commands.values must be an array.");
  }
  const seen = new Set();
  for (const value of policy.values) {
    if (typeof value !== "string" || value.length === 0) {
      throw toolPolicyError("exec.commands.values must contain non-empty strings.");
    }
    if (seen.has(value)) {
      throw toolPolicyError(`exec.commands.values contains a duplicate: ${value}`);
    }
    seen.add(value);
  }
}

// Exact match on the executable name as the model wrote it (no path or basename folding). Then,
// in allow mode without allowShellInterpreters: true, a listed shell is still refused (by its
// basename, so "/bin/sh" too): with "-c" it would run anything the list leaves out.
function assertCommandAllowed(command, policy) {
  if (policy === undefined) return;
  const included = policy.values.includes(command);
  if ((policy.mode === "allow" && !included) || (policy.mode === "block" && included)) {
    throw toolPolicyError(`Command is rejected by sandbox tool policy: ${command}`);
  }
  if (policy.mode === "allow" && policy.allowShellInterpreters !== true && isShellInterpreter(command)) {
    throw toolPolicyError(`Command is rejected by sandbox tool policy: ${command} (shell interpreter not allowed)`);
  }
}

// What exec_command and start_process run: the command and args as given, or, for a natural
// command line (no args, shell syntax in the command), the sandbox's shell with "-c" and the
// line. A block-mode policy cannot judge a command line, and an allow-mode one must have opted
// into shells; the chosen shell then passes the policy under its exact name ("/bin/bash" or
// "sh"), and a refusal is final: no other shell is tried.
async function resolveInvocation(options, command, args, abortSignal) {
  abortSignal?.throwIfAborted();
  const policy = options.exec?.commands;
  if (!isNaturalCommandLine(command, args)) {
    assertCommandAllowed(command, policy);
    return args === undefined ? { command } : { command, args };
  }
  if (policy?.mode === "block") {
    throw toolPolicyError(
      "Natural command lines cannot be used with block-mode command policies. Use command and args instead."
    );
  }
  if (policy?.mode === "allow" && policy.allowShellInterpreters !== true) {
    throw toolPolicyError("Natural command lines require allowShellInterpreters: true.");
  }
  const shell = await sandboxShell(options.sandbox, abortSignal);
  abortSignal?.throwIfAborted();
  assertCommandAllowed(shell, policy);
  return { command: shell, args: ["-c", command] };
}

function assertTimeoutAllowed(timeoutMs, maxTimeoutMs) {
  if (timeoutMs !== undefined && maxTimeoutMs !== undefined && timeoutMs > maxTimeoutMs) {
    throw toolPolicyError(`Command timeout exceeds policy (${timeoutMs} > ${maxTimeoutMs}).`);
  }
}

function resolveReadFileLimits(options) {
  const defaultLineCount = options.readFile?.defaultLineCount ?? defaultReadFileLineCount;
  const maxLineCount = options.readFile?.maxLineCount ?? defaultReadFileMaxLineCount;
  const maxBytes = options.readFile?.maxBytes ?? defaultReadFileMaxBytes;
  if (defaultLineCount > maxLineCount) {
    throw toolPolicyError("readFile.defaultLineCount cannot exceed readFile.maxLineCount.");
  }
  if (maxLineCount > maxToolReadFileLines) {
    throw toolPolicyError(`readFile.maxLineCount cannot exceed ${maxToolReadFileLines}.`);
  }
  return { defaultLineCount, maxLineCount, maxBytes };
}

function assertOptionalPositiveInteger(value, name) {
  if (value !== undefined && (!Number.isSafeInteger(value) || value <= 0)) {
    throw toolPolicyError(`${name} must be a positive safe integer.`);
  }
}

function assertOptionalNonNegativeInteger(value, name) {
  if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
    throw toolPolicyError(`${name} must be a non-negative safe integer.`);
  }
}

function assertOptionalBoundedNonNegativeInteger(value, name) {
  assertOptionalNonNegativeInteger(value, name);
  if (value !== undefined && value > maxToolBytes) {
    throw toolPolicyError(`${name} cannot exceed ${maxToolBytes}.`);
  }
}

function assertOptionalBoundedPositiveInteger(value, name) {
  assertOptionalPositiveInteger(value, name);
  if (value !== undefined && value > maxToolBytes) {
    throw toolPolicyError(`${name} cannot exceed ${maxToolBytes}.`);
  }
}

// Duck-typed on purpose (as the seed): any object with the runtime's shape is accepted, so a
// runtime from another build of the package, or a test double, works.
function isDockerSandboxRuntime(value) {
  if (!isRecord(value)) return false;
  return (
    typeof value.id === "string" &&
    value.provider === "docker" &&
    typeof value.workdir === "string" &&
    Array.isArray(value.publishedPorts) &&
    [
      "exec",
      "execStream",
      "readFile",
      "readTextFile",
      "readTextFilePage",
      "writeFile",
      "writeTextFile",
      "listFiles",
      "startProcess",
      "listProcesses",
      "readProcessLogs",
      "stopProcess",
      "waitForPort"
    ].every((name) => typeof value[name] === "function")
  );
}

function isRecord(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function toolPolicyError(message) {
  return new DockerSandboxError(message, "tool_policy");
}
