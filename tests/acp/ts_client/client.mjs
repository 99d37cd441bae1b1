// Drive `tether --mode acp` with the official TypeScript SDK's client and print what happened
// as one JSON object: initialize, session/new, session/prompt results and every update received.
// Usage: node client.mjs '<argv of the agent as JSON>' <cwd>
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = JSON.parse(process.argv[2]);
const cwd = process.argv[3];
const agent = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const log = [];
const app = acp
  .client({ name: "tether-ts-test" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
    log.push({ permission: params.toolCall.toolCallId, options: params.options.map((o) => o.kind) });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    log.push({ update: params.update });
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "tether-ts-test", version: "1.0.0" },
  });
  const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const prompt = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [
      { type: "text", text: "Summarise this:" },
      { type: "resource", resource: { uri: `file://${cwd}/notes.txt`, mimeType: "text/plain", text: "alpha" } },
    ],
  });
  const listed = await ctx.request(acp.methods.agent.session.list, { cwd });
  return { init, session, prompt, listed };
});
agent.stdin.end();
await new Promise((resolve) => agent.on("exit", resolve));
process.stdout.write(JSON.stringify({ ...result, log, exitCode: agent.exitCode }) + "\n");
