// Type-level test: agent code written against the public types, checked by `tsc --noEmit` (see
// test/unit/types.test.js). Nothing here runs. `// @ts-expect-error` lines prove misuse fails.
import {
  DockerSandboxCleanupError,
  DockerSandboxClient,
  DockerSandboxError,
  DockerSandboxRunError,
  createDockerSandboxTools,
  type DockerSandboxTerminalToolName,
  type DockerSandboxTerminalToolPolicy,
  withSandbox,
  type CreateDockerSandboxOptions,
  type CreateDockerSandboxToolsOptions,
  type DockerSandboxCommandPolicy,
  type DockerSandbox,
  type DockerSandboxErrorCode,
  type DockerSandboxLifetime,
  type DockerSandboxListedState,
  type DockerSandboxPruneResult,
  type DockerSandboxStats,
  type DockerSandboxSummary,
  type DockerSandboxTransport,
  type ForkDockerSandboxOptions,
  type ListDockerSandboxesOptions,
  type PruneDockerSandboxesOptions,
  type DockerSandboxExecResult,
  type DockerSandboxExecStreamEvent,
  type DockerSandboxFileEntry,
  type DockerSandboxInspector,
  type DockerSandboxProcessInfo,
  type DockerSandboxPublishedPort,
  type DockerSandboxRuntime,
  type DockerSandboxState,
  type DockerSandboxTextFilePage,
  type DockerSandboxTool,
  type DockerSandboxToolDefinition,
  type DockerSandboxToolName,
  type DockerSandboxExportConsumer,
  type DockerSandboxExportEntry,
  type DockerSandboxExportTreeOptions,
  type DockerSandboxImportEntry,
  type DockerSandboxImportTreeOptions,
  type DockerSandboxTreeProgress,
  type DockerSandboxTreeQuotas,
  type DockerSandboxTreeSelection,
  type DockerSandboxTreeSummary,
  type DockerSandboxTreeTransfer,
  type DockerSandboxFileWatchEvent,
  type DockerSandboxFileWatching,
  type DockerSandboxWatchFilesOptions,
  type DockerSandboxStartTerminalOptions,
  type DockerSandboxTerminal,
  type DockerSandboxTerminalChunk,
  type DockerSandboxTerminalExit,
  type DockerSandboxTerminals
} from "@anvia/sandbox";

const decoder = new TextDecoder();

// A stand-in for an LLM: it picks tool calls; the loop below executes them.
type ModelToolCall = { readonly name: string; readonly arguments: unknown };
interface FakeModel {
  next(tools: readonly DockerSandboxToolDefinition[], history: readonly unknown[]): ModelToolCall[];
}

async function runAgent(
  model: FakeModel,
  tools: readonly DockerSandboxTool[],
  abortSignal: AbortSignal
): Promise<unknown[]> {
  const definitions = tools.map((tool) => tool.definition(""));
  const schemaType: unknown = definitions[0]?.parameters["type"];
  void schemaType;
  const byName = new Map<string, DockerSandboxTool>(tools.map((tool) => [tool.name, tool]));
  const history: unknown[] = [];
  for (let turn = 0; turn < 8; turn += 1) {
    const calls = model.next(definitions, history);
    if (calls.length === 0) break;
    for (const call of calls) {
      const tool = byName.get(call.name);
      if (tool === undefined) {
        history.push({ error: `unknown tool ${call.name}` });
        continue;
      }
      try {
        history.push(await tool.call(call.arguments, { abortSignal }));
      } catch (error) {
        if (error instanceof DockerSandboxError && error.code === "tool_policy") {
          history.push({ rejected: error.message });
        } else if (error instanceof TypeError) {
          history.push({ invalid: error.message });
        } else {
          throw error;
        }
      }
    }
  }
  return history;
}

