// Which engine connections and requests each operation uses (run it under strace):
//   strace -f -s 80 -e trace=connect,write,sendto,sendmsg,writev -o /tmp/t node notes/engines-tools/connections.mjs
// Each phase is marked on stderr ("MARK phase"), so the trace can be cut by phase.
import { DockerSandboxClient } from "../../lib/index.js";
const c = new DockerSandboxClient();
const mark = (m) => process.stderr.write(`MARK ${m}\n`);
mark("create");
const sb = await c.createSandbox({ image: "anvia-sandbox/bookworm:local", workspace: { type: "ephemeral" }, network: { mode: "none" }, files: { "a.txt": "x" } });
mark("exec1"); await sb.runtime.exec({ command: "true" });
mark("exec2"); await sb.runtime.exec({ command: "cat", input: "hi" });
mark("write"); await sb.runtime.writeTextFile({ path: "b.txt", text: "y" });
mark("read"); await sb.runtime.readTextFile({ path: "b.txt" });
mark("list"); await sb.runtime.listFiles({ path: "." });
mark("destroy"); await sb.destroy();
mark("end");
