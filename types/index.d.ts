// Public types of @anvia/sandbox: the same contract as the JS package (1.0.0-rc.10), plus the
// `host` client option and issue 18's additions (lifetime limits, listing, pruning,
// withSandbox, stats, fork). Every options object is Readonly and takes an optional `abortSignal`.
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

/**
 * Limits enforced inside the container, so they hold when no client is alive (a crashed or
 * killed Node process): past them the sandbox stops itself, and resumes like any stopped
 * sandbox, limits included. Whole milliseconds from 1 000; a stop comes within about a
 * second past the limit. Without any, the container is made exactly as before.
 */
export type DockerSandboxLifetime = {
  /** Stop once no runtime operation (any `sandbox.runtime` call) has started or been in
   * progress for this long. Processes the sandbox runs on its own do not count. */
  readonly idleTimeoutMs?: number;
  /** Stop this long after the container (re)started, however busy it is. */
  readonly maxLifetimeMs?: number;
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
  /** Idle and lifetime limits, kept in the container's labels. */
  readonly lifetime?: DockerSandboxLifetime;
  /** An OCI runtime registered in the daemon (`"runsc"` for gVisor, `"crun"`, ...); the
   * daemon's default when omitted. Checked against the daemon (`runtime_not_found`) before
   * anything is made, kept in the `anvia.sandbox.container-runtime` label. */
  readonly containerRuntime?: string;
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
  /**
   * How runtime operations reach the sandbox. `"agent"`: through a small static agent the
   * library places in the container (one long-lived exec, no port), about a millisecond per
   * call; `"engine"`: through the Engine API's exec and archive endpoints, one or two round
   * trips per call; `"auto"` (the default): the agent where it can be placed, the engine
   * path otherwise. `ANVIA_SANDBOX_TRANSPORT` sets the default.
   */
  readonly transport?: DockerSandboxTransport;
};

export type DockerSandboxTransport = "auto" | "agent" | "engine";

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

// ---- tree transfers ----------------------------------------------------------------------------

/** Per-transfer bounds; a breach stops the transfer on both sides (`quota_exceeded`, or
 * `file_too_large` for one file), with `details` saying how far it got. */
export type DockerSandboxTreeQuotas = {
  /** Entries, directories as well as files (each is made on the other side; an import's
   * implicit parent directories count). Default 100 000. */
  readonly maxFiles?: number;
  /** Default: the sandbox's `runtime.maxFileBytes`. */
  readonly maxFileBytes?: number;
  /** Default 1 GiB. */
  readonly maxTotalBytes?: number;
  /** Bytes of an entry's path. Default 4096. */
  readonly maxPathBytes?: number;
  /** Components of an entry's path. Default 256. */
  readonly maxDepth?: number;
};

/** Files and bytes so far; totals when they are known beforehand. */
export type DockerSandboxTreeProgress = {
  readonly files: number;
  readonly directories: number;
  readonly bytes: number;
  readonly totalFiles?: number;
  readonly totalBytes?: number;
};

export type DockerSandboxTreeSummary = {
  readonly files: number;
  readonly directories: number;
  readonly bytes: number;
  /** Links, devices and the like left out with `specialFiles: "skip"`. */
  readonly skipped: number;
  readonly durationMs: number;
};

/** An entry to import. Paths follow writeFile's rules and are relative to `options.path`;
 * missing parent directories are created. Modes default to 0o644 and 0o755. */
export type DockerSandboxImportEntry =
  | { readonly kind: "directory"; readonly path: string; readonly mode?: number }
  | {
      readonly kind: "file";
      readonly path: string;
      readonly mode?: number;
      /** Exactly the bytes `open()` yields; more or fewer fails the import (`invalid_entry`). */
      readonly byteLength: number;
      open(): AsyncIterable<Uint8Array> | Iterable<Uint8Array> | Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>;
    }
  | { readonly kind: "file"; readonly path: string; readonly mode?: number; readonly bytes: Uint8Array; readonly byteLength?: number };

export type DockerSandboxImportTreeOptions = {
  /** The workspace directory imported into (made if missing); the workspace by default. */
  readonly path?: string;
  readonly quotas?: DockerSandboxTreeQuotas;
  /** A host directory source: links, devices, fifos and sockets are refused (default) or skipped, never followed. */
  readonly specialFiles?: "refuse" | "skip";
  readonly onProgress?: (progress: DockerSandboxTreeProgress) => void;
  readonly abortSignal?: AbortSignal;
};