async function main(): Promise<void> {
  const client = new DockerSandboxClient({ host: "unix:///var/run/docker.sock" });
  const defaultClient = new DockerSandboxClient();
  void defaultClient;
  for (const transport of ["auto", "agent", "engine"] as const satisfies readonly DockerSandboxTransport[]) {
    void new DockerSandboxClient({ transport });
  }
  // @ts-expect-error an unknown transport
  void new DockerSandboxClient({ transport: "ssh" });
  await client.pullImage({ image: "localhost:5000/anvia-test:latest" });

  const controller = new AbortController();
  const options: CreateDockerSandboxOptions = {
    image: "anvia-test:bookworm",
    id: "agent-run-1",
    workdir: "/workspace",
    workspace: { type: "ephemeral" },
    network: { mode: "bridge", ports: [3000, 8080] },
    env: { NODE_ENV: "production" },
    user: "1000:1000",
    labels: { "com.example.owner": "tests" },
    resources: { memoryMb: 512, cpus: 1.5, pidsLimit: 256, sharedMemoryMb: 64 },
    runtime: { commandTimeoutMs: 60_000, maxOutputBytes: 1 << 20, maxFileBytes: 8 << 20, maxProcesses: 2 },
    security: {
      readonlyRootfs: false,
      noNewPrivileges: true,
      seccompProfile: { type: "path", path: "/etc/docker/seccomp.json" },
      dropCapabilities: ["ALL"],
      addCapabilities: ["NET_BIND_SERVICE"]
    },
    directories: ["src", "logs"],
    files: { "README.md": "# hello\n", "data.bin": new Uint8Array([0, 1, 2]) },
    abortSignal: controller.signal
  };

  await using sandbox = await client.createSandbox(options);
  const state: DockerSandboxState = sandbox.state;
  const id: string = sandbox.id;
  void state;
  void id;
  const runtime: DockerSandboxRuntime = sandbox.runtime;

  // Buffered exec: narrow on status before touching exitCode.
  const result: DockerSandboxExecResult = await runtime.exec({
    command: "node",
    args: ["--version"],
    cwd: "src",
    env: { FOO: "bar" },
    timeoutMs: 5_000,
    input: "stdin text",
    abortSignal: controller.signal
  });
  // @ts-expect-error exitCode only exists once status is narrowed to "exited"
  void result.exitCode;
  if (result.status === "exited") {
    const code: number = result.exitCode;
    void code;
  } else {
    const timedOut: "timed_out" = result.status;
    void timedOut;
  }
  const stdoutText: string = decoder.decode(result.stdout);
  const truncated: boolean = result.stdoutTruncated || result.stderrTruncated;
  const duration: number = result.durationMs;
  void stdoutText;
  void truncated;
  void duration;

  // Streaming exec.
  for await (const event of runtime.execStream({ command: "npm", args: ["test"], input: new Uint8Array() })) {
    const typed: DockerSandboxExecStreamEvent = event;
    void typed;
    if (event.type === "result") {
      // @ts-expect-error a result event carries no data
      void event.data;
      if (event.result.status === "exited" && event.result.exitCode !== 0) {
        throw new Error("tests failed");
      }
    } else {
      const chunk: Uint8Array = event.data;
      const stream: "stdout" | "stderr" = event.type;
      void chunk;
      void stream;
    }
  }

  // Files.
  await runtime.writeTextFile({ path: "src/index.js", text: "console.log(1)\n" });
  await runtime.writeFile({ path: "src/blob.bin", data: new Uint8Array(16), abortSignal: controller.signal });
  const bytes: Uint8Array = await runtime.readFile({ path: "src/blob.bin" });
  const text: string = await runtime.readTextFile({ path: "src/index.js" });
  const page: DockerSandboxTextFilePage = await runtime.readTextFilePage({
    path: "src/index.js",
    startLine: 1,
    lineCount: 100,
    maxBytes: 4096
  });
  if (page.nextStartLine !== null) {
    await runtime.readTextFilePage({ path: "src/index.js", startLine: page.nextStartLine });
  }
  const by: "lines" | "bytes" | null = page.truncatedBy;
  void bytes;
  void text;
  void by;
  const rootEntries: readonly DockerSandboxFileEntry[] = await runtime.listFiles();
  const srcEntries = await runtime.listFiles({ path: "src" });
  for (const entry of [...rootEntries, ...srcEntries]) {
    if (entry.type === "file" && entry.size !== undefined) {
      const size: number = entry.size;
      void size;
    }
  }
  // @ts-expect-error writeTextFile takes `text`, not `content`
  await runtime.writeTextFile({ path: "a.txt", content: "x" });
  // @ts-expect-error writeFile takes bytes, not a string
  await runtime.writeFile({ path: "a.txt", data: "x" });
  // @ts-expect-error options objects are read-only
  options.image = "other";

  // Processes and ports.
  const server: DockerSandboxProcessInfo = await runtime.startProcess({
    command: "node",
    args: ["server.js"],
    cwd: "src",
    env: { PORT: "3000" }
  });
  const port: DockerSandboxPublishedPort = await runtime.waitForPort({
    containerPort: 3000,
    timeoutMs: 10_000,
    intervalMs: 50
  });
  const url = `http://${port.host}:${port.hostPort}/`;
  void url;
  const listed: readonly DockerSandboxProcessInfo[] = await runtime.listProcesses();
  void listed;
  const logs = await runtime.readProcessLogs({ processId: server.id, tailBytes: 4096 });
  const logText = decoder.decode(logs.stdout) + decoder.decode(logs.stderr);
  void logText;
  const stopped = await runtime.stopProcess({ processId: server.id, gracePeriodMs: 1_000 });
  if (stopped.status !== "running" && stopped.exitCode !== undefined) {
    const code: number = stopped.exitCode;
    void code;
  }
  const ports: readonly DockerSandboxPublishedPort[] = runtime.publishedPorts;
  void ports;
  // @ts-expect-error publishedPorts is read-only
  runtime.publishedPorts.push(port);

  // Inspector: members are optional, present when their capability was enabled.
  const inspector: DockerSandboxInspector = sandbox.inspector({ files: true, processes: true });
  if (inspector.listFiles !== undefined) await inspector.listFiles({ path: "." });
  if (inspector.readProcessLogs !== undefined) await inspector.readProcessLogs({ processId: server.id });
  // @ts-expect-error readFile may be absent
  await inspector.readFile({ path: "README.md" });
  // Always there (upstream 1.1.2): the OCI runtime, "default" unless one was asked for.
  const containerRuntime: string = inspector.containerRuntime;
  void containerRuntime;

  // Tools, handed to the agent loop.
  const toolOptions: CreateDockerSandboxToolsOptions = {
    sandbox: runtime,
    tools: ["exec_command", "read_file", "write_file", "list_files", "start_process", "wait_for_port"],
    exec: { commands: { mode: "allow", values: ["node", "npm"] }, defaultTimeoutMs: 10_000, maxTimeoutMs: 60_000 },
    readFile: { maxBytes: 32_768, defaultLineCount: 200, maxLineCount: 1_000 },
    writeFile: { maxBytes: 65_536 },
    process: { maxLogBytes: 16_384, defaultWaitTimeoutMs: 5_000, maxWaitTimeoutMs: 60_000, stopGracePeriodMs: 2_000 }
  };
  const tools = createDockerSandboxTools(toolOptions);
  const names: DockerSandboxToolName[] = tools.map((tool) => tool.name);
  void names;
  const blockPolicy = createDockerSandboxTools({
    sandbox: runtime,
    tools: ["exec_command"],
    exec: { commands: { mode: "block", values: ["rm"] } }
  });
  void blockPolicy;
  // Shells, and natural command lines through them, only with the opt-in (allow mode).
  const shellPolicy: DockerSandboxCommandPolicy = { mode: "allow", values: ["/bin/bash", "sh"], allowShellInterpreters: true };
  const shellTools = createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command", "start_process"], exec: { commands: shellPolicy } });
  void shellTools;
  // The terminal tools, with their own limits.
  const terminalPolicy: DockerSandboxTerminalToolPolicy = { defaultYieldMs: 500, maxYieldMs: 10_000, maxOutputBytes: 32_768, stopGracePeriodMs: 1_000 };
  const terminalNames: DockerSandboxTerminalToolName[] = ["start_terminal", "write_terminal", "read_terminal", "stop_terminal"];
  const terminalTools = createDockerSandboxTools({ sandbox: runtime, tools: ["start_terminal", "write_terminal", "read_terminal", "stop_terminal"], exec: { commands: shellPolicy }, terminal: terminalPolicy });
  void terminalTools;
  void terminalNames;
  // @ts-expect-error the limits are numbers
  createDockerSandboxTools({ sandbox: runtime, tools: ["read_terminal"], terminal: { maxYieldMs: "10s" } });
  if (shellPolicy.mode === "allow") {
    const optedIn: boolean | undefined = shellPolicy.allowShellInterpreters;
    void optedIn;
  }
  // @ts-expect-error allowShellInterpreters is a boolean
  createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: { mode: "allow", values: ["sh"], allowShellInterpreters: "yes" } } });
  // @ts-expect-error a block-mode policy has no allowShellInterpreters
  createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: { mode: "block", values: ["rm"], allowShellInterpreters: true } } });
  // @ts-expect-error the policy is read-only
  shellPolicy.values = [];
  // @ts-expect-error not a tool name
  createDockerSandboxTools({ sandbox: runtime, tools: ["exec_cmd"] });
  // @ts-expect-error at least one tool must be selected
  createDockerSandboxTools({ sandbox: runtime, tools: [] });
  // @ts-expect-error the policy mode is allow or block
  createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: { mode: "deny", values: [] } } });
  // @ts-expect-error the tool array is read-only
  tools.push(tools[0]!);

  const model: FakeModel = {
    next: (_definitions, history) =>
      history.length === 0
        ? [
            { name: "write_file", arguments: { path: "hello.js", content: "console.log('hi')\n" } },
            { name: "exec_command", arguments: { command: "node", args: ["hello.js"] } },
            { name: "read_file", arguments: { path: "hello.js" } }
          ]
        : []
  };
  await runAgent(model, tools, controller.signal);

  // Errors.
  try {
    await runtime.exec({ command: "sleep", args: ["100"], timeoutMs: 10 });
    await sandbox.stop({ abortSignal: AbortSignal.timeout(5_000) });
  } catch (error) {
    if (error instanceof DockerSandboxError && error.code === "timeout") {
      const details: unknown = error.details;
      void details;
    } else if (error instanceof DockerSandboxError) {
      const code: DockerSandboxErrorCode = error.code;
      void code;
      // @ts-expect-error not one of the error codes
      if (error.code === "timed_out") return;
    }
  }
  const made = new DockerSandboxError("custom", "process", { pid: 1 }, { cause: new Error("inner") });
  // @ts-expect-error code is read-only
  made.code = "port";
  // @ts-expect-error codes are a closed set
  new DockerSandboxError("custom", "boom");

  // Resume a stopped sandbox by id and destroy it explicitly.
  const resumed: DockerSandbox = await client.resumeSandbox({ id: "agent-run-1", abortSignal: controller.signal });
  await resumed.stop();
  await resumed.destroy();
  await resumed[Symbol.asyncDispose]();
  // @ts-expect-error resumeSandbox needs the id
  await client.resumeSandbox({});
}

