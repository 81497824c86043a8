// Public types of @anvia/sandbox: the same contract as the JS package (1.0.0-rc.10), plus the
// `host` client option. Every options object is Readonly and takes an optional `abortSignal`.
// AbortSignal comes from the consumer's environment (@types/node or the DOM lib).

import type { ZodType } from "zod";

// ---- sandbox configuration -------------------------------------------------------------------

export type DockerSandboxFileType = "file" | "directory" | "symlink" | "other";

/** Where `/workspace` (the workdir) lives: a fresh volume removed on destroy, or a named one kept. */
export type DockerSandboxWorkspace =
  | { readonly type: "ephemeral" }
  | { readonly type: "docker-volume"; readonly name: string };

/** `none`: no network at all. `bridge`: outbound network; `ports` are published on 127.0.0.1. */
export type DockerSandboxNetwork =
  | { readonly mode: "none" }
  | { readonly mode: "bridge"; readonly ports?: readonly number[] };

export type DockerSandboxState =
  | "running"
  | "stopping"
  | "stopped"
  | "destroying"
  | "destroyed"
  | "error";

export type DockerSandboxResources = {
  readonly memoryMb?: number;
  readonly cpus?: number;
  readonly pidsLimit?: number;
  readonly sharedMemoryMb?: number;
};

/** Defaults: 30 000 ms per command, 1 MiB output per stream, 10 MiB per file, 4 processes. */
export type DockerSandboxRuntimeLimits = {
  readonly commandTimeoutMs?: number;
  readonly maxOutputBytes?: number;
  readonly maxFileBytes?: number;
  readonly maxProcesses?: number;
};

/** Defaults: `noNewPrivileges: true`, `dropCapabilities: ["ALL"]`, writable rootfs. */
export type DockerSandboxSecurity = {
  readonly readonlyRootfs?: boolean;
  readonly noNewPrivileges?: boolean;
  readonly seccompProfile?: { readonly type: "path"; readonly path: string };
  readonly dropCapabilities?: readonly string[];
  readonly addCapabilities?: readonly string[];
};

export type CreateDockerSandboxOptions = {
  readonly image: string;
  readonly workspace: DockerSandboxWorkspace;
  readonly network: DockerSandboxNetwork;
  /** 1-63 lowercase letters, digits, dots, underscores or hyphens; a UUID when omitted. */
  readonly id?: string;
  /** Absolute POSIX path; `/workspace` when omitted. */
  readonly workdir?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly user?: string;
  /** Extra container labels; keys under `anvia.sandbox.` are reserved. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly resources?: DockerSandboxResources;
  readonly runtime?: DockerSandboxRuntimeLimits;
  readonly security?: DockerSandboxSecurity;
  /** Workspace-relative directories created before the sandbox is handed back. */
  readonly directories?: readonly string[];
  /** Workspace-relative files written before the sandbox is handed back. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
  readonly abortSignal?: AbortSignal;
};

export type ResumeDockerSandboxOptions = {
  readonly id: string;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxClientOptions = {
  /** Accepted for compatibility with the CLI-driven package; validated, not used to spawn. */
  readonly dockerPath?: string;
  /**
   * The Docker Engine endpoint, e.g. `unix:///var/run/docker.sock` or `tcp://host:2375`.
   * When omitted: `DOCKER_HOST`, then the current Docker context, then the default socket.
   */
  readonly host?: string;
};

export type PullDockerImageOptions = {
  readonly image: string;
  readonly abortSignal?: AbortSignal;
};

// ---- commands ----------------------------------------------------------------------------------

export type DockerSandboxExecOptions = {
  readonly command: string;
  readonly args?: readonly string[];
  /** Workspace-relative working directory. */
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  /** Written to the command's stdin, which is then closed. */
  readonly input?: string | Uint8Array;
  readonly abortSignal?: AbortSignal;
};

type DockerSandboxExecOutput = {
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly durationMs: number;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
};

