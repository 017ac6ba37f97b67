// Two agents coordinating through coord's MCP server, driven by the official TypeScript
// MCP SDK (@modelcontextprotocol/sdk), over stdio (two `coord mcp` processes) or
// streamable HTTP (`coord serve`'s /mcp, one bound key and one operator key).
//
//   node mcp_two_agents.mjs <node_modules> stdio --coord PATH --cwd REPO
//   node mcp_two_agents.mjs <node_modules> http --url URL/mcp --bound-key K --operator-key K
//
// Prints {"ok": true, ...} when every step behaved; throws otherwise.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [modules, transport, ...rest] = process.argv.slice(2);
const opt = (name) => rest[rest.indexOf(`--${name}`) + 1];
const sdk = (p) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");

async function connect(agent) {
  const client = new Client({ name: `ts-${agent}`, version: "1.0.0" });
  if (transport === "stdio") {
    const { StdioClientTransport } = await sdk("client/stdio.js");
    await client.connect(new StdioClientTransport({
      command: opt("coord"), args: ["mcp"], cwd: opt("cwd"),
      env: { ...process.env, COORD_AGENT_ID: agent, COORD_AGENT_TYPE: "typescript_sdk", COORD_RELEASE_GRACE_SECONDS: "0" },
    }));
  } else {
    const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
    // Agent A: a key bound to its identity, naming nobody; agent B: an operator key naming itself.
    const headers = agent === "ts-agent-a"
      ? { "X-API-Key": opt("bound-key") }
      : { "X-API-Key": opt("operator-key"), "X-Agent-Id": agent, "X-Agent-Type": "typescript_sdk" };
    const t = new StreamableHTTPClientTransport(new URL(opt("url")), { requestInit: { headers } });
    await client.connect(t);
    transports.set(client, t);
  }
  return client;
}

async function call(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  assert.ok(!result.isError, `${name}: tool error ${JSON.stringify(result.content)}`);
  const data = result.structuredContent;
  assert.ok(data && typeof data === "object", `${name}: no structured result`);
  assert.deepEqual(JSON.parse(result.content[0].text), data, `${name}: text and structured content differ`);
  return data;
}

const transports = new Map();
const a = await connect("ts-agent-a");
const b = await connect("ts-agent-b");
const tools = (await a.listTools()).tools.map((t) => t.name);
for (const required of ["acquire_lock", "release_lock", "check_locks", "get_work", "complete_work", "submit_work",
  "check_edit", "send_message", "inbox", "list_toolsets", "enable_toolset"]) {
  assert.ok(tools.includes(required), `missing tool ${required}`);
}

// A locks, B is blocked (and refused an edit), A releases, B acquires.
const got = await call(a, "acquire_lock", { file_path: "src/shared.ts", reason: "TypeScript SDK test" });
assert.equal(got.action, "acquired");
const blocked = await call(b, "acquire_lock", { file_path: "src/shared.ts" });
assert.equal(blocked.action, "blocked");
const refused = await b.callTool({ name: "check_edit", arguments: { paths: ["src/shared.ts"] } });
assert.equal(refused.structuredContent.error, "file_locked");
assert.equal(refused.structuredContent.locked_by, blocked.locked_by);
await call(a, "release_lock", { file_path: "src/shared.ts" });
const taken = await call(b, "acquire_lock", { file_path: "src/shared.ts" });
assert.ok(taken.fencing_token > got.fencing_token, "fencing tokens grow");

// The queue: submit, claim, complete, with a dependency.
const build = await call(a, "submit_work", { task_type: "build", task_description: "build it" });
const deploy = await call(a, "submit_work", { task_type: "deploy", task_description: "ship it", priority: 1,
  depends_on: [build.task_id] });
const claimed = await call(b, "get_work");
assert.equal(claimed.task_id, build.task_id, "the dependent task waits");
assert.deepEqual(await call(a, "get_work"), { success: false, reason: "no_tasks_available" });
assert.equal((await call(b, "complete_work", { task_id: build.task_id, success: true })).status, "completed");
assert.equal((await call(a, "get_work", { task_types: ["deploy"] })).task_id, deploy.task_id);

// Argument errors name the field and are tool errors.
const bad = await a.callTool({ name: "acquire_lock", arguments: { file_path: "x", ttl_minutes: "soon" } });
assert.ok(bad.isError && JSON.stringify(bad.content).includes("ttl_minutes"));

// Over HTTP the agents leave as the SDK lets them: by deleting their MCP sessions
// (the caller checks that A's claimed task went back to the queue and B's lock is free).
for (const client of [a, b]) {
  if (transports.has(client)) await transports.get(client).terminateSession();
  await client.close();
}
console.log(JSON.stringify({ ok: true, transport, tools: tools.length, holder_seen_by_b: blocked.locked_by,
  claimed_by_a: deploy.task_id }));