// A hand-written runtime (a test double) satisfies the interface and can feed the tools.
const emptyResult: DockerSandboxExecResult = {
  status: "exited",
  exitCode: 0,
  stdout: new Uint8Array(),
  stderr: new Uint8Array(),
  durationMs: 1,
  stdoutTruncated: false,
  stderrTruncated: false
};
const info: DockerSandboxProcessInfo = { id: "p1", command: "true", args: [], status: "exited", exitCode: 0, startedAt: new Date().toISOString() };
const fakeRuntime: DockerSandboxRuntime = {
  id: "fake",
  provider: "docker",
  workdir: "/workspace",
  publishedPorts: [{ containerPort: 3000, host: "127.0.0.1", hostPort: 49152, protocol: "tcp" }],
  exec: async () => emptyResult,
  async *execStream() {
    yield { type: "stdout", data: new Uint8Array([104, 105]) };
    yield { type: "result", result: emptyResult };
  },
  readFile: async () => new Uint8Array(),
  readTextFile: async () => "",
  readTextFilePage: async () => ({ content: "", startLine: 1, endLine: null, nextStartLine: null, truncated: false, truncatedBy: null }),
  writeFile: async () => undefined,
  writeTextFile: async () => undefined,
  listFiles: async () => [{ path: "a", type: "directory" }],
  startProcess: async () => info,
  listProcesses: async () => [info],
  readProcessLogs: async () => ({ stdout: new Uint8Array(), stderr: new Uint8Array(), stdoutTruncated: false, stderrTruncated: false }),
  stopProcess: async () => info,
  waitForPort: async () => ({ containerPort: 3000, host: "127.0.0.1", hostPort: 49152, protocol: "tcp" })
};
const fakeTools = createDockerSandboxTools({ sandbox: fakeRuntime, tools: ["list_ports"] });
void fakeTools;

