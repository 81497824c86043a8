// Starts a terminal in the sandbox named by argv[2] and exits once its output shows a
// marker, printing the terminal's id (test/integration/terminal.test.js: a terminal
// outlives the Node process that started it). The marker is the shell's output, not the
// echo of its input: `$(echo first)` becomes "first" only when the shell runs it.
import { DockerSandboxClient } from "../../lib/index.js";

const client = new DockerSandboxClient();
const sandbox = await client.resumeSandbox({ id: process.argv[2] });
const terminal = await sandbox.runtime.startTerminal({ command: "sh" });
await terminal.write("echo marker-from-the-$(echo first)-process\n");
let text = "";
for await (const { data } of terminal.output()) {
  text += Buffer.from(data).toString("latin1");
  if (text.includes("marker-from-the-first-process")) break;
}
process.stdout.write(`${terminal.id}\n`);
