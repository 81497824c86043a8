// createDockerSandboxTools against a fake runtime (no Docker): factory validation, tool shapes,
// JSON Schemas, input and output validation, policies, abort signals, and a scripted agent.
// What upstream added after rc.10 (shell interpreters, natural command lines, absolute tool
// paths, the new check order) is in tools-upstream.test.js.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import vm from "node:vm";
import { z } from "zod";
import { DockerSandboxError } from "../../lib/errors.js";
import { createDockerSandboxTools } from "../../lib/tools.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
// These tests describe the local tool factory: @anvia/core is not a dependency of this
// repository (when an application installs it, its createTool is used instead).

const allTools = [
  "exec_command",
  "read_file",
  "write_file",
  "list_files",
  "list_ports",
  "start_process",
  "list_processes",
  "read_process_logs",
  "stop_process",
  "wait_for_port"
];
const runtimeMethods = [
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
];

const encode = (text) => new TextEncoder().encode(text);
const invalidUtf8 = new Uint8Array([0x68, 0x69, 0xff, 0xfe]);

function exitedResult(stdout = "", stderr = "", exitCode = 0) {
  return {
    status: "exited",
    exitCode,
    stdout: encode(stdout),
    stderr: encode(stderr),
    durationMs: 12,
    stdoutTruncated: false,
    stderrTruncated: false
  };
}

const processInfo = Object.freeze({
  id: "proc-1",
  command: "node",
  args: Object.freeze(["server.js"]),
  status: "running",
  startedAt: "2026-01-01T00:00:00.000Z"
});

// A runtime double: satisfies isDockerSandboxRuntime, records every call with its options, and
// answers with canned results (each overridable with a function of the options).
function fakeRuntime(overrides = {}) {
  const calls = [];
  const canned = {
    exec: () => exitedResult("hi\n"),
    execStream: () => undefined,
    readFile: () => new Uint8Array(),
    readTextFile: () => "",
    readTextFilePage: (options) => ({
      content: "line\n",
      startLine: options.startLine,
      endLine: options.startLine,
      nextStartLine: null,
      truncated: false,
      truncatedBy: null
    }),
    writeFile: () => undefined,
    writeTextFile: () => undefined,
    listFiles: () => [
      { path: "src", type: "directory" },
      { path: "src/index.js", type: "file", size: 14 }
    ],
    startProcess: () => processInfo,
    listProcesses: () => [processInfo],
    readProcessLogs: () => ({
      stdout: encode("listening\n"),
      stderr: new Uint8Array(),
      stdoutTruncated: true,
      stderrTruncated: false
    }),
    stopProcess: () => ({ ...processInfo, status: "stopped", exitCode: 143, endedAt: "2026-01-01T00:00:05.000Z" }),
    waitForPort: (options) => ({ containerPort: options.containerPort, host: "127.0.0.1", hostPort: 49153, protocol: "tcp" }),
    ...overrides
  };
  const runtime = {
    id: "sbx-1",
    provider: "docker",
    workdir: "/workspace",
    publishedPorts: Object.freeze([
      Object.freeze({ containerPort: 3000, host: "127.0.0.1", hostPort: 49153, protocol: "tcp" })
    ])
  };
  for (const name of runtimeMethods) {
    runtime[name] = async function (options) {
      calls.push({ method: name, options, self: this });
      return canned[name](options);
    };
  }
  return { runtime, calls };
}

function toolsFor(names, policy = {}, overrides = {}) {
  const { runtime, calls } = fakeRuntime(overrides);
  const tools = createDockerSandboxTools({ sandbox: runtime, tools: names, ...policy });
  return { runtime, calls, tools, tool: tools[0] };
}

function isToolPolicy(message) {
  return (error) => {
    assert.ok(error instanceof DockerSandboxError, `expected DockerSandboxError, got ${error}`);
    assert.equal(error.name, "DockerSandboxError");
    assert.equal(error.code, "tool_policy");
    assert.equal(error.message, message);
    return true;
  };
}

function isTypeError(message) {
  return (error) => {
    assert.ok(error instanceof TypeError, `expected TypeError, got ${error}`);
    assert.ok(!(error instanceof DockerSandboxError));
    assert.equal(error.message, message);
    return true;
  };
}

function isZodError(pathExpected) {
  return (error) => {
    assert.ok(error instanceof z.ZodError, `expected ZodError, got ${error}`);
    if (pathExpected !== undefined) assert.deepEqual(error.issues[0].path, pathExpected);
    return true;
  };
}

function create(options) {
  return () => createDockerSandboxTools(options);
}