// The tools fit @anvia/core's `AnyTool` (replicated here, so this check needs no @anvia/core).
type CoreJsonValue = string | number | boolean | null | CoreJsonObject | CoreJsonValue[];
type CoreJsonObject = { [key: string]: CoreJsonValue | undefined };
type CoreToolDefinition = { name: string; description: string; parameters: CoreJsonObject };
type CoreToolCallContext = { emitStreamEvent?(event: unknown): void | Promise<void>; abortSignal?: AbortSignal };
type CoreAnyTool = {
  readonly name: string;
  readonly approval?: unknown;
  definition(prompt: string): CoreToolDefinition | Promise<CoreToolDefinition>;
  call(args: unknown, context?: CoreToolCallContext): unknown;
  parseApprovalArgs?(args: unknown): unknown;
};
const coreTools: readonly CoreAnyTool[] = fakeTools;
void coreTools;

// @ts-expect-error timed_out results have no exit code
const badResult: DockerSandboxExecResult = { ...emptyResult, status: "timed_out", exitCode: 1 };
void badResult;

// Issue 18: limits that outlive the process, listing and pruning, withSandbox, stats, fork.
async function manySandboxes(client: DockerSandboxClient, abortSignal: AbortSignal): Promise<number> {
  const lifetime: DockerSandboxLifetime = { idleTimeoutMs: 10 * 60_000, maxLifetimeMs: 4 * 3_600_000 };
  const options: CreateDockerSandboxOptions = {
    image: "anvia-sandbox/bookworm:local",
    workspace: { type: "ephemeral" },
    network: { mode: "none" },
    labels: { job: "nightly" },
    lifetime,
    abortSignal
  };
  // withSandbox hands back what the callback returns.
  const best: string = await withSandbox(client, options, async (sandbox) => {
    const stats: DockerSandboxStats = await sandbox.stats({ abortSignal });
    const busy = stats.cpu.percent > 50 || stats.memory.usedBytes > stats.memory.limitBytes / 2;
    const forkOptions: ForkDockerSandboxOptions = { id: "try-a", abortSignal };
    const attempts = await Promise.all([sandbox.fork(forkOptions), sandbox.fork()]);
    for (const attempt of attempts) await attempt.destroy();
    const disk: number = stats.workspace.usedBytes;
    return `${busy} ${disk} ${stats.network.rxBytes} ${stats.processes} ${stats.sampledAt ?? "?"}`;
  });
  void best;
  const state: DockerSandboxListedState = "stopped";
  const listOptions: ListDockerSandboxesOptions = { labels: { job: "nightly" }, state, abortSignal };
  const listed: DockerSandboxSummary[] = await client.listSandboxes(listOptions);
  for (const summary of listed) {
    const volume = summary.workspace?.type === "ephemeral" ? summary.workspace.volume : summary.workspace?.name;
    const when: string | undefined = summary.stoppedAt ?? summary.createdAt ?? undefined;
    void [volume, when, summary.ports[0]?.hostPort, summary.labels["job"], summary.lifetime?.idleTimeoutMs, summary.forkOf, summary.exitCode];
  }
  const pruneOptions: PruneDockerSandboxesOptions = { labels: { job: "nightly" }, stoppedForMs: 3_600_000, dryRun: true };
  const pruned: DockerSandboxPruneResult = await client.pruneSandboxes(pruneOptions);
  await client.pruneSandboxes({ createdBeforeMs: Date.now() - 86_400_000 });
  for (const failure of pruned.failed) void failure.error.code;
  try {
    await withSandbox(client, options, async () => {
      throw new Error("agent failed");
    });
  } catch (error) {
    if (error instanceof DockerSandboxRunError) {
      void [error.primaryError, error.cleanupError];
      await error.retryCleanup();
    } else if (error instanceof DockerSandboxCleanupError) {
      void error.cleanupError;
      await error.retryCleanup();
    }
  }
  // @ts-expect-error listed states are the engine's, not the handle's
  const wrongState: DockerSandboxListedState = "destroyed";
  void wrongState;
  return pruned.removed.filter((s) => s.removedVolume !== undefined).length + listed.length;
}
void manySandboxes;

