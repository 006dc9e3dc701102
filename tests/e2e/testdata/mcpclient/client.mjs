// Drives snapq's MCP server with the official MCP TypeScript SDK client.
// Input (a JSON object on stdin):
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp", "key": "sq_…"}
//   {"transport": "stdio", "command": "/path/snapq", "args": ["mcp"], "env": {"SNAPQ_URL": "…"}}
//   plus "calls": [{"name": "fetch", "arguments": {…}}, …]
// Output (JSON on stdout): {"tools": [{name, description, inputSchema}], "results": [CallToolResult, …]}
// or {"connect_error": {"message", "code"}} when the client cannot connect.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

// With --lines, stdin is JSON lines instead: the config first, then one call per line; each
// result is printed as one line as soon as it is back, so the caller picks the next call
// from it (a ref from a snapshot). At the end of stdin the session is terminated and
// {"closed": true} printed.
async function runLines() {
  const { createInterface } = await import("node:readline");
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const cfg = JSON.parse((await lines.next()).value);
  const client = new Client({ name: "snapq-e2e", version: "1.0.0" });
  const transport = transportFor(cfg);
  await client.connect(transport);
  for (let l = await lines.next(); !l.done; l = await lines.next()) {
    if (!l.value.trim()) continue;
    const call = JSON.parse(l.value);
    const res = await client.callTool({ name: call.name, arguments: call.arguments }, undefined, { timeout: 180000 });
    process.stdout.write(JSON.stringify(res) + "\n");
  }
  if (transport.terminateSession) await transport.terminateSession();
  await client.close();
  process.stdout.write(JSON.stringify({ closed: true }) + "\n");
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

function transportFor(cfg) {
  if (cfg.transport === "stdio") {
    return new StdioClientTransport({ command: cfg.command, args: cfg.args, env: cfg.env, stderr: "inherit" });
  }
  const headers = cfg.key ? { Authorization: `Bearer ${cfg.key}` } : {};
  return new StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers } });
}

if (process.argv[2] === "--lines") {
  await runLines();
  process.exit(0);
}
const cfg = await readStdin();
const client = new Client({ name: "snapq-e2e", version: "1.0.0" });
const transport = transportFor(cfg);
try {
  await client.connect(transport);
} catch (err) {
  process.stdout.write(JSON.stringify({ connect_error: { message: String(err.message ?? err), code: err.code ?? null } }));
  process.exit(0);
}
const out = { server: client.getServerVersion(), tools: [], results: [] };
const listed = await client.listTools();
out.tools = listed.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
for (const call of cfg.calls ?? []) {
  out.results.push(await client.callTool({ name: call.name, arguments: call.arguments }, undefined, { timeout: 180000 }));
}
if (transport.terminateSession) await transport.terminateSession();
await client.close();
process.stdout.write(JSON.stringify(out));
