// The official TypeScript SDK, unchanged, against a live hub: connect, list, and run an agent's loop.
// Usage: node ts_sdk_client.mjs <mcp url> <token>; exits non-zero on the first surprise.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "commhub-e2e", version: "1.0.0" });
await client.connect(transport);

const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  const outcome = JSON.parse(result.content[0].text);
  assert.deepEqual(result.structuredContent, outcome);
  assert.equal(result.isError, !outcome.ok, `${name}: ${result.content[0].text}`);
  return outcome;
};

const { tools } = await client.listTools(); // also arms the SDK's outputSchema validation
// The contract's 17 first, in order (CONTRACT_TOOLS, from hub_tools.tools via ./run); the hub's own after them.
const contract = process.env.CONTRACT_TOOLS.split(",");
assert.equal(contract.length, 17);
assert.deepEqual(tools.slice(0, 17).map((tool) => tool.name), contract);
await call("report_status", { resume_id: "ts-agent", alias: "ts-coder", status: "idle" });
const sent = await call("send_task", { alias: "ts-coder", task: "port the parser", priority: "high" });
const { messages } = await call("get_inbox", { alias: "ts-coder" });
assert.equal(messages[0].id, sent.task_id);
await call("ack_inbox", { alias: "ts-coder", message_id: sent.task_id });
await call("report_completion", { alias: "ts-coder", task: sent.task_id, result: "ported", score: 8 });
const { task } = await call("get_task", { task_id: sent.task_id });
assert.equal(task.status, "replied");
const refused = await call("get_task", { task_id: "no-such-task" });
assert.equal(refused.error, "task not found");

await client.close();
console.log(`typescript sdk ${client.getServerVersion().name}: protocol ok, ${tools.length} tools (the contract's 17 first), agent loop ok`);