// Tree transfers (importTree / exportTree): every source, destination and option.
async function treeTransfers(sandbox: DockerSandbox, abortSignal: AbortSignal): Promise<number> {
  const transfer: DockerSandboxTreeTransfer = sandbox.runtime;
  const quotas: DockerSandboxTreeQuotas = { maxFiles: 10_000, maxFileBytes: 64 << 20, maxTotalBytes: 1 << 30, maxPathBytes: 1024, maxDepth: 32 };
  const seen: DockerSandboxTreeProgress[] = [];
  const importOptions: DockerSandboxImportTreeOptions = {
    path: "project",
    quotas,
    specialFiles: "skip",
    onProgress: (p) => seen.push(p),
    abortSignal
  };
  // A host directory, walked incrementally.
  const fromHost: DockerSandboxTreeSummary = await transfer.importTree("./my-repo", importOptions);
  // An array: directories, bytes held in memory, bytes streamed by open().
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield new Uint8Array(1024);
    yield new Uint8Array(1024);
  }
  const entries: DockerSandboxImportEntry[] = [
    { kind: "directory", path: "src", mode: 0o755 },
    { kind: "file", path: "src/index.js", bytes: new TextEncoder().encode("console.log(1)\n") },
    { kind: "file", path: "data/blob.bin", byteLength: 2048, mode: 0o600, open: chunks },
    { kind: "file", path: "data/sync.bin", byteLength: 3, open: () => [new Uint8Array(3)] }
  ];
  await sandbox.runtime.importTree(entries);
  // Any async iterable of entries.
  async function* generated(): AsyncGenerator<DockerSandboxImportEntry> {
    for (let i = 0; i < 3; i++) yield { kind: "file", path: `gen/${i}.txt`, bytes: new Uint8Array([i]) };
  }
  await sandbox.runtime.importTree(generated(), { path: "." });
  // Export: to a host directory that must not exist yet, or to a consumer.
  const exportOptions: DockerSandboxExportTreeOptions = { quotas, specialFiles: "refuse", onProgress: (p) => void p.totalFiles, abortSignal, idleTimeoutMs: 60_000 };
  const everything: DockerSandboxTreeSelection = { kind: "workspace" };
  await sandbox.runtime.exportTree(everything, "./out", exportOptions);
  let bytes = 0;
  const consume: DockerSandboxExportConsumer = async (entry: DockerSandboxExportEntry) => {
    if (entry.kind === "file") {
      for await (const chunk of entry.bytes) bytes += chunk.byteLength;
    } else {
      const none: 0 = entry.byteLength;
      void none;
    }
  };
  const summary = await sandbox.runtime.exportTree({ kind: "subtree", path: "project/src" }, consume);
  await sandbox.runtime.exportTree({ kind: "files", paths: ["project/README.md"] }, (entry) => void entry.mode);
  try {
    await sandbox.runtime.importTree("./my-repo", { quotas: { maxFiles: 1 } });
  } catch (error) {
    if (error instanceof DockerSandboxError && (error.code === "quota_exceeded" || error.code === "invalid_entry")) void error.details;
  }
  // @ts-expect-error a selection names a kind
  await sandbox.runtime.exportTree({ kind: "everything" }, "./out");
  // @ts-expect-error a streamed file entry needs its byteLength
  await sandbox.runtime.importTree([{ kind: "file", path: "a", open: chunks }]);
  // @ts-expect-error specialFiles never follows links
  await sandbox.runtime.importTree("./my-repo", { specialFiles: "follow" });
  await sandbox.runtime.exportTree({ kind: "workspace" }, (entry) => {
    // @ts-expect-error a directory has no bytes
    if (entry.kind === "directory") void entry.bytes;
  });
  return fromHost.files + summary.bytes + bytes + seen.length + fromHost.skipped + summary.durationMs;
}
void treeTransfers;

