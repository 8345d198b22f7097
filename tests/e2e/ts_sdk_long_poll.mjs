// The official TypeScript SDK, unchanged, long-polling get_inbox far past its own request timeout.
// Usage: node ts_sdk_long_poll.mjs <mcp url> <token>; exits non-zero on the first surprise.
//
// The SDK's request timeout here is 20 s and get_inbox waits up to 60 s (the contract's maximum), so
// "waiting 90 s on a tool call without timing out" is two chained waits on one client: a full 60 s
// wait that answers empty, then a wait that a task sent 30 s in ends; each outlives the timeout
// because the hub answers over SSE with progress notifications and the SDK resets its timer on each
// (resetTimeoutOnProgress). Without progress the same timeout fires: the control comes first.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const TIMEOUT_MS = 20_000;
const alias = `ts-waiter-${process.pid}`;
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "commhub-e2e-long-poll", version: "1.0.0" });
await client.connect(transport);
await client.listTools(); // arms the SDK's outputSchema validation of get_inbox's result

const outcomeOf = (result) => {
  const outcome = JSON.parse(result.content[0].text);
  assert.deepEqual(result.structuredContent, outcome);
  assert.equal(outcome.ok, true, result.content[0].text);
  return outcome;
};

// Control: no onprogress, so no progressToken: a plain JSON answer, and the SDK's timer fires first.
await assert.rejects(
  client.callTool({ name: "get_inbox", arguments: { alias, wait_seconds: 5 } }, undefined, { timeout: 1_000 }),
  (error) => error instanceof McpError && error.code === ErrorCode.RequestTimeout,
);

// wait: one get_inbox of wait_seconds, with a 20 s timeout reset by each progress notification.
const wait = async (whenWaited) => {
  const progress = [];
  const started = Date.now();
  const result = await client.callTool({ name: "get_inbox", arguments: { alias, wait_seconds: 60 } }, undefined, {
    timeout: TIMEOUT_MS,
    resetTimeoutOnProgress: true,
    maxTotalTimeout: 120_000,
    onprogress: (update) => {
      progress.push(update.progress);
      whenWaited?.(update.progress);
    },
  });
  const values = progress.slice();
  assert.deepEqual(values, [...new Set(values)].sort((a, b) => a - b), "progress increases");
  return { outcome: outcomeOf(result), progress: values, seconds: (Date.now() - started) / 1000 };
};

// 1. The full 60 s: three times the timeout, answered empty when the hub's wait is up.
const empty = await wait();
assert.deepEqual(empty.outcome.messages, []);
assert.ok(empty.progress.at(-1) >= 55, `the hub reported waiting ${empty.progress.at(-1)} s`);

// 2. A task sent 30 s into the next wait (past the timeout) is that wait's answer.
let sending;
const woken = await wait((waited) => {
  if (waited >= 30 && !sending) {
    sending = client.callTool({ name: "send_task", arguments: { alias, task: "wake up" } });
  }
});
const sent = outcomeOf(await sending);
assert.deepEqual(
  woken.outcome.messages.map((message) => message.id),
  [sent.task_id],
);
assert.ok(woken.progress.at(-1) >= 30);

await client.close();
const total = (empty.seconds + woken.seconds).toFixed(0);
console.log(
  `typescript sdk: ${total} s of get_inbox waits with a ${TIMEOUT_MS / 1000} s timeout, ` +
    `${empty.progress.length + woken.progress.length} progress notifications, the task delivered`,
);