/** Paths stay workspace-relative: a subtree's entries start with its path. */
export type DockerSandboxTreeSelection =
  | { readonly kind: "workspace" }
  | { readonly kind: "subtree"; readonly path: string }
  | { readonly kind: "files"; readonly paths: readonly string[] };

/** `mode`: the sandbox's permission bits (0o777 at most; never setuid, setgid or sticky).
 * A host directory destination applies the process umask to them. */
export type DockerSandboxExportEntry =
  | { readonly kind: "directory"; readonly path: string; readonly mode: number; readonly byteLength: 0 }
  | {
      readonly kind: "file";
      readonly path: string;
      readonly mode: number;
      readonly byteLength: number;
      /** The file's bytes, in order, once; what is not read is skipped. */
      readonly bytes: AsyncIterable<Uint8Array>;
    };

/** Called once per entry, in order; the next entry waits for the returned promise. */
export type DockerSandboxExportConsumer = (entry: DockerSandboxExportEntry) => void | Promise<void>;

export type DockerSandboxExportTreeOptions = {
  readonly quotas?: DockerSandboxTreeQuotas;
  /** Links, devices, fifos, sockets and names that are not UTF-8: refused (default) or skipped. */
  readonly specialFiles?: "refuse" | "skip";
  /** Nothing from the sandbox for this long, while the consumer is not holding the export
   * back, fails it with `timeout`. Whole milliseconds, default 60 000. */
  readonly idleTimeoutMs?: number;
  readonly onProgress?: (progress: DockerSandboxTreeProgress) => void;
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

/**
 * Tree transfers, on every sandbox handle's runtime (`sandbox.runtime`). Apart from
 * `DockerSandboxRuntime` (the original's interface), so code that implements that one (a
 * stand-in handed to createDockerSandboxTools) keeps compiling.
 */
export interface DockerSandboxTreeTransfer {
  /**
   * Imports a host directory (walked incrementally; links and special files refused or
   * skipped, never followed) or an iterable of entries, as one streamed archive written as
   * the sandbox's user. Published only once every entry is in; nothing of a failed or
   * aborted import is left.
   */
  importTree(
    source: string | Iterable<DockerSandboxImportEntry> | AsyncIterable<DockerSandboxImportEntry>,
    options?: DockerSandboxImportTreeOptions
  ): Promise<DockerSandboxTreeSummary>;
  /**
   * Exports a selection to a host directory that must not exist yet (filled under a
   * temporary sibling, renamed into place once everything succeeded) or to `consume(entry)`,
   * streamed with back-pressure.
   */
  exportTree(
    selection: DockerSandboxTreeSelection,
    destination: string | DockerSandboxExportConsumer,
    options?: DockerSandboxExportTreeOptions
  ): Promise<DockerSandboxTreeSummary>;
}

export type DockerSandboxWatchFilesOptions = {
  /** A directory beneath the workdir (relative, or absolute inside it); default the workdir. */
  readonly path?: string;
  /** Every directory beneath, including ones made or moved in later (default false). */
  readonly recursive?: boolean;
  readonly abortSignal?: AbortSignal;
};

/**
 * One change. Paths are relative to the workdir. A move within the watched tree is a
 * `rename` of the old path then a `create` of the new one; `overflow` means events were
 * lost (the consumer fell too far behind): look again.
 */
export type DockerSandboxFileWatchEvent =
  | {
      readonly type: "create" | "modify" | "delete" | "rename";
      readonly path: string;
      readonly kind: "file" | "directory";
    }
  | { readonly type: "overflow" };

/**
 * File watching, through the in-sandbox agent (transport `"auto"` or `"agent"`). Apart from
 * `DockerSandboxRuntime` for the same reason as the tree transfers.
 */
export interface DockerSandboxFileWatching {
  /**
   * Changes beneath a directory as they happen (inotify in the sandbox; links never
   * followed). Ends when the directory is deleted or moved away, on `abortSignal`, or when
   * the consumer stops iterating. Fails with `invalid_state` when the agent is not used
   * (transport `"engine"`) or cannot run in the sandbox.
   */
  watchFiles(options?: DockerSandboxWatchFilesOptions): AsyncIterable<DockerSandboxFileWatchEvent>;
}

export type DockerSandboxStartTerminalOptions = {
  /** The program; default the image's `/bin/bash` when it has one, else `/bin/sh`, interactive. */
  readonly command?: string;
  /** Only with `command`. */
  readonly args?: readonly string[];
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** 1 to 4096; default 80 x 24. */
  readonly cols?: number;
  readonly rows?: number;
  /** Output kept for replay, 4096 to 67108864 bytes; default 1 MiB. */
  readonly scrollbackBytes?: number;
  readonly abortSignal?: AbortSignal;
};

/** A run of a terminal's raw output; `offset` counts bytes from the program's first. */
export type DockerSandboxTerminalChunk = { readonly offset: number; readonly data: Uint8Array };

/** How the terminal's program ended: `exitCode` is 128 + n for a death by signal n. On
 * the engine path `signal` is named only when this process's `kill` delivered n and the
 * code is 128 + n (the engine reports an exit code alone); otherwise null. */
export type DockerSandboxTerminalExit = { readonly exitCode: number; readonly signal: string | null };

export type DockerSandboxTerminalSignal =
  | "SIGHUP" | "SIGINT" | "SIGQUIT" | "SIGKILL" | "SIGUSR1" | "SIGUSR2"
  | "SIGTERM" | "SIGCONT" | "SIGSTOP" | "SIGTSTP" | "SIGWINCH" | number;

/**
 * A program in a pseudo-terminal in the sandbox, held by a keeper process there: it
 * outlives this handle and this Node process, and any handle attaches to it by `id`.
 */
export interface DockerSandboxTerminal {
  readonly id: string;
  /** The program's pid (and process group) in the sandbox. */
  readonly pid: number;
  /** Input as raw bytes (a string as UTF-8); resolves once it is in the terminal. */
  write(data: string | Uint8Array, options?: { readonly abortSignal?: AbortSignal }): Promise<void>;
  resize(options: { readonly cols: number; readonly rows: number; readonly abortSignal?: AbortSignal }): Promise<{ readonly cols: number; readonly rows: number }>;
  /**
   * The output from byte `since` (default 0) out of the scrollback, then live until the
   * terminal ends. While iterated, the program is held back rather than lose output; a
   * first offset past `since` says those bytes are gone.
   */
  output(options?: { readonly since?: number; readonly abortSignal?: AbortSignal }): AsyncIterable<DockerSandboxTerminalChunk>;
  wait(options?: { readonly abortSignal?: AbortSignal }): Promise<DockerSandboxTerminalExit>;
  /** Signals the program's session and its descendants; default SIGKILL. */
  kill(signal?: DockerSandboxTerminalSignal, options?: { readonly abortSignal?: AbortSignal }): Promise<{ readonly delivered: boolean }>;
}

/**
 * Terminals: through the in-sandbox agent (transport `"auto"` or `"agent"`), held by a
 * keeper in the sandbox that outlives this process; on the engine path (transport
 * `"engine"`, or `"auto"` where the agent cannot run), an exec held by this Node process:
 * only its handles attach, and the program ends when the process exits. Each counts
 * against `runtime.maxProcesses`.
 */
export interface DockerSandboxTerminals {
  startTerminal(options?: DockerSandboxStartTerminalOptions): Promise<DockerSandboxTerminal>;
  /** Fails with code `process` when no terminal has this id. */
  attachTerminal(options: { readonly id: string; readonly abortSignal?: AbortSignal }): Promise<DockerSandboxTerminal>;
  listTerminals(options?: { readonly abortSignal?: AbortSignal }): Promise<readonly { readonly id: string }[]>;
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
  /** The OCI runtime the container runs under: the one asked for at create, or `"default"`.
   * A sandbox made without the label reports its engine's runtime (`"runc"`, say). */
  readonly containerRuntime: string;
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

export type DockerSandboxStatsOptions = {
  readonly abortSignal?: AbortSignal;
};

/** One sample, as `docker stats` computes it, plus the workspace's disk use. */
export type DockerSandboxStats = {
  /** When the engine took the sample (RFC 3339), or null if it did not say. */
  readonly sampledAt: string | null;
  /** `percent` over the last second: 100 is one CPU busy. */
  readonly cpu: { readonly percent: number; readonly totalNs: number; readonly onlineCpus: number };
  /** In use without the inactive page cache; `limitBytes` is the memory limit (or the host's). */
  readonly memory: { readonly usedBytes: number; readonly limitBytes: number };
  /** Processes (and threads) in the container, its keep-alive shell included. */
  readonly processes: number;
  /** Summed over the container's interfaces (all zero with network mode none). */
  readonly network: {
    readonly rxBytes: number;
    readonly txBytes: number;
    readonly rxPackets: number;
    readonly txPackets: number;
  };
  /** Disk blocks in use under the workdir (`du -sk`, as the sandbox user); `complete` is
   * false when part of it could not be read. */
  readonly workspace: { readonly usedBytes: number; readonly complete: boolean };
};

export type ForkDockerSandboxOptions = {
  /** The fork's id (as createSandbox's `id`); a UUID when omitted. */
  readonly id?: string;
  readonly abortSignal?: AbortSignal;
};

/** A live handle. `await using` destroys it (container, and an ephemeral workspace volume). */
export interface DockerSandbox extends AsyncDisposable {
  readonly id: string;
  readonly state: DockerSandboxState;
  readonly runtime: DockerSandboxRuntime & DockerSandboxTreeTransfer & DockerSandboxFileWatching & DockerSandboxTerminals;
  inspector(options: DockerSandboxInspectionOptions): DockerSandboxInspector;
  /** Stops managed processes and the container; the volume is kept and the id can be resumed. */
  stop(options?: StopDockerSandboxOptions): Promise<void>;
  /** Also removes the image a fork owns. */
  destroy(): Promise<void>;
  /** One sample of resource use; not a runtime operation (it does not count as activity). */
  stats(options?: DockerSandboxStatsOptions): Promise<DockerSandboxStats>;
  /**
   * A new, independent sandbox with this one's configuration, a copy of its workspace (as an
   * ephemeral workspace of its own) and of its container's filesystem changes, taken while
   * this one is paused. Counts as activity of this sandbox.
   */
  fork(options?: ForkDockerSandboxOptions): Promise<DockerSandbox>;
}

/** What the engine reports: a created or exited container is `stopped`. */
export type DockerSandboxListedState = "running" | "stopped" | "paused" | "restarting" | "removing" | "dead";

export type DockerSandboxSummary = {
  readonly id: string;
  readonly containerName: string;
  readonly state: DockerSandboxListedState;
  readonly image: string;
  /** By the engine's clock, to the second; null if the engine did not say. */
  readonly createdAt: string | null;
  /** For an exited container: the latest time consistent with the engine's status line,
   * which rounds (seconds under a minute, minutes under an hour, then about hours, days...). */
  readonly stoppedAt?: string;
  readonly exitCode?: number;
  readonly workdir?: string;
  /** Absent when the labels do not say (a damaged sandbox). */
  readonly workspace?:
    | { readonly type: "ephemeral"; readonly volume: string }
    | { readonly type: "docker-volume"; readonly name: string };
  /** Published on 127.0.0.1 (a running container's). */
  readonly ports: readonly DockerSandboxPublishedPort[];
  /** The caller's labels (none of `anvia.sandbox.*`). */
  readonly labels: Readonly<Record<string, string>>;
  readonly lifetime?: DockerSandboxLifetime;
  /** The sandbox this one was forked from. */
  readonly forkOf?: string;
};

export type ListDockerSandboxesOptions = {
  /** Only sandboxes with every one of these labels. */
  readonly labels?: Readonly<Record<string, string>>;
  readonly state?: DockerSandboxListedState;
  readonly abortSignal?: AbortSignal;
};

/**
 * Without `createdBeforeMs`, only stopped sandboxes go (stopped for at least `stoppedForMs`,
 * default 0). With it alone, every sandbox created before that time goes, running ones
 * included; with both, both must hold.
 */
export type PruneDockerSandboxesOptions = {
  readonly labels?: Readonly<Record<string, string>>;
  readonly stoppedForMs?: number;
  /** Milliseconds since the epoch (by the engine's clock), as Date.now(). */
  readonly createdBeforeMs?: number;
  /** Report what would go, remove nothing. */
  readonly dryRun?: boolean;
  readonly abortSignal?: AbortSignal;
};

export type DockerSandboxPruneResult = {
  /** Removed (or, in a dry run, to be removed); `removedVolume` names the sandbox's own
   * ephemeral volume when it went too (a docker-volume workspace never does). */
  readonly removed: readonly (DockerSandboxSummary & { readonly removedVolume?: string })[];
  readonly failed: readonly { readonly id: string; readonly error: DockerSandboxError }[];
  readonly dryRun: boolean;
};

export declare class DockerSandboxClient {
  constructor(options?: DockerSandboxClientOptions);
  /** Pulls an image into the engine; sandboxes only use images that are already local. */
  pullImage(options: PullDockerImageOptions): Promise<void>;
  createSandbox(options: CreateDockerSandboxOptions): Promise<DockerSandbox>;
  /** Restarts the stopped (or running) container of an existing sandbox id. */
  resumeSandbox(options: ResumeDockerSandboxOptions): Promise<DockerSandbox>;
  /** Every sandbox on the engine, whoever made it (one request, no exec). */
  listSandboxes(options?: ListDockerSandboxesOptions): Promise<DockerSandboxSummary[]>;
  /** Destroys the sandboxes that match; never a caller's (docker-volume) workspace volume. */
  pruneSandboxes(options?: PruneDockerSandboxesOptions): Promise<DockerSandboxPruneResult>;
}

/** Creates a sandbox, runs `callback` with it, always destroys it (also on throw and abort). */
export declare function withSandbox<T>(
  client: DockerSandboxClient,
  options: CreateDockerSandboxOptions,
  callback: (sandbox: DockerSandbox) => T | PromiseLike<T>
): Promise<T>;

/** The callback succeeded but destroying the sandbox failed (`cause`: why). */
export declare class DockerSandboxCleanupError extends Error {
  readonly sandbox: DockerSandbox;
  readonly cleanupError: unknown;
  /** Destroys the sandbox again. */
  retryCleanup(): Promise<void>;
}

/** The callback failed and destroying the sandbox failed too: both are kept. */
export declare class DockerSandboxRunError extends Error {
  readonly sandbox: DockerSandbox;
  readonly primaryError: unknown;
  readonly cleanupError: unknown;
  /** Destroys the sandbox again. */
  retryCleanup(): Promise<void>;
}

// ---- errors ------------------------------------------------------------------------------------

export type DockerSandboxErrorCode =
  | "docker_unavailable"
  | "docker_command_failed"
  | "image_not_found"
  | "runtime_not_found"
  | "volume_not_found"
  | "sandbox_not_found"
  | "invalid_state"
  | "invalid_path"
  | "timeout"
  | "file_too_large"
  | "tool_policy"
  | "port"
  | "process"
  /** A tree transfer's quota (maxFiles, maxTotalBytes, maxPathBytes, maxDepth). */
  | "quota_exceeded"
  /** A tree entry that cannot be transferred: a link, device, fifo or socket; bytes that
   * differ from byteLength; a path given twice. */
  | "invalid_entry";

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
  | "wait_for_port"
  | DockerSandboxTerminalToolName;

/**
 * The terminal tools (ours, not upstream's): a program in a pty that a model drives turn by
 * turn. `start_terminal` starts one (by default the sandbox's shell, which the command policy
 * must admit) and returns its first output; `write_terminal` types input and returns the output
 * that follows until it has been quiet for `yieldMs`; `read_terminal` reads on (or again, from
 * `since`); `stop_terminal` hangs up, then kills after `terminal.stopGracePeriodMs`. A tool set
 * reaches only the terminals it started.
 */
export type DockerSandboxTerminalToolName = "start_terminal" | "write_terminal" | "read_terminal" | "stop_terminal";

/**
 * The terminal tools' limits. Defaults: a read ends after 1 000 ms of quiet (`defaultYieldMs`),
 * never later than `maxYieldMs` (30 000, at most 300 000) after it began; at most
 * `maxOutputBytes` per answer (64 KiB, at most 1 MiB); `stopGracePeriodMs` 2 000. A `yieldMs` or
 * `maxBytes` over its limit is `tool_policy` ("Terminal yield exceeds policy (a > b).",
 * "Terminal output request exceeds policy (a > b).").
 */
export type DockerSandboxTerminalToolPolicy = {
  readonly defaultYieldMs?: number;
  readonly maxYieldMs?: number;
  readonly maxOutputBytes?: number;
  readonly stopGracePeriodMs?: number;
};

/**
 * Exact executable names: `allow` admits only these, `block` admits all but these.
 *
 * In allow mode a listed shell interpreter (by basename: sh, bash, zsh, ksh, dash, ash,
 * busybox, fish, csh, tcsh, so `/bin/sh` too) is still refused, "(shell interpreter not
 * allowed)", unless `allowShellInterpreters` is `true`: with `-c` it runs anything. Natural
 * command lines (a `command` with shell syntax or white space and no `args`) run as
 * `/bin/bash -c` or `sh -c`, whichever the sandbox has; an allow-mode policy needs
 * `allowShellInterpreters: true` and that shell's exact name ("/bin/bash" or "sh") among its
 * values for them, and a block-mode policy refuses them.
 */
export type DockerSandboxCommandPolicy =
  | {
      readonly mode: "allow";
      readonly values: readonly string[];
      /** Must be a boolean when present (else `tool_policy` from the factory). */
      readonly allowShellInterpreters?: boolean;
    }
  | { readonly mode: "block"; readonly values: readonly string[] };

/**
 * Applies to `exec_command` (commands, timeouts, cwd), `start_process` and `start_terminal`
 * (commands, cwd).
 */
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
  readonly terminal?: DockerSandboxTerminalToolPolicy;
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