export { main };

// Upstream 1.1.2: another OCI runtime registered in the daemon (gVisor), and its error code.
async function underGvisor(client: DockerSandboxClient): Promise<string> {
  const options: CreateDockerSandboxOptions = {
    image: "anvia-sandbox/bookworm:local",
    workspace: { type: "ephemeral" },
    network: { mode: "none" },
    containerRuntime: "runsc",
  };
  try {
    const sandbox = await client.createSandbox(options);
    return sandbox.inspector({ files: true }).containerRuntime;
  } catch (error) {
    if (error instanceof DockerSandboxError && error.code === "runtime_not_found") return "missing";
    throw error;
  }
}
// @ts-expect-error containerRuntime is a string
const badRuntime: CreateDockerSandboxOptions = { image: "x", workspace: { type: "ephemeral" }, network: { mode: "none" }, containerRuntime: 1 };
void badRuntime;
void underGvisor;

// File watching through the agent: every option, every event shape.
async function watching(sandbox: DockerSandbox, abortSignal: AbortSignal): Promise<string[]> {
  const watcher: DockerSandboxFileWatching = sandbox.runtime;
  const options: DockerSandboxWatchFilesOptions = { path: "src", recursive: true, abortSignal };
  const seen: string[] = [];
  for await (const event of watcher.watchFiles(options)) {
    const e: DockerSandboxFileWatchEvent = event;
    if (e.type === "overflow") seen.push("overflow");
    else seen.push(`${e.type} ${e.kind} ${e.path}`);
  }
  for await (const event of sandbox.runtime.watchFiles()) if (event.type !== "overflow") void event.path;
  // @ts-expect-error recursive is a boolean
  sandbox.runtime.watchFiles({ recursive: "yes" });
  return seen;
}
void watching;