describe("factory validation", () => {
  const { runtime } = fakeRuntime();

  test("options must be an object", () => {
    for (const options of [undefined, null, [], "exec_command", 1]) {
      assert.throws(create(options), isTypeError("options must be an object."));
    }
  });

  test("sandbox must look like a DockerSandboxRuntime", () => {
    const broken = [
      undefined,
      null,
      {},
      { ...runtime, id: 1 },
      { ...runtime, provider: "podman" },
      { ...runtime, workdir: undefined },
      { ...runtime, publishedPorts: {} },
      ...runtimeMethods.map((name) => ({ ...runtime, [name]: undefined }))
    ];
    for (const sandbox of broken) {
      assert.throws(
        create({ sandbox, tools: ["exec_command"] }),
        isTypeError("sandbox must be a DockerSandboxRuntime.")
      );
    }
    // Checked before the tool list.
    assert.throws(create({ sandbox: {}, tools: [] }), isTypeError("sandbox must be a DockerSandboxRuntime."));
  });

  test("tools must be a non-empty array of known, distinct names", () => {
    for (const tools of [undefined, [], "exec_command", { 0: "exec_command", length: 1 }]) {
      assert.throws(create({ sandbox: runtime, tools }), isTypeError("tools must be a non-empty array."));
    }
    for (const tools of [["nope"], ["exec_command", 1], ["exec_command", null], ["EXEC_COMMAND"]]) {
      assert.throws(
        create({ sandbox: runtime, tools }),
        isTypeError("tools contains an unsupported sandbox tool name.")
      );
    }
    assert.throws(
      create({ sandbox: runtime, tools: ["read_file", "list_files", "read_file"] }),
      isTypeError("tools contains a duplicate: read_file")
    );
  });

  test("policies must be objects (TypeError)", () => {
    for (const name of ["exec", "readFile", "writeFile", "process"]) {
      for (const value of [null, [], 5, "x"]) {
        assert.throws(
          create({ sandbox: runtime, tools: ["exec_command"], [name]: value }),
          isTypeError(`${name} must be an object.`)
        );
      }
    }
  });

  test("exec.commands (tool_policy)", () => {
    const cases = [
      [null, "exec.commands must be an object."],
      [["ls"], "exec.commands must be an object."],
      [{ mode: "deny", values: [] }, "exec.commands must use mode allow or block."],
      [{ values: [] }, "exec.commands must use mode allow or block."],
      [{ mode: "allow" }, "exec.commands.values must be an array."],
      [{ mode: "block", values: "rm" }, "exec.commands.values must be an array."],
      [{ mode: "allow", values: ["ls", ""] }, "exec.commands.values must contain non-empty strings."],
      [{ mode: "allow", values: [1] }, "exec.commands.values must contain non-empty strings."],
      [{ mode: "block", values: ["rm", "ls", "rm"] }, "exec.commands.values contains a duplicate: rm"]
    ];
    for (const [commands, message] of cases) {
      assert.throws(
        create({ sandbox: runtime, tools: ["exec_command"], exec: { commands } }),
        isToolPolicy(message)
      );
    }
    // An empty allow list is valid (it admits nothing).
    createDockerSandboxTools({ sandbox: runtime, tools: ["exec_command"], exec: { commands: { mode: "allow", values: [] } } });
  });

  test("numeric policies (tool_policy)", () => {
    const cases = [
      [{ exec: { defaultTimeoutMs: 0 } }, "exec.defaultTimeoutMs must be a positive safe integer."],
      [{ exec: { defaultTimeoutMs: 1.5 } }, "exec.defaultTimeoutMs must be a positive safe integer."],
      [{ exec: { defaultTimeoutMs: "100" } }, "exec.defaultTimeoutMs must be a positive safe integer."],
      [{ exec: { maxTimeoutMs: -1 } }, "exec.maxTimeoutMs must be a positive safe integer."],
      [{ exec: { maxTimeoutMs: Number.NaN } }, "exec.maxTimeoutMs must be a positive safe integer."],
      [{ exec: { defaultTimeoutMs: 300_001 } }, "Sandbox tool command timeouts cannot exceed 300000."],
      [{ exec: { maxTimeoutMs: 300_001 } }, "Sandbox tool command timeouts cannot exceed 300000."],
      [{ exec: { defaultTimeoutMs: 2000, maxTimeoutMs: 1000 } }, "exec.defaultTimeoutMs cannot exceed exec.maxTimeoutMs."],
      [{ readFile: { maxBytes: 0 } }, "readFile.maxBytes must be a positive safe integer."],
      [{ readFile: { maxBytes: 1_048_577 } }, "readFile.maxBytes cannot exceed 1048576."],
      [{ readFile: { defaultLineCount: 0 } }, "readFile.defaultLineCount must be a positive safe integer."],
      [{ readFile: { maxLineCount: 2.5 } }, "readFile.maxLineCount must be a positive safe integer."],
      [{ writeFile: { maxBytes: -1 } }, "writeFile.maxBytes must be a non-negative safe integer."],
      [{ writeFile: { maxBytes: 1_048_577 } }, "writeFile.maxBytes cannot exceed 1048576."],
      [{ process: { maxLogBytes: -1 } }, "process.maxLogBytes must be a non-negative safe integer."],
      [{ process: { maxLogBytes: 1_048_577 } }, "process.maxLogBytes cannot exceed 1048576."],
      [{ process: { defaultWaitTimeoutMs: 0 } }, "process.defaultWaitTimeoutMs must be a positive safe integer."],
      [{ process: { maxWaitTimeoutMs: 0 } }, "process.maxWaitTimeoutMs must be a positive safe integer."],
      [{ process: { stopGracePeriodMs: -1 } }, "process.stopGracePeriodMs must be a non-negative safe integer."],
      [{ process: { stopGracePeriodMs: 0.5 } }, "process.stopGracePeriodMs must be a non-negative safe integer."],
      [{ process: { maxWaitTimeoutMs: 300_001 } }, "process.maxWaitTimeoutMs cannot exceed 300000."],
      [{ process: { defaultWaitTimeoutMs: 300_001 } }, "process.defaultWaitTimeoutMs cannot exceed process.maxWaitTimeoutMs."],
      [
        { process: { defaultWaitTimeoutMs: 2000, maxWaitTimeoutMs: 1000 } },
        "process.defaultWaitTimeoutMs cannot exceed process.maxWaitTimeoutMs."
      ]
    ];
    for (const [policy, message] of cases) {
      // Policies are validated whatever tools are selected.
      assert.throws(create({ sandbox: runtime, tools: ["list_ports"], ...policy }), isToolPolicy(message));
    }
  });

  test("boundary values are accepted", () => {
    createDockerSandboxTools({
      sandbox: runtime,
      tools: allTools,
      exec: { defaultTimeoutMs: 300_000, maxTimeoutMs: 300_000 },
      readFile: { maxBytes: 1_048_576, defaultLineCount: 10_000, maxLineCount: 10_000 },
      writeFile: { maxBytes: 0 },
      process: { maxLogBytes: 0, defaultWaitTimeoutMs: 300_000, maxWaitTimeoutMs: 300_000, stopGracePeriodMs: 0 }
    });
  });

  test("read_file line limits are checked when read_file is built", () => {
    // defaultLineCount 3000 against the default maxLineCount 2000.
    assert.throws(
      create({ sandbox: runtime, tools: ["list_files", "read_file"], readFile: { defaultLineCount: 3000 } }),
      isToolPolicy("readFile.defaultLineCount cannot exceed readFile.maxLineCount.")
    );
    assert.throws(
      create({ sandbox: runtime, tools: ["read_file"], readFile: { maxLineCount: 10_001 } }),
      isToolPolicy("readFile.maxLineCount cannot exceed 10000.")
    );
    // As in the seed, without read_file in the selection the line policy is not resolved.
    createDockerSandboxTools({ sandbox: runtime, tools: ["list_files"], readFile: { defaultLineCount: 3000 } });
    createDockerSandboxTools({ sandbox: runtime, tools: ["list_files"], readFile: { maxLineCount: 10_001 } });
  });

  test("shape errors come before policy errors", () => {
    assert.throws(
      create({ sandbox: runtime, tools: ["exec_command"], exec: { commands: null }, process: [] }),
      isTypeError("process must be an object.")
    );
  });
});

