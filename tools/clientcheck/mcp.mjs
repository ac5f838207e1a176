// The official MCP TypeScript SDK lists apprun's tools and calls one.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "apprun-clientcheck", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const app = tools.find((t) => t.name === "cold_email_writer" || t.name === "cold-email-writer");
if (!app || !app.outputSchema) {
  console.error("mcp: no cold email tool with an outputSchema in", tools.map((t) => t.name));
  process.exit(1);
}
const res = await client.callTool({
  name: app.name,
  arguments: { product_description: "Acme Ledger automates bookkeeping for agencies", target_role: "Agency founders" },
});
const out = res.structuredContent ?? {};
console.log("mcp:", JSON.stringify({ tools: tools.length, called: app.name, isError: !!res.isError, status: out.status, run_no: out.run_no }));
await client.close();
if (res.isError || !out.run_no) process.exit(1);
