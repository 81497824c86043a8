// A short agent session in a sandbox, printed as a transcript with timings. Run it with
// `npm run demo` (which sets up the engine and the local image first), or directly with
// `node scripts/demo.mjs` when both are there. Uses only the package's public API.
import { DockerSandboxClient, DockerSandboxError, createDockerSandboxTools } from "../lib/index.js";

const image = process.env.ANVIA_DEMO_IMAGE ?? process.env.ANVIA_TEST_IMAGE ?? "anvia-sandbox/bookworm:local";
const decode = (bytes) => new TextDecoder().decode(bytes);
const started = performance.now();

function say(step, detail = "") {
  const at = ((performance.now() - started) / 1000).toFixed(2).padStart(6);
  console.log(`[${at} s] ${step}${detail ? `  ${detail}` : ""}`);
}

async function timed(step, fn) {
  const t0 = performance.now();
  const value = await fn();
  say(step, `(${(performance.now() - t0).toFixed(0)} ms)`);
  return value;
}

function indent(text) {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => `           | ${line}`)
    .join("\n");
}

const client = new DockerSandboxClient();
say("demo", `image ${image}`);

const sandbox = await timed("create sandbox with initial files", () =>
  client.createSandbox({
    image,
    workspace: { type: "ephemeral" },
    network: { mode: "bridge", ports: [8080] },
    files: {
      "README.md": "# Demo workspace\n",
      "www/index.html": "<h1>Hello from inside the sandbox</h1>\n",
    },
    directories: ["notes"],
    runtime: { commandTimeoutMs: 20_000 },
  }),
);
let current = sandbox;
try {
  say("sandbox", `${sandbox.id}, workdir ${sandbox.runtime.workdir}, port 8080 -> 127.0.0.1:${sandbox.runtime.publishedPorts[0].hostPort}`);

  const program = [
    "#!/bin/sh",
    "# FizzBuzz, written by the agent",
    "i=1",
    'while [ "$i" -le "${1:-15}" ]; do',
    '  if [ $((i % 15)) -eq 0 ]; then echo FizzBuzz',
    '  elif [ $((i % 3)) -eq 0 ]; then echo Fizz',
    '  elif [ $((i % 5)) -eq 0 ]; then echo Buzz',
    '  else echo "$i"; fi',
    "  i=$((i + 1))",
    "done",
    "",
  ].join("\n");
  await timed("write a small program (fizzbuzz.sh)", () => sandbox.runtime.writeTextFile({ path: "fizzbuzz.sh", text: program }));

  const run = await timed("run it", () => sandbox.runtime.exec({ command: "sh", args: ["fizzbuzz.sh", "15"] }));
  console.log(indent(decode(run.stdout)));
  say("exit", `status ${run.status}, exit code ${run.exitCode}`);

  say("stream a command's output live");
  for await (const event of sandbox.runtime.execStream({
    command: "sh",
    args: ["-c", "for step in fetch build test; do echo \"$step...\"; sleep 0.3; done; echo 'all good' >&2"],
  })) {
    if (event.type === "result") say("stream ended", `status ${event.result.status}, exit code ${event.result.exitCode}`);
    else process.stdout.write(`           | ${event.type}: ${decode(event.data)}`);
  }

  const server = await timed("start a web server (busybox httpd)", () =>
    sandbox.runtime.startProcess({ command: "busybox", args: ["httpd", "-f", "-p", "8080", "-h", "www"] }),
  );
  const port = await timed("wait for its port", () => sandbox.runtime.waitForPort({ containerPort: 8080 }));
  const page = await timed(`fetch http://127.0.0.1:${port.hostPort}/ from the host`, async () =>
    (await fetch(`http://127.0.0.1:${port.hostPort}/`, { signal: AbortSignal.timeout(10_000) })).text(),
  );
  console.log(indent(page));
  await timed("stop the web server", () => sandbox.runtime.stopProcess({ processId: server.id }));

  say("the same work through the agent tools, as an LLM would call them");
  const tools = createDockerSandboxTools({
    sandbox: sandbox.runtime,
    tools: ["write_file", "exec_command", "read_file", "list_files", "list_ports", "start_process", "wait_for_port", "read_process_logs", "stop_process"],
    exec: { commands: { mode: "block", values: ["rm"] } },
  });
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const definitions = await Promise.all(tools.map((tool) => tool.definition("")));
  say("tool definitions offered to the model", definitions.map((d) => d.name).join(", "));
  const call = async (name, args) => {
    const t0 = performance.now();
    const output = await byName.get(name).call(JSON.parse(JSON.stringify(args)), {});
    say(`tool ${name}`, `${JSON.stringify(args)} (${(performance.now() - t0).toFixed(0)} ms)`);
    console.log(indent(JSON.stringify(output, null, 2)));
    return output;
  };
  await call("write_file", { path: "notes/plan.md", content: "1. write code\n2. run it\n3. ship it\n" });
  await call("exec_command", { command: "sh", args: ["fizzbuzz.sh", "5"] });
  await call("read_file", { path: "notes/plan.md", startLine: 2, lineCount: 1 });
  await call("list_files", { path: "." });
  await call("list_ports", {});
  const started2 = await call("start_process", { command: "busybox", args: ["httpd", "-f", "-v", "-p", "8080", "-h", "www"] });
  await call("wait_for_port", { containerPort: 8080, timeoutMs: 10_000 });
  await fetch(`http://127.0.0.1:${port.hostPort}/`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
  // httpd logs a request after answering it, and the line comes back on the process's
  // output stream: give it a moment (as a model would retry) before reading the logs.
  for (let i = 0; i < 50; i++) {
    const logs = await sandbox.runtime.readProcessLogs({ processId: started2.id });
    if (decode(logs.stderr).includes("response:")) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await call("read_process_logs", { processId: started2.id, tailBytes: 200 });
  await call("stop_process", { processId: started2.id });
  try {
    await byName.get("exec_command").call({ command: "rm", args: ["-rf", "/"] }, {});
  } catch (error) {
    if (!(error instanceof DockerSandboxError)) throw error;
    say("policy refused a command", `${error.code}: ${error.message}`);
  }

  await timed("stop the sandbox", () => sandbox.stop());
  current = await timed("resume it", () => client.resumeSandbox({ id: sandbox.id }));
  const back = await timed("read the program back", () => current.runtime.readTextFile({ path: "fizzbuzz.sh" }));
  say("read back", `${back.split("\n").length - 1} lines, starts with ${JSON.stringify(back.split("\n")[1])}`);
} finally {
  await timed("destroy", () => current.destroy());
  if (current !== sandbox) await sandbox.destroy().catch(() => undefined);
}

// Nothing may be left behind: no container or volume carries this sandbox's label.
const { execFileSync } = await import("node:child_process");
const leftovers = [
  execFileSync("docker", ["ps", "-aq", "--filter", `label=anvia.sandbox.id=${sandbox.id}`], { encoding: "utf8" }).trim(),
  execFileSync("docker", ["volume", "ls", "-q", "--filter", `label=anvia.sandbox.id=${sandbox.id}`], { encoding: "utf8" }).trim(),
].filter(Boolean);
if (leftovers.length > 0) {
  console.error(`left on the engine: ${leftovers.join(" ")}`);
  process.exit(1);
}
say("done", "nothing left on the engine");