/** Discriminated on `status`: only an `exited` result has an `exitCode`. */
export type DockerSandboxExecResult =
  | (DockerSandboxExecOutput & { readonly status: "exited"; readonly exitCode: number })
  | (DockerSandboxExecOutput & { readonly status: "timed_out" });

/** Output chunks as they arrive, then exactly one `result` last. */
export type DockerSandboxExecStreamEvent =
  | { readonly type: "stdout" | "stderr"; readonly data: Uint8Array }
  | { readonly type: "result"; readonly result: DockerSandboxExecResult };

// ---- files -------------------------------------------------------------------------------------

export type DockerSandboxReadFileOptions = {
  /** Workspace-relative path of a regular file. */
  readonly path: string;
  readonly abortSignal?: AbortSignal;
};

/** Defaults: `startLine` 1, `lineCount` 500, `maxBytes` 65 536. */
export type DockerSandboxReadTextFilePageOptions = {
  readonly path: string;
  readonly startLine?: number;
  readonly lineCount?: number;
  readonly maxBytes?: number;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxTextFilePage = {
  readonly content: string;
  readonly startLine: number;
  readonly endLine: number | null;
  readonly nextStartLine: number | null;
  readonly truncated: boolean;
  readonly truncatedBy: "lines" | "bytes" | null;
};

export type DockerSandboxWriteFileOptions = {
  readonly path: string;
  readonly data: Uint8Array;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxWriteTextFileOptions = {
  readonly path: string;
  readonly text: string;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxListFilesOptions = {
  /** Workspace-relative directory; `.` (the workspace root) when omitted. */
  readonly path?: string;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxFileEntry = {
  /** Workspace-relative path. */
  readonly path: string;
  readonly type: DockerSandboxFileType;
  /** Present for regular files only. */
  readonly size?: number;
};

// ---- ports -------------------------------------------------------------------------------------

export type DockerSandboxPublishedPort = {
  readonly containerPort: number;
  readonly host: "127.0.0.1";
  readonly hostPort: number;
  readonly protocol: "tcp";
};

/** Defaults: `timeoutMs` 30 000, `intervalMs` 100. */
export type DockerSandboxWaitForPortOptions = {
  readonly containerPort: number;
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
  readonly abortSignal?: AbortSignal;
};

// ---- processes ---------------------------------------------------------------------------------

export type DockerSandboxProcessStartOptions = {
  readonly command: string;
  readonly args?: readonly string[];
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxProcessStatus = "running" | "exited" | "stopped";

export type DockerSandboxProcessInfo = {
  readonly id: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly status: DockerSandboxProcessStatus;
  readonly exitCode?: number;
  /** ISO 8601. */
  readonly startedAt: string;
  /** ISO 8601. */
  readonly endedAt?: string;
};

export type DockerSandboxListProcessesOptions = {
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxReadProcessLogsOptions = {
  readonly processId: string;
  /** Trailing bytes of each stream; everything kept when omitted. */
  readonly tailBytes?: number;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxProcessLogs = {
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
};

/** `gracePeriodMs` (default 5 000) between SIGTERM and SIGKILL to the process group. */
export type DockerSandboxStopProcessOptions = {
  readonly processId: string;
  readonly gracePeriodMs?: number;
  readonly abortSignal?: AbortSignal;
};

// ---- the sandbox -------------------------------------------------------------------------------

/** What agents and tools work with: every operation takes one options object. */
export interface DockerSandboxRuntime {
  readonly id: string;
  readonly provider: "docker";
  readonly workdir: string;
  readonly publishedPorts: readonly DockerSandboxPublishedPort[];
  exec(options: DockerSandboxExecOptions): Promise<DockerSandboxExecResult>;
  execStream(options: DockerSandboxExecOptions): AsyncIterable<DockerSandboxExecStreamEvent>;
  readFile(options: DockerSandboxReadFileOptions): Promise<Uint8Array>;
  /** Strict UTF-8: invalid bytes reject with TypeError. */
  readTextFile(options: DockerSandboxReadFileOptions): Promise<string>;
  readTextFilePage(options: DockerSandboxReadTextFilePageOptions): Promise<DockerSandboxTextFilePage>;
  /** Creates parent directories. */
  writeFile(options: DockerSandboxWriteFileOptions): Promise<void>;
  writeTextFile(options: DockerSandboxWriteTextFileOptions): Promise<void>;
  /** Direct children of a directory. */
  listFiles(options?: DockerSandboxListFilesOptions): Promise<readonly DockerSandboxFileEntry[]>;
  startProcess(options: DockerSandboxProcessStartOptions): Promise<DockerSandboxProcessInfo>;
  listProcesses(
    options?: DockerSandboxListProcessesOptions
  ): Promise<readonly DockerSandboxProcessInfo[]>;
  readProcessLogs(options: DockerSandboxReadProcessLogsOptions): Promise<DockerSandboxProcessLogs>;
  stopProcess(options: DockerSandboxStopProcessOptions): Promise<DockerSandboxProcessInfo>;
  waitForPort(options: DockerSandboxWaitForPortOptions): Promise<DockerSandboxPublishedPort>;
}

/** At least one capability must be enabled. */
export type DockerSandboxInspectionOptions = {
  readonly files?: boolean;
  readonly ports?: boolean;
  readonly processes?: boolean;
};

/** A read-only view: each member is present only when its capability was enabled. */
export type DockerSandboxInspector = {
  readonly id: string;
  readonly provider: "docker";
  readonly workdir: string;
  /** With `files: true`. */
  readonly listFiles?: DockerSandboxRuntime["listFiles"];
  /** With `files: true`. */
  readonly readFile?: DockerSandboxRuntime["readFile"];
  /** With `ports: true`. */
  readonly publishedPorts?: readonly DockerSandboxPublishedPort[];
  /** With `processes: true`. */
  readonly listProcesses?: DockerSandboxRuntime["listProcesses"];
  /** With `processes: true`. */
  readonly readProcessLogs?: DockerSandboxRuntime["readProcessLogs"];
};

export type StopDockerSandboxOptions = {
  readonly abortSignal?: AbortSignal;
};

/** A live handle. `await using` destroys it (container, and an ephemeral workspace volume). */
export interface DockerSandbox extends AsyncDisposable {
  readonly id: string;
  readonly state: DockerSandboxState;
  readonly runtime: DockerSandboxRuntime;
  inspector(options: DockerSandboxInspectionOptions): DockerSandboxInspector;
  /** Stops managed processes and the container; the volume is kept and the id can be resumed. */
  stop(options?: StopDockerSandboxOptions): Promise<void>;
  destroy(): Promise<void>;
}

export declare class DockerSandboxClient {
  constructor(options?: DockerSandboxClientOptions);
  /** Pulls an image into the engine; sandboxes only use images that are already local. */
  pullImage(options: PullDockerImageOptions): Promise<void>;
  createSandbox(options: CreateDockerSandboxOptions): Promise<DockerSandbox>;
  /** Restarts the stopped (or running) container of an existing sandbox id. */
  resumeSandbox(options: ResumeDockerSandboxOptions): Promise<DockerSandbox>;
}

// ---- errors ------------------------------------------------------------------------------------

export type DockerSandboxErrorCode =
  | "docker_unavailable"
  | "docker_command_failed"
  | "image_not_found"
  | "volume_not_found"
  | "sandbox_not_found"
  | "invalid_state"
  | "invalid_path"
  | "timeout"
  | "file_too_large"
  | "tool_policy"
  | "port"
  | "process";

/** Argument shape errors are plain TypeError / RangeError; everything else is this class. */
export declare class DockerSandboxError extends Error {
  constructor(
    message: string,
    code: DockerSandboxErrorCode,
    details?: unknown,
    options?: ErrorOptions
  );
  readonly code: DockerSandboxErrorCode;
  readonly details?: unknown;
}

// ---- agent tools -------------------------------------------------------------------------------

export type DockerSandboxToolName =
  | "exec_command"
  | "read_file"
  | "write_file"
  | "list_files"
  | "list_ports"
  | "start_process"
  | "list_processes"
  | "read_process_logs"
  | "stop_process"
  | "wait_for_port";

/** Exact executable names: `allow` admits only these, `block` admits all but these. */
export type DockerSandboxCommandPolicy =
  | { readonly mode: "allow"; readonly values: readonly string[] }
  | { readonly mode: "block"; readonly values: readonly string[] };

/** Applies to `exec_command` (commands, timeouts) and `start_process` (commands). */
export type DockerSandboxExecToolPolicy = {
  readonly commands?: DockerSandboxCommandPolicy;
  /** At most 300 000. */
  readonly defaultTimeoutMs?: number;
  /** At most 300 000. */
  readonly maxTimeoutMs?: number;
};

/** `write_file`: largest content, in UTF-8 bytes (at most 1 MiB). */
export type DockerSandboxFileToolPolicy = {
  readonly maxBytes?: number;
};

/** `read_file`: bytes per page (default 64 KiB, at most 1 MiB), lines (default 500, max 2 000). */
export type DockerSandboxReadFileToolPolicy = DockerSandboxFileToolPolicy & {
  readonly defaultLineCount?: number;
  /** At most 10 000. */
  readonly maxLineCount?: number;
};

/** Process and port tools. Defaults: 64 KiB logs, 30 s wait (max 300 s), 5 s grace. */
export type DockerSandboxProcessToolPolicy = {
  /** At most 1 MiB. */
  readonly maxLogBytes?: number;
  readonly defaultWaitTimeoutMs?: number;
  /** At most 300 000. */
  readonly maxWaitTimeoutMs?: number;
  readonly stopGracePeriodMs?: number;
};

export type CreateDockerSandboxToolsOptions = {
  readonly sandbox: DockerSandboxRuntime;
  /** Non-empty, no duplicates; the tools come back in this order. */
  readonly tools: readonly [DockerSandboxToolName, ...DockerSandboxToolName[]];
  readonly exec?: DockerSandboxExecToolPolicy;
  readonly readFile?: DockerSandboxReadFileToolPolicy;
  readonly writeFile?: DockerSandboxFileToolPolicy;
  readonly process?: DockerSandboxProcessToolPolicy;
};

export type DockerSandboxJsonValue =
  | string
  | number
  | boolean
  | null
  | DockerSandboxJsonObject
  | DockerSandboxJsonValue[];
export type DockerSandboxJsonObject = { [key: string]: DockerSandboxJsonValue | undefined };

/** What a provider is given for a tool: `parameters` is the JSON Schema of the input. */
export type DockerSandboxToolDefinition = {
  name: string;
  description: string;
  parameters: DockerSandboxJsonObject;
};

export type DockerSandboxToolCallContext = {
  /** Passed down to the runtime call; an already aborted signal rejects at once. */
  readonly abortSignal?: AbortSignal;
  readonly [key: string]: unknown;
};

/**
 * A tool as built by `@anvia/core`'s `createTool` (used when it is installed) or by the local
 * equivalent; structurally assignable to core's `AnyTool`, so no @anvia/core types are needed.
 * `call` validates `args` with zod (a ZodError rejects it), runs the tool, and resolves to the
 * JSON-ready output (byte output decoded as strict UTF-8).
 */
export interface DockerSandboxTool {
  readonly name: DockerSandboxToolName;
  definition(prompt: string): DockerSandboxToolDefinition;
  call(args: unknown, context?: DockerSandboxToolCallContext): Promise<unknown>;
  parseApprovalArgs?(args: unknown): unknown;
  /** Local factory only (when `@anvia/core` is not installed). */
  readonly description?: string;
  /** Local factory only. */
  readonly inputSchema?: ZodType;
  /** Local factory only. */
  readonly outputSchema?: ZodType;
  /** Local factory only: input validation alone. */
  parseInput?(args: unknown): unknown;
}

/** Throws TypeError for a malformed selection, DockerSandboxError `tool_policy` for a bad policy. */
export declare function createDockerSandboxTools(
  options: CreateDockerSandboxToolsOptions
): readonly DockerSandboxTool[];