// Terminals through the agent: every option and method.
async function terminals(sandbox: DockerSandbox, abortSignal: AbortSignal): Promise<number> {
  const rt: DockerSandboxTerminals = sandbox.runtime;
  const options: DockerSandboxStartTerminalOptions = {
    command: "python3",
    args: ["-q"],
    cwd: "src",
    env: { LANG: "C.UTF-8" },
    cols: 120,
    rows: 40,
    scrollbackBytes: 4 * 1024 * 1024,
    abortSignal,
  };
  const terminal: DockerSandboxTerminal = await rt.startTerminal(options);
  await terminal.write("print(6 * 7)\n", { abortSignal });
  await terminal.write(new Uint8Array([3]));
  const size: { cols: number; rows: number } = await terminal.resize({ cols: 100, rows: 30 });
  let seen = size.cols;
  for await (const chunk of terminal.output({ since: 0, abortSignal })) {
    const c: DockerSandboxTerminalChunk = chunk;
    seen += c.offset + c.data.byteLength;
  }
  const again = await rt.attachTerminal({ id: terminal.id });
  const listed: readonly { readonly id: string }[] = await rt.listTerminals();
  const { delivered }: { delivered: boolean } = await again.kill("SIGTERM");
  await again.kill(9);
  const exit: DockerSandboxTerminalExit = await terminal.wait();
  // @ts-expect-error a signal is a known name or a number
  void terminal.kill("SIGBOGUS");
  // @ts-expect-error resize needs both dimensions
  void terminal.resize({ cols: 10 });
  return seen + listed.length + (delivered ? 1 : 0) + exit.exitCode + terminal.pid + (exit.signal === null ? 0 : 1);
}
void terminals;