describe("tool set", () => {
  test("tools come back in the requested order, in a frozen array", () => {
    const { runtime } = fakeRuntime();
    const reversed = [...allTools].reverse();
    const tools = createDockerSandboxTools({ sandbox: runtime, tools: reversed });
    assert.deepEqual(
      tools.map((tool) => tool.name),
      reversed
    );
    assert.ok(Object.isFrozen(tools));
    assert.throws(() => tools.push(tools[0]), TypeError);
    const subset = createDockerSandboxTools({ sandbox: runtime, tools: ["wait_for_port", "exec_command"] });
    assert.deepEqual(
      subset.map((tool) => tool.name),
      ["wait_for_port", "exec_command"]
    );
  });

  test("names and descriptions", () => {
    const { tools } = toolsFor(allTools);
    const expected = {
      exec_command:
        "Run a command inside the sandbox. Natural command lines use /bin/bash -c when available, otherwise sh -c; supply args for exact argv execution.",
      read_file: "Read a bounded page of a UTF-8 text file from the sandbox workspace.",
      write_file: "Write a complete UTF-8 text file inside the sandbox workspace.",
      list_files: "List direct children of a directory in the sandbox workspace.",
      list_ports: "List explicitly published localhost TCP ports for the sandbox.",
      start_process:
        "Start a managed long-running process inside the sandbox. Natural command lines use /bin/bash -c when available, otherwise sh -c; supply args for exact argv execution.",
      list_processes: "List processes managed by this live sandbox handle.",
      read_process_logs: "Read bounded UTF-8 output from a managed sandbox process.",
      stop_process: "Stop a process managed by this live sandbox handle.",
      wait_for_port: "Wait until an explicitly published sandbox TCP port is listening."
    };
    for (const tool of tools) {
      const definition = tool.definition("any prompt");
      assert.equal(definition.name, tool.name);
      assert.equal(definition.description, expected[tool.name]);
      assert.equal(tool.description, expected[tool.name]);
    }
  });

  test("the factory snapshots its options", async () => {
    const { runtime, calls } = fakeRuntime();
    const names = ["exec_command"];
    const values = ["ls"];
    const exec = { commands: { mode: "allow", values }, defaultTimeoutMs: 1000 };
    const [tool] = createDockerSandboxTools({ sandbox: runtime, tools: names, exec });
    values.push("rm");
    exec.defaultTimeoutMs = 9000;
    exec.commands.mode = "block";
    names.push("read_file");
    await assert.rejects(tool.call({ command: "rm" }), isToolPolicy("Command is rejected by sandbox tool policy: rm"));
    await tool.call({ command: "ls" });
    assert.equal(calls[0].options.timeoutMs, 1000);
  });
});

