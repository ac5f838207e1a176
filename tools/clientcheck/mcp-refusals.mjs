// The MCP TypeScript SDK calls an App tool (test-sleep) into each refusal
// the docs name (docs/mcp.md): each callTool must return, not throw, a
// tool error whose text names the code and whose structuredContent.error
// has code and message, and retry_after_seconds for the two 429 kinds.
// The SDK checks structuredContent against the tool's outputSchema, so a
// schema that does not admit the error makes it throw -32602: a failure.
// Run against a node with a create limit of 2 a minute and 1 active run
// an account (APPRUN_CREATE_PER_MIN=2 APPRUN_OWNER_ACTIVE_RUNS=1).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, key, admin] = process.argv.slice(2);
const post = async (path, token, body) => {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return res.json();
};
// A fresh account for each limit, so that the refusals do not mix.
let accounts = 0;
const account = async (credits) =>
  (await post("/admin/v1/accounts", admin, { email: `clientcheck-${Date.now()}-${++accounts}@example.com`, credits, reason: "clientcheck" })).api_key;
const finished = async (apiKey, runNo) => {
  for (let i = 0; i < 50; i++) {
    const run = await (await fetch(`${base}/api/v1/runs/${runNo}`, { headers: { Authorization: `Bearer ${apiKey}` } })).json();
    if (run.status === "completed" || run.status === "failed") return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`run ${runNo} did not finish`);
};

const cases = {
  invalid_input: { key, args: { ms: "soon" } },
  insufficient_credits: { key: await account(0), args: { ms: 0 } },
  // The account's one active run is a long one.
  concurrency_limit: { key: await account(5), args: { ms: 0 }, async before(k) {
    await post("/api/v1/runs", k, { app_slug: "test-sleep", input: { ms: 20000 } });
  } },
  // Two quick runs, one after the other, fill the key's create window.
  rate_limited: { key: await account(5), args: { ms: 0 }, async before(k) {
    for (let i = 0; i < 2; i++) await finished(k, (await post("/api/v1/runs", k, { app_slug: "test-sleep", input: { ms: 0 } })).run_no);
  } },
};

const report = {};
for (const [code, c] of Object.entries(cases)) {
  const client = new Client({ name: "apprun-clientcheck", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${c.key}` } },
  }));
  try {
    const { tools } = await client.listTools();
    if (!tools.find((t) => t.name === "test-sleep")?.outputSchema) throw new Error("no test-sleep tool with an outputSchema");
    await c.before?.(c.key);
    const res = await client.callTool({ name: "test-sleep", arguments: c.args });
    const text = (res.content ?? []).filter((p) => p.type === "text").map((p) => p.text).join(" ");
    const err = res.structuredContent?.error ?? {};
    const bad = [];
    if (res.isError !== true) bad.push("not isError");
    if (!text.includes(code)) bad.push(`text without the code: ${JSON.stringify(text)}`);
    if (err.code !== code) bad.push(`structuredContent.error.code ${JSON.stringify(err.code)}`);
    if (typeof err.message !== "string" || !err.message) bad.push("no structuredContent.error.message");
    const wait = code === "rate_limited" || code === "concurrency_limit";
    if (wait && !(Number.isInteger(err.retry_after_seconds) && err.retry_after_seconds > 0)) bad.push(`retry_after_seconds ${JSON.stringify(err.retry_after_seconds)}`);
    report[code] = bad.length ? bad.join(", ") : "ok";
  } catch (e) {
    report[code] = `threw: ${e.message}`;
  }
  await client.close();
}
console.log("mcp refusals:", JSON.stringify(report));
if (Object.values(report).some((r) => r !== "ok")) process.exit(1);
