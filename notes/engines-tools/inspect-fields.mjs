// The "create with every option" sandbox of lifecycle.test.js minus seccompProfile (which
// Podman refuses inline), and the inspection fields that test checks, printed as JSON so that
// two engines can be diffed:
//   node notes/engines-tools/inspect-fields.mjs > docker.json
//   DOCKER_HOST=unix://$PWD/.state/podman/podman.sock node notes/engines-tools/inspect-fields.mjs > podman.json
// (an optional argument: a seccomp profile path to add). Destroys what it creates.
import { DockerSandboxClient } from "../../lib/index.js";
import { IMAGE, inspectContainer, dockerExec, uniqueId } from "../../test/helpers/docker.js";
const client = new DockerSandboxClient();
const id = uniqueId("diag");
const withSeccomp = process.argv[2];
const security = { readonlyRootfs: true, noNewPrivileges: true, dropCapabilities: ["ALL"], addCapabilities: ["CHOWN"] };
if (withSeccomp) security.seccompProfile = { type: "path", path: withSeccomp };
const sandbox = await client.createSandbox({
  id, image: IMAGE, workdir: "/work/dir", workspace: { type: "ephemeral" },
  network: { mode: "bridge", ports: [8080, 9090] },
  files: { "readme.md": "# hi\n", "bin/tool": new Uint8Array([0, 1, 2, 255]) }, directories: ["empty/nested"],
  env: { GREETING: "hello world", EMPTY: "" }, user: "1000:1000", labels: { team: "agents", "com.example/x": "y" },
  resources: { memoryMb: 256, cpus: 1.5, pidsLimit: 128, sharedMemoryMb: 32 },
  runtime: { commandTimeoutMs: 5000, maxOutputBytes: 1000, maxFileBytes: 2000, maxProcesses: 2 },
  security,
});
try {
  const info = await inspectContainer(`anvia-sandbox-${id}`);
  const hc = info.HostConfig;
  const out = {
    Name: info.Name, Running: info.State.Running, "Config.Image": info.Config.Image, "Config.Cmd": info.Config.Cmd,
    "Config.WorkingDir": info.Config.WorkingDir, "Config.User": info.Config.User,
    "Config.Env has GREETING/EMPTY": [info.Config.Env.includes("GREETING=hello world"), info.Config.Env.includes("EMPTY=")],
    "Config.Labels (non-anvia + count)": Object.keys(info.Config.Labels).length,
    "Config.Labels extra keys": Object.keys(info.Config.Labels).filter((k) => !k.startsWith("anvia.") && k !== "team" && k !== "com.example/x"),
    "Config.ExposedPorts": Object.keys(info.Config.ExposedPorts ?? {}).sort(),
    "HostConfig.Mounts": hc.Mounts, "HostConfig.Binds": hc.Binds, "Mounts (top)": info.Mounts?.map((m) => [m.Type, m.Name ?? m.Source, m.Destination]),
    NetworkMode: hc.NetworkMode, "PortBindings 8080": hc.PortBindings?.["8080/tcp"],
    Memory: hc.Memory, NanoCpus: hc.NanoCpus, CpuQuota: hc.CpuQuota, CpuPeriod: hc.CpuPeriod, PidsLimit: hc.PidsLimit, ShmSize: hc.ShmSize,
    ReadonlyRootfs: hc.ReadonlyRootfs, SecurityOpt: hc.SecurityOpt, CapDrop: hc.CapDrop, CapAdd: hc.CapAdd,
    "NetworkSettings.Ports": info.NetworkSettings.Ports, publishedPorts: sandbox.runtime.publishedPorts,
  };
  console.log(JSON.stringify(out, null, 1));
  const ls = await dockerExec(`anvia-sandbox-${id}`, ["sh", "-c", "stat -c '%u:%g %a %n' /work/dir /work/dir/readme.md /work/dir/bin /work/dir/bin/tool /work/dir/empty/nested; od -An -tu1 /work/dir/bin/tool; echo ok > /work/dir/new && echo WROTE; grep -E '^Cap(Eff|Bnd)|^NoNewPrivs|^Seccomp' /proc/self/status; cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>&1; df -k /dev/shm | tail -1; touch /rootfs-test 2>&1"]);
  console.log(JSON.stringify(ls, null, 1));
} finally {
  await sandbox.destroy();
}
