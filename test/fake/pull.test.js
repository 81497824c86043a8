// pullImage's progress stream gone wrong: cut mid-chunk and between chunks, errors inside
// the stream, lines split into single bytes, lines that never end.
import test from "node:test";
import assert from "node:assert/strict";
import { HANG_MS, DockerSandboxClient, chunked, expectCode, head, mib, startFakeEngine } from "../helpers/fake-engine.js";

const T = { timeout: HANG_MS }; // a hang fails after minutes; no test races a timer

async function client(t) {
  const fake = await startFakeEngine();
  t.after(() => fake.close());
  return { fake, client: new DockerSandboxClient({ host: fake.host }) };
}

const progressHead = () => head(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
const line = (obj) => `${JSON.stringify(obj)}\r\n`;

test("control: a pull whose progress stream ends cleanly", T, async (t) => {
  const { fake, client: c } = await client(t);
  await c.pullImage({ image: "registry.local:5000/team/app:v2" });
  const req = fake.seen("POST", "/images/create")[0];
  assert.equal(req.query.fromImage, "registry.local:5000/team/app");
  assert.equal(req.query.tag, "v2");
});

test("progress stream cut mid-chunk", T, async (t) => {
  const { fake, client: c } = await client(t);
  const body = line({ status: "Pulling fs layer", id: "abc" }) + line({ status: "Downloading", id: "abc" });
  fake.route("POST", "/images/create", {
    raw: [progressHead(), `${(body.length + 50).toString(16)}\r\n`, body],
    then: "destroy",
  });
  await expectCode(c.pullImage({ image: "cut:1" }), "docker_command_failed", /connection failed/);
});

test("progress stream cut between chunks (FIN, no last chunk)", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.route("POST", "/images/create", {
    raw: [progressHead(), chunked(line({ status: "Pulling fs layer", id: "abc" }), Infinity, false), chunked(line({ status: "Downloading" }), Infinity, false)],
    then: "end",
  });
  await expectCode(c.pullImage({ image: "cut:2" }), "docker_command_failed", /connection failed/);
});

test("progress stream cut right after the head", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.route("POST", "/images/create", { raw: progressHead(), then: "destroy" });
  await expectCode(c.pullImage({ image: "cut:3" }), "docker_command_failed");
});

test("an error inside the progress stream", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.route("POST", "/images/create", {
    raw: [
      progressHead(),
      chunked(line({ status: "Pulling from team/app" }) + line({ errorDetail: { message: "manifest unknown" }, error: "manifest unknown" })),
    ],
  });
  await expectCode(c.pullImage({ image: "team/app:gone" }), "docker_command_failed", /Docker image pull failed: team\/app:gone: manifest unknown/);
});

test("progress lines split one byte per chunk, the error on the last line", T, async (t) => {
  const { fake, client: c } = await client(t);
  const body = line({ status: "Pulling" }) + line({ status: "Downloading", progressDetail: { current: 1, total: 2 } }) + line({ error: "split error" });
  fake.route("POST", "/images/create", { raw: [progressHead(), chunked(body, 1)], split: 1 });
  await expectCode(c.pullImage({ image: "split:1" }), "docker_command_failed", /split error/);
});

test("progress lines split one byte per chunk, no error: success", T, async (t) => {
  const { fake, client: c } = await client(t);
  const body = line({ status: "Pulling" }) + line({ status: "Digest: sha256:00" }) + line({ status: "Status: Downloaded newer image" });
  fake.route("POST", "/images/create", { raw: [progressHead(), chunked(body, 1)], split: 1 });
  await c.pullImage({ image: "split:2" });
});

test("a progress line that never ends is bounded", T, async (t) => {
  const { fake, client: c } = await client(t);
  const before = process.memoryUsage().rss;
  const mb = "p".repeat(1024 * 1024);
  fake.route("POST", "/images/create", async (req, res) => {
    await res.write(progressHead());
    await res.write(chunked('{"status":"', Infinity, false));
    for (let i = 0; i < 40; i++) await res.write(chunked(mb, Infinity, false));
    await res.write(chunked('"}\r\n'));
    res.done();
  });
  await expectCode(c.pullImage({ image: "long:1" }), "docker_command_failed", /progress line over/);
  const grown = mib(process.memoryUsage().rss - before);
  assert.ok(grown < 50, `rss grew ${grown.toFixed(1)} MiB`);
});

test("malformed progress lines are informative only", T, async (t) => {
  const { fake, client: c } = await client(t);
  fake.route("POST", "/images/create", { raw: [progressHead(), chunked('{"status": "ok"\r\nnot json at all\r\n{"status":')] });
  await c.pullImage({ image: "garbled:1" });
});