// JSON Schema of each tool's input, as handed to a provider in `definition().parameters`: the
// schemas of upstream's newest tools.ts, descriptions included (the model reads them).
const commandSchema = {
  type: "string",
  minLength: 1,
  description:
    "Command to run. Natural command lines use /bin/bash -c when available, otherwise sh -c. Use args for exact argv execution."
};
const argsSchema = {
  type: "array",
  items: { type: "string" },
  description: "Optional exact arguments. Omit when command contains the complete command line."
};
const cwdSchema = {
  type: "string",
  description: "Workspace-relative directory or an absolute directory inside the sandbox workdir."
};
const filePathSchema = {
  type: "string",
  minLength: 1,
  description: "Workspace-relative path or an absolute path inside the sandbox workdir."
};
const positiveTimeout = { type: "integer", exclusiveMinimum: 0, maximum: 300000 };
const stringRecord = { type: "object", propertyNames: { type: "string" }, additionalProperties: { type: "string" } };
const expectedParameters = {
  exec_command: {
    type: "object",
    properties: {
      command: commandSchema,
      args: argsSchema,
      cwd: cwdSchema,
      env: stringRecord,
      timeoutMs: positiveTimeout,
      input: { type: "string" }
    },
    required: ["command"],
    additionalProperties: false
  },
  read_file: {
    type: "object",
    properties: {
      path: filePathSchema,
      startLine: { type: "integer", exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      lineCount: { type: "integer", exclusiveMinimum: 0, maximum: 10000 }
    },
    required: ["path"],
    additionalProperties: false
  },
  write_file: {
    type: "object",
    properties: { path: filePathSchema, content: { type: "string" } },
    required: ["path", "content"],
    additionalProperties: false
  },
  list_files: { type: "object", properties: { path: cwdSchema }, additionalProperties: false },
  list_ports: { type: "object", properties: {}, additionalProperties: false },
  start_process: {
    type: "object",
    properties: {
      command: commandSchema,
      args: argsSchema,
      cwd: cwdSchema,
      env: stringRecord
    },
    required: ["command"],
    additionalProperties: false
  },
  list_processes: { type: "object", properties: {}, additionalProperties: false },
  read_process_logs: {
    type: "object",
    properties: {
      processId: { type: "string", minLength: 1 },
      tailBytes: { type: "integer", minimum: 0, maximum: 1048576 }
    },
    required: ["processId"],
    additionalProperties: false
  },
  stop_process: {
    type: "object",
    properties: { processId: { type: "string", minLength: 1 } },
    required: ["processId"],
    additionalProperties: false
  },
  wait_for_port: {
    type: "object",
    properties: {
      containerPort: { type: "integer", minimum: 1, maximum: 65535 },
      timeoutMs: positiveTimeout
    },
    required: ["containerPort"],
    additionalProperties: false
  }
};

describe("definition()", () => {
  test("parameters are the JSON Schema of the input, without $schema", () => {
    const { tools } = toolsFor(allTools);
    for (const tool of tools) {
      const definition = tool.definition("");
      assert.deepEqual(Object.keys(definition).sort(), ["description", "name", "parameters"]);
      assert.equal(definition.parameters.$schema, undefined);
      assert.deepEqual(definition.parameters, expectedParameters[tool.name], tool.name);
      // Plain JSON: survives serialization unchanged.
      assert.deepEqual(JSON.parse(JSON.stringify(definition)), definition);
    }
  });

  test("the schema handed out is a copy", () => {
    const { tool } = toolsFor(["exec_command"]);
    const first = tool.definition("");
    first.parameters.properties.command.minLength = 99;
    first.parameters.strict = true;
    assert.deepEqual(tool.definition("").parameters, expectedParameters.exec_command);
  });

  test("the local tool exposes its zod schemas and parseInput", () => {
    const { tool } = toolsFor(["exec_command"]);
    assert.ok(tool.inputSchema instanceof z.ZodType);
    assert.ok(tool.outputSchema instanceof z.ZodType);
    assert.deepEqual(tool.parseInput({ command: "ls", extra: 1 }), { command: "ls" });
    assert.throws(() => tool.parseInput({}), isZodError(["command"]));
    assert.equal(tool.parseApprovalArgs, tool.parseInput);
  });
});

describe("input validation", () => {
  const invalid = [
    ["exec_command", {}, ["command"]],
    ["exec_command", { command: "" }, ["command"]],
    ["exec_command", { command: "ls", args: [1] }, ["args", 0]],
    ["exec_command", { command: "ls", args: "-la" }, ["args"]],
    ["exec_command", { command: "ls", env: { A: 1 } }, ["env", "A"]],
    ["exec_command", { command: "ls", timeoutMs: 0 }, ["timeoutMs"]],
    ["exec_command", { command: "ls", timeoutMs: 1.5 }, ["timeoutMs"]],
    ["exec_command", { command: "ls", timeoutMs: 300_001 }, ["timeoutMs"]],
    ["exec_command", { command: "ls", input: new Uint8Array() }, ["input"]],
    ["read_file", { path: "" }, ["path"]],
    ["read_file", { path: "a", startLine: 0 }, ["startLine"]],
    ["read_file", { path: "a", lineCount: 10_001 }, ["lineCount"]],
    ["write_file", { path: "a" }, ["content"]],
    ["list_files", { path: 3 }, ["path"]],
    ["start_process", { command: "", args: [] }, ["command"]],
    ["read_process_logs", { processId: "p", tailBytes: -1 }, ["tailBytes"]],
    ["read_process_logs", { processId: "p", tailBytes: 1_048_577 }, ["tailBytes"]],
    ["stop_process", { processId: "" }, ["processId"]],
    ["wait_for_port", { containerPort: 0 }, ["containerPort"]],
    ["wait_for_port", { containerPort: 65_536 }, ["containerPort"]],
    ["wait_for_port", { containerPort: 3000, timeoutMs: 300_001 }, ["timeoutMs"]]
  ];
  for (const [name, args, issuePath] of invalid) {
    test(`${name} rejects ${JSON.stringify(args, (_, v) => (v instanceof Uint8Array ? "<bytes>" : v))}`, async () => {
      const { tool, calls } = toolsFor([name]);
      await assert.rejects(tool.call(args), isZodError(issuePath));
      assert.equal(calls.length, 0, "the runtime must not be called");
    });
  }

  test("arguments that are not an object are rejected", async () => {
    const { tools, calls } = toolsFor(["list_ports", "list_processes", "exec_command"]);
    for (const tool of tools) {
      for (const args of [undefined, null, "{}", 1, []]) {
        await assert.rejects(tool.call(args), isZodError());
      }
    }
    assert.equal(calls.length, 0);
  });

  test("unknown keys are dropped, not passed to the runtime", async () => {
    const { tool, calls } = toolsFor(["exec_command"]);
    await tool.call({ command: "ls", privileged: true, user: "root" });
    assert.deepEqual(calls[0].options, { command: "ls" });
  });
});

describe("runtime calls and output", () => {
  test("exec_command passes only what was given and serializes an exited result", async () => {
    const { tool, calls, runtime } = toolsFor(["exec_command"], {}, { exec: () => exitedResult("out ✓\n", "warn\n", 3) });
    const output = await tool.call({
      command: "node",
      args: ["-e", "1"],
      cwd: "src",
      env: { A: "b" },
      timeoutMs: 5000,
      input: "stdin"
    });
    assert.equal(calls[0].method, "exec");
    assert.equal(calls[0].self, runtime, "called as a method of the runtime");
    assert.deepEqual(calls[0].options, {
      command: "node",
      args: ["-e", "1"],
      cwd: "src",
      env: { A: "b" },
      timeoutMs: 5000,
      input: "stdin"
    });
    assert.deepEqual(output, {
      status: "exited",
      exitCode: 3,
      stdout: "out ✓\n",
      stderr: "warn\n",
      durationMs: 12,
      stdoutTruncated: false,
      stderrTruncated: false
    });
    await tool.call({ command: "true" });
    assert.deepEqual(calls[1].options, { command: "true" });
  });

  test("a timed-out exec has no exitCode", async () => {
    const timedOut = { ...exitedResult("partial"), status: "timed_out", exitCode: 137, stdoutTruncated: true };
    const { tool } = toolsFor(["exec_command"], {}, { exec: () => timedOut });
    const output = await tool.call({ command: "sleep", args: ["100"] });
    assert.deepEqual(output, {
      status: "timed_out",
      stdout: "partial",
      stderr: "",
      durationMs: 12,
      stdoutTruncated: true,
      stderrTruncated: false
    });
    assert.ok(!("exitCode" in output));
  });

  test("invalid UTF-8 output is a TypeError, never replacement characters", async () => {
    const stdoutBad = toolsFor(["exec_command"], {}, { exec: () => ({ ...exitedResult(), stdout: invalidUtf8 }) });
    await assert.rejects(stdoutBad.tool.call({ command: "cat" }), TypeError);
    const stderrBad = toolsFor(["exec_command"], {}, { exec: () => ({ ...exitedResult(), stderr: invalidUtf8 }) });
    await assert.rejects(stderrBad.tool.call({ command: "cat" }), TypeError);
    const logsBad = toolsFor(["read_process_logs"], {}, {
      readProcessLogs: () => ({ stdout: new Uint8Array(), stderr: invalidUtf8, stdoutTruncated: false, stderrTruncated: false })
    });
    await assert.rejects(logsBad.tool.call({ processId: "p" }), TypeError);
  });

  test("read_file returns the runtime's page", async () => {
    const page = { content: "a\nb\n", startLine: 3, endLine: 4, nextStartLine: 5, truncated: true, truncatedBy: "lines" };
    const { tool, calls } = toolsFor(["read_file"], {}, { readTextFilePage: () => page });
    assert.deepEqual(await tool.call({ path: "notes.txt", startLine: 3, lineCount: 2 }), page);
    assert.equal(calls[0].method, "readTextFilePage");
    assert.deepEqual(calls[0].options, { path: "notes.txt", startLine: 3, lineCount: 2, maxBytes: 65536 });
  });

  test("output that breaks the output schema is rejected", async () => {
    const badPage = toolsFor(["read_file"], {}, {
      readTextFilePage: () => ({ content: "", startLine: 0, endLine: null, nextStartLine: null, truncated: false, truncatedBy: null })
    });
    await assert.rejects(badPage.tool.call({ path: "a" }), isZodError(["startLine"]));
    const badPort = toolsFor(["wait_for_port"], {}, {
      waitForPort: () => ({ containerPort: 3000, host: "0.0.0.0", hostPort: 1, protocol: "tcp" })
    });
    await assert.rejects(badPort.tool.call({ containerPort: 3000 }), isZodError(["port", "host"]));
  });

  test("write_file writes text and reports UTF-8 bytes", async () => {
    const { tool, calls } = toolsFor(["write_file"]);
    assert.deepEqual(await tool.call({ path: "src/é.txt", content: "héllo €" }), { path: "src/é.txt", bytesWritten: 10 });
    assert.equal(calls[0].method, "writeTextFile");
    assert.deepEqual(calls[0].options, { path: "src/é.txt", text: "héllo €" });
  });

  test("list_files defaults the path to the workspace root", async () => {
    const { tool, calls } = toolsFor(["list_files"]);
    const output = await tool.call({});
    assert.deepEqual(calls[0].options, {});
    assert.deepEqual(output, {
      path: ".",
      entries: [
        { path: "src", type: "directory" },
        { path: "src/index.js", type: "file", size: 14 }
      ]
    });
    await tool.call({ path: "src" });
    assert.deepEqual(calls[1].options, { path: "src" });
    assert.equal((await tool.call({ path: "src" })).path, "src");
  });

  test("list_ports copies the published ports without a runtime call", async () => {
    const { tool, calls } = toolsFor(["list_ports"]);
    assert.deepEqual(await tool.call({}), {
      ports: [{ containerPort: 3000, host: "127.0.0.1", hostPort: 49153, protocol: "tcp" }]
    });
    assert.equal(calls.length, 0);
  });

  test("process tools serialize process info", async () => {
    const { tools, calls } = toolsFor(["start_process", "list_processes", "stop_process", "read_process_logs"]);
    const [start, list, stop, logs] = tools;
    const started = await start.call({ command: "node", args: ["server.js"], cwd: "app", env: { PORT: "3000" } });
    assert.deepEqual(calls[0].options, { command: "node", args: ["server.js"], cwd: "app", env: { PORT: "3000" } });
    assert.deepEqual(started, {
      id: "proc-1",
      command: "node",
      args: ["server.js"],
      status: "running",
      startedAt: "2026-01-01T00:00:00.000Z"
    });
    assert.ok(!Object.isFrozen(started.args), "args is a copy");
    assert.deepEqual(await list.call({}), { processes: [started] });
    assert.deepEqual(calls[1].options, {});
    assert.deepEqual(await stop.call({ processId: "proc-1" }), {
      ...started,
      status: "stopped",
      exitCode: 143,
      endedAt: "2026-01-01T00:00:05.000Z"
    });
    assert.deepEqual(await logs.call({ processId: "proc-1" }), {
      processId: "proc-1",
      stdout: "listening\n",
      stderr: "",
      stdoutTruncated: true,
      stderrTruncated: false
    });
  });

  test("runtime errors pass through unchanged", async () => {
    const failure = new DockerSandboxError("Unknown sandbox process: nope", "process");
    const { tool } = toolsFor(["stop_process"], {}, {
      stopProcess: () => {
        throw failure;
      }
    });
    await assert.rejects(tool.call({ processId: "nope" }), (error) => error === failure);
  });
});

describe("policies", () => {
  test("command allow list (exec_command and start_process)", async () => {
    const policy = { exec: { commands: { mode: "allow", values: ["node", "npm"] } } };
    const { tools, calls } = toolsFor(["exec_command", "start_process"], policy);
    for (const tool of tools) {
      await assert.rejects(tool.call({ command: "rm", args: ["-rf", "/"] }), isToolPolicy("Command is rejected by sandbox tool policy: rm"));
      // Exact names: a path to an allowed program is a different command.
      await assert.rejects(tool.call({ command: "/usr/bin/node" }), isToolPolicy("Command is rejected by sandbox tool policy: /usr/bin/node"));
      await tool.call({ command: "node" });
    }
    assert.deepEqual(
      calls.map((call) => call.method),
      ["exec", "startProcess"]
    );
  });

  test("command block list", async () => {
    const { tools, calls } = toolsFor(["exec_command", "start_process"], { exec: { commands: { mode: "block", values: ["rm", "curl"] } } });
    for (const tool of tools) {
      await assert.rejects(tool.call({ command: "curl" }), isToolPolicy("Command is rejected by sandbox tool policy: curl"));
      await tool.call({ command: "ls" });
    }
    assert.equal(calls.length, 2);
  });

  test("exec timeouts: default, override, maximum", async () => {
    const none = toolsFor(["exec_command"]);
    await none.tool.call({ command: "ls" });
    assert.ok(!("timeoutMs" in none.calls[0].options), "no policy: the runtime's own default applies");

    const bounded = toolsFor(["exec_command"], { exec: { defaultTimeoutMs: 2000, maxTimeoutMs: 10_000 } });
    await bounded.tool.call({ command: "ls" });
    assert.equal(bounded.calls[0].options.timeoutMs, 2000);
    await bounded.tool.call({ command: "ls", timeoutMs: 10_000 });
    assert.equal(bounded.calls[1].options.timeoutMs, 10_000);
    await assert.rejects(
      bounded.tool.call({ command: "ls", timeoutMs: 20_000 }),
      isToolPolicy("Command timeout exceeds policy (20000 > 10000).")
    );
    assert.equal(bounded.calls.length, 2);

    const maxOnly = toolsFor(["exec_command"], { exec: { maxTimeoutMs: 1000 } });
    await maxOnly.tool.call({ command: "ls" });
    assert.ok(!("timeoutMs" in maxOnly.calls[0].options));
    await assert.rejects(maxOnly.tool.call({ command: "ls", timeoutMs: 1001 }), isToolPolicy("Command timeout exceeds policy (1001 > 1000)."));
  });

  test("read_file line counts and bytes", async () => {
    const defaults = toolsFor(["read_file"]);
    await defaults.tool.call({ path: "a.txt" });
    assert.deepEqual(defaults.calls[0].options, { path: "a.txt", startLine: 1, lineCount: 500, maxBytes: 65536 });
    await defaults.tool.call({ path: "a.txt", lineCount: 2000 });
    assert.equal(defaults.calls[1].options.lineCount, 2000);
    await assert.rejects(
      defaults.tool.call({ path: "a.txt", lineCount: 2001 }),
      isToolPolicy("File read line count exceeds policy (2001 > 2000).")
    );

    const custom = toolsFor(["read_file"], { readFile: { maxBytes: 1024, defaultLineCount: 50, maxLineCount: 100 } });
    await custom.tool.call({ path: "a.txt", startLine: 7 });
    assert.deepEqual(custom.calls[0].options, { path: "a.txt", startLine: 7, lineCount: 50, maxBytes: 1024 });
    await assert.rejects(custom.tool.call({ path: "a.txt", lineCount: 101 }), isToolPolicy("File read line count exceeds policy (101 > 100)."));
    assert.equal(custom.calls.length, 1);

    const wide = toolsFor(["read_file"], { readFile: { maxLineCount: 10_000 } });
    await wide.tool.call({ path: "a.txt", lineCount: 10_000 });
    assert.equal(wide.calls[0].options.lineCount, 10_000);
  });

  test("write_file maxBytes counts UTF-8 bytes", async () => {
    const { tool, calls } = toolsFor(["write_file"], { writeFile: { maxBytes: 6 } });
    assert.deepEqual(await tool.call({ path: "a", content: "ééé" }), { path: "a", bytesWritten: 6 });
    await assert.rejects(tool.call({ path: "a", content: "éééé" }), isToolPolicy("File content exceeds policy (8 > 6)."));
    await assert.rejects(tool.call({ path: "a", content: "1234567" }), isToolPolicy("File content exceeds policy (7 > 6)."));
    assert.equal(calls.length, 1);

    const empty = toolsFor(["write_file"], { writeFile: { maxBytes: 0 } });
    assert.deepEqual(await empty.tool.call({ path: "a", content: "" }), { path: "a", bytesWritten: 0 });
    await assert.rejects(empty.tool.call({ path: "a", content: "x" }), isToolPolicy("File content exceeds policy (1 > 0)."));

    const unbounded = toolsFor(["write_file"]);
    const big = "x".repeat(2 * 1024 * 1024);
    assert.equal((await unbounded.tool.call({ path: "a", content: big })).bytesWritten, big.length);
  });

  test("read_process_logs tail bytes", async () => {
    const defaults = toolsFor(["read_process_logs"]);
    await defaults.tool.call({ processId: "p" });
    assert.deepEqual(defaults.calls[0].options, { processId: "p", tailBytes: 65536 });
    await defaults.tool.call({ processId: "p", tailBytes: 0 });
    assert.equal(defaults.calls[1].options.tailBytes, 0);
    await assert.rejects(
      defaults.tool.call({ processId: "p", tailBytes: 70_000 }),
      isToolPolicy("Process log request exceeds policy (70000 > 65536).")
    );

    const small = toolsFor(["read_process_logs"], { process: { maxLogBytes: 100 } });
    await small.tool.call({ processId: "p" });
    assert.equal(small.calls[0].options.tailBytes, 100);
    await assert.rejects(small.tool.call({ processId: "p", tailBytes: 101 }), isToolPolicy("Process log request exceeds policy (101 > 100)."));

    const none = toolsFor(["read_process_logs"], { process: { maxLogBytes: 0 } });
    await none.tool.call({ processId: "p" });
    assert.equal(none.calls[0].options.tailBytes, 0);
  });

  test("stop_process grace period", async () => {
    const defaults = toolsFor(["stop_process"]);
    await defaults.tool.call({ processId: "p" });
    assert.deepEqual(defaults.calls[0].options, { processId: "p", gracePeriodMs: 5000 });
    const immediate = toolsFor(["stop_process"], { process: { stopGracePeriodMs: 0 } });
    await immediate.tool.call({ processId: "p" });
    assert.equal(immediate.calls[0].options.gracePeriodMs, 0);
  });

  test("wait_for_port timeouts", async () => {
    const defaults = toolsFor(["wait_for_port"]);
    assert.deepEqual(await defaults.tool.call({ containerPort: 3000 }), {
      port: { containerPort: 3000, host: "127.0.0.1", hostPort: 49153, protocol: "tcp" }
    });
    assert.deepEqual(defaults.calls[0].options, { containerPort: 3000, timeoutMs: 30_000 });
    await defaults.tool.call({ containerPort: 3000, timeoutMs: 300_000 });
    assert.equal(defaults.calls[1].options.timeoutMs, 300_000);

    const custom = toolsFor(["wait_for_port"], { process: { defaultWaitTimeoutMs: 500, maxWaitTimeoutMs: 1000 } });
    await custom.tool.call({ containerPort: 8080 });
    assert.equal(custom.calls[0].options.timeoutMs, 500);
    await assert.rejects(
      custom.tool.call({ containerPort: 8080, timeoutMs: 2000 }),
      isToolPolicy("Port wait timeout exceeds policy (2000 > 1000).")
    );

    // As in the seed: a maximum below the built-in 30 s default, with no default of its own,
    // makes every call that omits timeoutMs exceed the policy.
    const maxOnly = toolsFor(["wait_for_port"], { process: { maxWaitTimeoutMs: 1000 } });
    await assert.rejects(maxOnly.tool.call({ containerPort: 8080 }), isToolPolicy("Port wait timeout exceeds policy (30000 > 1000)."));
    await maxOnly.tool.call({ containerPort: 8080, timeoutMs: 1000 });
    assert.equal(maxOnly.calls.length, 1);
  });
});

describe("abort signals", () => {
  const argsFor = {
    exec_command: { command: "ls" },
    read_file: { path: "a.txt" },
    write_file: { path: "a.txt", content: "x" },
    list_files: {},
    list_ports: {},
    start_process: { command: "node" },
    list_processes: {},
    read_process_logs: { processId: "p" },
    stop_process: { processId: "p" },
    wait_for_port: { containerPort: 3000 }
  };

  test("context.abortSignal reaches every runtime call", async () => {
    const { tools, calls } = toolsFor(allTools);
    const controller = new AbortController();
    for (const tool of tools) await tool.call(argsFor[tool.name], { abortSignal: controller.signal });
    // list_ports reads the handle's published ports: no runtime call to pass a signal to.
    assert.equal(calls.length, allTools.length - 1);
    for (const call of calls) assert.equal(call.options.abortSignal, controller.signal, call.method);
  });

  test("no signal, no abortSignal key", async () => {
    const { tools, calls } = toolsFor(allTools);
    for (const tool of tools) await tool.call(argsFor[tool.name]);
    for (const call of calls) assert.ok(!("abortSignal" in call.options), call.method);
  });

  test("an already aborted signal rejects at once with its reason", async () => {
    const { tools, calls } = toolsFor(allTools);
    const reason = new Error("user cancelled");
    const signal = AbortSignal.abort(reason);
    for (const tool of tools) {
      await assert.rejects(tool.call(argsFor[tool.name], { abortSignal: signal }), (error) => error === reason);
    }
    await assert.rejects(tools[0].call(argsFor.exec_command, { abortSignal: AbortSignal.abort() }), { name: "AbortError" });
    assert.equal(calls.length, 0, "nothing ran");
  });

  test("aborting during a call rejects it through the runtime", async () => {
    let started;
    const running = new Promise((resolve) => {
      started = resolve;
    });
    const { tool, calls } = toolsFor(["exec_command"], {}, {
      exec: (options) =>
        new Promise((_, reject) => {
          started();
          options.abortSignal.addEventListener("abort", () => reject(options.abortSignal.reason), { once: true });
        })
    });
    const controller = new AbortController();
    const call = tool.call({ command: "sleep", args: ["60"] }, { abortSignal: controller.signal });
    await running;
    const reason = new DockerSandboxError("Sandbox is stopping.", "invalid_state");
    controller.abort(reason);
    await assert.rejects(call, (error) => error === reason);
    assert.equal(calls.length, 1);
  });
});

// An in-memory sandbox that "runs" JavaScript with node:vm, so a scripted agent can write a
// program, run it and read it back through the tools.
function memoryRuntime() {
  const files = new Map();
  const { runtime, calls } = fakeRuntime({
    writeTextFile: (options) => {
      files.set(options.path, options.text);
    },
    readTextFilePage: (options) => {
      const text = files.get(options.path);
      if (text === undefined) throw new DockerSandboxError(`No such file: ${options.path}`, "invalid_path");
      const lines = text.split(/(?<=\n)/);
      const selected = lines.slice(options.startLine - 1, options.startLine - 1 + options.lineCount);
      const endLine = selected.length === 0 ? null : options.startLine + selected.length - 1;
      const more = endLine !== null && endLine < lines.length;
      return {
        content: selected.join(""),
        startLine: options.startLine,
        endLine,
        nextStartLine: more ? endLine + 1 : null,
        truncated: more,
        truncatedBy: more ? "lines" : null
      };
    },
    listFiles: () => [...files.keys()].map((file) => ({ path: file, type: "file", size: encode(files.get(file)).byteLength })),
    exec: (options) => {
      const source = files.get(options.args?.[0]);
      if (options.command !== "node" || source === undefined) {
        return exitedResult("", `${options.command}: not found\n`, 127);
      }
      let stdout = "";
      const context = vm.createContext({
        console: { log: (...values) => (stdout += `${values.join(" ")}\n`) },
        argv: options.args.slice(1)
      });
      vm.runInContext(source, context, { timeout: options.timeoutMs ?? 1000 });
      return exitedResult(stdout);
    }
  });
  return { runtime, calls, files };
}

describe("a scripted agent", () => {
  test("writes, runs and reads back a program through definition() and call()", async () => {
    const { runtime, files } = memoryRuntime();
    const tools = createDockerSandboxTools({
      sandbox: runtime,
      tools: ["list_files", "write_file", "exec_command", "read_file"],
      exec: { commands: { mode: "allow", values: ["node"] }, defaultTimeoutMs: 1000 },
      writeFile: { maxBytes: 4096 }
    });
    // What an LLM would be shown.
    const catalog = new Map(tools.map((tool) => [tool.definition("Write a program that sums argv.").name, tool]));
    assert.deepEqual([...catalog.keys()], ["list_files", "write_file", "exec_command", "read_file"]);

    const program = "const sum = argv.map(Number).reduce((a, b) => a + b, 0);\nconsole.log('sum', sum);\n";
    const script = [
      { name: "list_files", arguments: "{}" },
      { name: "write_file", arguments: JSON.stringify({ path: "sum.js", content: program }) },
      { name: "exec_command", arguments: JSON.stringify({ command: "node", args: ["sum.js", "2", "3", "37"] }) },
      { name: "exec_command", arguments: JSON.stringify({ command: "sh", args: ["-c", "cat /etc/shadow"] }) },
      { name: "read_file", arguments: JSON.stringify({ path: "sum.js", lineCount: 1 }) },
      { name: "read_file", arguments: JSON.stringify({ path: "sum.js", startLine: 2 }) },
      { name: "write_file", arguments: JSON.stringify({ path: "big.txt", content: "x".repeat(5000) }) },
      { name: "exec_command", arguments: JSON.stringify({ command: "node", timeoutMs: "soon" }) }
    ];
    const controller = new AbortController();
    const transcript = [];
    for (const step of script) {
      const tool = catalog.get(step.name);
      try {
        const output = await tool.call(JSON.parse(step.arguments), { abortSignal: controller.signal });
        // Tool output goes back to the model as JSON.
        transcript.push({ tool: step.name, ok: JSON.parse(JSON.stringify(output)) });
      } catch (error) {
        const kind = error instanceof DockerSandboxError ? error.code : error instanceof z.ZodError ? "invalid_arguments" : "error";
        transcript.push({ tool: step.name, error: kind, message: error.message });
      }
    }

    assert.deepEqual(transcript[0], { tool: "list_files", ok: { path: ".", entries: [] } });
    assert.deepEqual(transcript[1], { tool: "write_file", ok: { path: "sum.js", bytesWritten: encode(program).byteLength } });
    assert.equal(files.get("sum.js"), program);
    assert.equal(transcript[2].ok.status, "exited");
    assert.equal(transcript[2].ok.exitCode, 0);
    assert.equal(transcript[2].ok.stdout, "sum 42\n");
    assert.deepEqual(transcript[3], {
      tool: "exec_command",
      error: "tool_policy",
      message: "Command is rejected by sandbox tool policy: sh"
    });
    assert.deepEqual(transcript[4].ok, {
      content: "const sum = argv.map(Number).reduce((a, b) => a + b, 0);\n",
      startLine: 1,
      endLine: 1,
      nextStartLine: 2,
      truncated: true,
      truncatedBy: "lines"
    });
    assert.equal(transcript[5].ok.content, "console.log('sum', sum);\n");
    assert.equal(transcript[5].ok.nextStartLine, null);
    assert.deepEqual(transcript[6], {
      tool: "write_file",
      error: "tool_policy",
      message: "File content exceeds policy (5000 > 4096)."
    });
    assert.equal(transcript[7].error, "invalid_arguments");
    assert.ok(!files.has("big.txt"));
  });
});

describe("with @anvia/core installed", () => {
  test("its createTool builds the tools", async (t) => {
    // A throwaway package tree: the tools' lib/ files copied (native.js re-exports this
    // checkout's, so the addon is the one under test), zod linked, and a stand-in
    // @anvia/core/tool.
    const directory = mkdtempSync(path.join(tmpdir(), "anvia-sandbox-core-"));
    t.after(() => rmSync(directory, { recursive: true, force: true }));
    mkdirSync(path.join(directory, "lib"));
    for (const file of ["tools.js", "terminal-tools.js", "shell.js", "errors.js"]) copyFileSync(path.join(root, "lib", file), path.join(directory, "lib", file));
    writeFileSync(
      path.join(directory, "lib/native.js"),
      `export * from ${JSON.stringify(pathToFileURL(path.join(root, "lib/native.js")).href)};\n`
    );
    writeFileSync(path.join(directory, "package.json"), JSON.stringify({ type: "module" }));
    const core = path.join(directory, "node_modules/@anvia/core");
    mkdirSync(core, { recursive: true });
    symlinkSync(path.join(root, "node_modules/zod"), path.join(directory, "node_modules/zod"), "dir");
    writeFileSync(
      path.join(core, "package.json"),
      JSON.stringify({ name: "@anvia/core", type: "module", exports: { "./tool": "./tool.js" } })
    );
    writeFileSync(
      path.join(core, "tool.js"),
      `export function createTool(options) {
         return { name: options.name, fromCore: true, options, call: (args, context = {}) => options.execute(options.inputSchema.parse(args), context) };
       }\n`
    );
    const copy = await import(pathToFileURL(path.join(directory, "lib/tools.js")).href);
    const { runtime, calls } = fakeRuntime();
    const tools = copy.createDockerSandboxTools({ sandbox: runtime, tools: ["write_file", "list_ports"] });
    assert.deepEqual(
      tools.map((tool) => [tool.name, tool.fromCore]),
      [
        ["write_file", true],
        ["list_ports", true]
      ]
    );
    assert.deepEqual(Object.keys(tools[0].options).sort(), ["description", "execute", "inputSchema", "name", "outputSchema"]);
    assert.deepEqual(await tools[0].call({ path: "a", content: "hé" }), { path: "a", bytesWritten: 3 });
    assert.deepEqual(calls[0].options, { path: "a", text: "hé" });
  });
});
