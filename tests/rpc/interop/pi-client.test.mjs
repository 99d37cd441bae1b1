// Interop: pi's own RpcClient (@mariozechner/pi-coding-agent 0.73.1) drives `tether --mode rpc`.
// Every call must succeed as it would against pi. Run by tests/rpc/test_rpc_interop.py, which
// sets TETHER_COMMAND, TETHER_HOME and TETHER_SCRIPTED (the scripted model's replies below).
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { RpcClient } from "@mariozechner/pi-coding-agent";

const here = path.dirname(fileURLToPath(import.meta.url));
const client = new RpcClient({ cliPath: path.join(here, "tether-shim.mjs"), cwd: process.cwd(), args: ["--yes"] });

function nextEvent(type, timeout = 30000) {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`no ${type} event in time`)), timeout);
		const off = client.onEvent((event) => {
			if (event.type === type) {
				clearTimeout(timer);
				off();
				resolve(event);
			}
		});
	});
}

const TETHER_ONLY = new Set(["ready", "prompt_result"]);
const log = [];
await client.start();
try {
	// 1. prompt and stream events (reply 1: "Hello from tether")
	// tether's additions (`ready`, `prompt_result`) reach pi's listeners like any event a pi client
	// does not know; leave them out to compare with what pi itself sends.
	const events = (await client.promptAndWait("hello")).filter((e) => !TETHER_ONLY.has(e.type));
	const types = events.map((e) => e.type);
	assert.equal(types[0], "agent_start");
	assert.equal(types.at(-1), "agent_end");
	const text = events
		.filter((e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta")
		.map((e) => e.assistantMessageEvent.delta)
		.join("");
	assert.equal(text, "Hello from tether");
	log.push("prompt");

	// 2. get_state
	const state = await client.getState();
	assert.equal(state.isStreaming, false);
	assert.equal(state.messageCount, 2);
	assert.equal(state.model.provider, "scripted");
	assert.ok(state.sessionId);
	log.push("get_state");

	// 3. get_messages
	const messages = await client.getMessages();
	assert.deepEqual(messages.map((m) => m.role), ["user", "assistant"]);
	assert.equal(await client.getLastAssistantText(), "Hello from tether");
	log.push("get_messages");

	// 4. steer and follow up while a tool runs (reply 2: bash sleep 1; 3: "steered"; 4: "followed up")
	const toolStarted = nextEvent("tool_execution_start");
	const idle1 = client.waitForIdle();
	await client.prompt("run a tool");
	await toolStarted;
	await client.steer("change of plan");
	await client.followUp("and then this");
	await idle1;
	const afterSteer = await client.getMessages();
	const users = afterSteer.filter((m) => m.role === "user").map((m) => m.content);
	assert.deepEqual(users, ["hello", "run a tool", "change of plan", "and then this"]);
	assert.equal(afterSteer.at(-1).role, "assistant");
	assert.equal(await client.getLastAssistantText(), "followed up");
	log.push("steer");

	// 5. abort a long tool (reply 5: bash sleep 30)
	const longTool = nextEvent("tool_execution_start");
	const idle2 = client.waitForIdle();
	await client.prompt("wait a long time");
	await longTool;
	await client.abort();
	await idle2;
	const aborted = (await client.getMessages()).filter((m) => m.role === "assistant").at(-1);
	assert.equal((await client.getState()).isStreaming, false);
	assert.ok(aborted);
	log.push("abort");

	// 6. the rest of 0.73's client: name, models, thinking, compaction (reply 7: "again"; 8: the
	//    summary), and the aborts that have nothing to abort
	await client.promptAndWait("talk again");
	const compacted = await client.compact("keep it short");
	assert.equal(compacted.summary, "SUMMARY: a short talk");
	assert.equal(typeof compacted.firstKeptEntryId, "string");
	assert.ok(compacted.tokensBefore > 0);
	assert.equal(typeof compacted.tokensAfter, "number"); // 0.73's name for the estimate
	assert.equal((await client.getMessages())[0].role, "compactionSummary");
	// (setModel resolves the model again: the scripted model would start its script over)
	await client.setSessionName("interop");
	assert.equal((await client.getState()).sessionName, "interop");
	const current = (await client.getState()).model;
	const models = await client.getAvailableModels();
	assert.ok(models.some((m) => m.provider === current.provider && m.id === current.id));
	assert.equal((await client.setModel(current.provider, current.id)).id, current.id);
	await assert.rejects(client.setModel("nowhere", "nothing"), /Model not found/);
	const cycled = await client.cycleModel();
	assert.ok(cycled === null || typeof cycled.model.id === "string");
	await client.setThinkingLevel("high");
	assert.equal((await client.getState()).thinkingLevel, "off"); // clamped: the model does not reason
	assert.equal(await client.cycleThinkingLevel(), null);
	await client.abortRetry();
	await client.abortBash();
	log.push("rest");

	// 7. new_session
	const first = await client.getState();
	const before = first.sessionId;
	assert.deepEqual(await client.newSession(), { cancelled: false });
	const fresh = await client.getState();
	assert.notEqual(fresh.sessionId, before);
	assert.equal(fresh.messageCount, 0);
	assert.deepEqual(await client.getMessages(), []);
	log.push("new_session");

	// 8. back to the first session by the file getState reported, as pi's clients do
	assert.deepEqual(await client.switchSession(first.sessionFile), { cancelled: false });
	const back = await client.getState();
	assert.equal(back.sessionId, before);
	assert.equal(back.messageCount, first.messageCount);
	const forkable = await client.getForkMessages();
	assert.equal(forkable[0].text, "hello");
	assert.equal((await client.fork(forkable.at(-1).entryId)).cancelled, false);
	assert.deepEqual(await client.clone(), { cancelled: false });
	assert.equal((await client.bash("echo from-bash")).output, "from-bash\n");
	assert.match((await client.exportHtml("out.html")).path, /out\.html$/);
	await client.switchSession(first.sessionFile); // to the current session: nothing changes
	await client.newSession(); // the fresh one had no message, so it was never stored: a new one
	log.push("switch_session");

	// 9. a few more of pi's client methods, answered as pi would
	await client.setSteeringMode("all");
	await client.setFollowUpMode("one-at-a-time");
	await client.setAutoCompaction(true);
	await client.setAutoRetry(true);
	assert.deepEqual(await client.getCommands(), []);
	assert.equal((await client.getSessionStats()).totalMessages, 0);
	assert.deepEqual(await client.getForkMessages(), []);
	log.push("misc");
} finally {
	await client.stop();
}
console.log(JSON.stringify({ ok: true, steps: log }));
