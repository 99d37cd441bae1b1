// Interop: pi 1.6.0's own RpcClient (@earendil-works/pi-coding-agent) drives `tether --mode rpc`.
// Every call must succeed as it would against pi 1.6. Run by tests/rpc/test_rpc_interop16.py on
// Node 22 from npm, which sets TETHER_COMMAND, TETHER_HOME (settings: quick retries, compaction
// that keeps little) and TETHER_SCRIPTED (the scripted model's replies, consumed in step order).
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { RpcClient } from "@earendil-works/pi-coding-agent";

const here = path.dirname(fileURLToPath(import.meta.url));
const shim = path.join(here, "..", "interop", "tether-shim.mjs");
const client = new RpcClient({ cliPath: shim, cwd: process.cwd(), args: ["--yes"] });

// tether's own additions reach pi's listeners like any event a pi client does not know.
const TETHER_ONLY = new Set(["ready", "prompt_result"]);

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

function record() {
	const seen = [];
	const off = client.onEvent((event) => {
		if (!TETHER_ONLY.has(event.type)) seen.push(event);
	});
	return { seen, off };
}

const log = [];
await client.start();
try {
	// 1. prompt: disposition, streamed deltas, agent_settled last (reply 1: "Hello from tether")
	{
		const events = client.collectEvents();
		assert.equal(await client.prompt("hello"), "started");
		const seen = (await events).filter((e) => !TETHER_ONLY.has(e.type));
		const types = seen.map((e) => e.type);
		assert.equal(types[0], "agent_start");
		assert.deepEqual(types.slice(-2), ["agent_end", "agent_settled"]);
		assert.deepEqual(seen.at(-1), { type: "agent_settled", aborted: false });
		assert.equal(seen.at(-2).willRetry, false);
		const updates = seen.filter((e) => e.type === "message_update");
		assert.ok(updates.length > 0 && updates.every((e) => typeof e.usage?.totalTokens === "number"));
		const text = updates
			.filter((e) => e.assistantMessageEvent.type === "text_delta")
			.map((e) => e.assistantMessageEvent.delta)
			.join("");
		assert.equal(text, "Hello from tether");
		const end = seen.find((e) => e.type === "message_end" && e.message.role === "assistant");
		assert.equal(end.message.content[0].text, "Hello from tether");
		log.push("prompt");
	}

	// 2. state and messages
	{
		const state = await client.getState();
		assert.equal(state.isStreaming, false);
		assert.equal(state.isCompacting, false);
		assert.equal(state.messageCount, 2);
		assert.equal(state.pendingMessageCount, 0);
		assert.equal(state.model.provider, "scripted");
		assert.ok(state.sessionId);
		const messages = await client.getMessages();
		assert.deepEqual(messages.map((m) => m.role), ["user", "assistant"]);
		assert.equal(await client.getLastAssistantText(), "Hello from tether");
		log.push("state");
	}

	// 3. steer and follow-ups while a tool runs (reply 2: bash sleep 1; 3: "steered";
	//    4: "followed up"; 5: "one more done": follow-ups go one at a time)
	{
		const toolStarted = nextEvent("tool_execution_start");
		const queued = [];
		const offQueue = client.onEvent((e) => e.type === "queue_update" && queued.push(e));
		const settled = client.waitForIdle();
		assert.equal(await client.prompt("run a tool"), "started");
		await toolStarted;
		assert.equal(await client.steer("change of plan"), "queued");
		assert.equal(await client.followUp("and then this"), "queued");
		assert.equal(await client.prompt("one more", undefined, "followUp"), "queued");
		await assert.rejects(client.prompt("no behavior"), /streamingBehavior/);
		await settled;
		offQueue();
		assert.deepEqual(queued.at(-1), { type: "queue_update", steering: [], followUp: [] });
		assert.ok(queued.some((e) => e.steering.includes("change of plan")));
		const users = (await client.getMessages()).filter((m) => m.role === "user").map((m) => m.content);
		assert.deepEqual(users, ["hello", "run a tool", "change of plan", "and then this", "one more"]);
		assert.equal(await client.getLastAssistantText(), "one more done");
		log.push("steer_follow_up");
	}

	// 4. clear_queue, then abort a long tool (reply 6: bash sleep 30; the aborted call takes 7)
	{
		const longTool = nextEvent("tool_execution_start");
		const settled = nextEvent("agent_settled");
		assert.equal(await client.prompt("wait a long time"), "started");
		await longTool;
		assert.equal(await client.followUp("never sent"), "queued");
		assert.deepEqual(await client.clearQueue(), { steering: [], followUp: ["never sent"] });
		await client.abort();
		assert.deepEqual(await settled, { type: "agent_settled", aborted: true });
		assert.equal((await client.getState()).isStreaming, false);
		const last = (await client.getMessages()).filter((m) => m.role === "assistant").at(-1);
		assert.equal(last.stopReason, "aborted");
		log.push("clear_queue_abort");
	}

	// 5. automatic retry (reply 8: a 529, reply 9: "worked the second time")
	{
		// promptAndWait: prompt, then the run's events up to agent_settled
		const seen = (await client.promptAndWait("retry please")).filter((e) => !TETHER_ONLY.has(e.type));
		const ends = seen.filter((e) => e.type === "agent_end").map((e) => e.willRetry);
		assert.deepEqual(ends, [true, false], JSON.stringify(seen.filter((e) => e.type !== "message_update")).slice(0, 3000));
		const start = seen.find((e) => e.type === "auto_retry_start");
		assert.equal(start.attempt, 1);
		assert.match(start.errorMessage, /overloaded/i);
		assert.deepEqual(seen.find((e) => e.type === "auto_retry_end"), { type: "auto_retry_end", success: true, attempt: 1 });
		assert.deepEqual(seen.at(-1), { type: "agent_settled", aborted: false });
		assert.equal(seen.filter((e) => e.type === "agent_settled").length, 1);
		assert.equal(await client.getLastAssistantText(), "worked the second time");
		log.push("retry");
	}

	// 6. compaction (reply 10: the summary)
	{
		const started = nextEvent("compaction_start");
		const ended = nextEvent("compaction_end");
		const result = await client.compact("keep it short");
		assert.equal(result.summary, "SUMMARY: a short talk");
		assert.ok(result.tokensBefore > 0 && typeof result.firstKeptEntryId === "string");
		assert.equal(typeof result.estimatedTokensAfter, "number");
		assert.deepEqual(await started, { type: "compaction_start", reason: "manual" });
		const end = await ended;
		assert.equal(end.reason, "manual");
		assert.equal(end.result.summary, result.summary);
		assert.equal(end.aborted, false);
		assert.equal(end.willRetry, false);
		assert.equal((await client.getMessages())[0].role, "compactionSummary");
		log.push("compact");
	}

	// 7. entries and tree, in pi's entry shapes
	{
		const { entries, leafId } = await client.getEntries();
		assert.equal(leafId, entries.at(-1).id);
		for (const entry of entries) {
			assert.equal(typeof entry.id, "string");
			assert.ok("parentId" in entry);
			assert.match(entry.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
		}
		const compaction = entries.find((e) => e.type === "compaction");
		assert.ok(entries.some((e) => e.id === compaction.firstKeptEntryId));
		const users = entries.filter((e) => e.type === "message" && e.message.role === "user");
		assert.equal(users[0].message.content, "hello");
		const after = await client.getEntries(users[0].id);
		assert.deepEqual(after.entries, entries.slice(entries.indexOf(users[0]) + 1));
		await assert.rejects(client.getEntries("no-such-entry"), /not found/i);

		const { tree, leafId: treeLeaf } = await client.getTree();
		assert.equal(treeLeaf, leafId);
		const ids = [];
		const walk = (nodes) => {
			for (const node of nodes) {
				ids.push(node.entry.id);
				for (const child of node.children) assert.equal(child.entry.parentId, node.entry.id);
				walk(node.children);
			}
		};
		walk(tree);
		assert.deepEqual(ids.toSorted(), entries.map((e) => e.id).toSorted());
		// the retried failure hangs on a side branch: the tree has a fork somewhere
		const forks = [];
		const count = (nodes) => nodes.forEach((n) => (n.children.length > 1 && forks.push(n), count(n.children)));
		count(tree);
		assert.ok(forks.length >= 1);
		log.push("entries_tree");
	}

	// 8. model and thinking level
	{
		const state = await client.getState();
		const models = await client.getAvailableModels();
		assert.ok(models.some((m) => m.provider === state.model.provider && m.id === state.model.id));
		const model = await client.setModel(state.model.provider, state.model.id);
		assert.equal(model.id, state.model.id);
		await assert.rejects(client.setModel("nowhere", "nothing"), /Model not found/);
		assert.deepEqual(await client.getAvailableThinkingLevels(), ["off"]);
		await client.setThinkingLevel("high");
		assert.equal((await client.getState()).thinkingLevel, "off"); // clamped: no reasoning
		assert.equal(await client.cycleThinkingLevel(), null);
		log.push("model_thinking");
	}

	// 9. session name, stats, fork messages, then a new session
	{
		await client.setSessionName("interop");
		assert.equal((await client.getState()).sessionName, "interop");
		const stats = await client.getSessionStats();
		assert.ok(stats.totalMessages > 0 && stats.sessionId === (await client.getState()).sessionId);
		const forkable = await client.getForkMessages();
		assert.ok(forkable.length > 0 && forkable.every((m) => typeof m.entryId === "string"));
		const state = await client.getState();
		const before = state.sessionId;
		const messageCount = state.messageCount;
		assert.deepEqual(await client.newSession(), { cancelled: false });
		const fresh = await client.getState();
		assert.notEqual(fresh.sessionId, before);
		assert.notEqual(fresh.sessionFile, state.sessionFile);
		assert.equal(fresh.messageCount, 0);
		assert.deepEqual(await client.getMessages(), []);
		const { entries, leafId } = await client.getEntries();
		assert.ok(entries.every((e) => e.type !== "message"));
		assert.equal(leafId, entries.at(-1)?.id ?? null);
		// pi's usual flow: remember getState().sessionFile, hand it back to switchSession
		assert.deepEqual(await client.switchSession(state.sessionFile), { cancelled: false });
		const back = await client.getState();
		assert.equal(back.sessionId, before);
		assert.equal(back.sessionFile, state.sessionFile);
		assert.equal(back.messageCount, messageCount);
		// by a bare id too (the fresh session was never stored: it has no message)
		await client.newSession();
		assert.deepEqual(await client.switchSession(before), { cancelled: false });
		assert.equal((await client.getState()).sessionId, before);
		await assert.rejects(client.switchSession("/nowhere/sessions.db/" + before), /not a session of this store/);
		await client.switchSession(state.sessionFile);
		const forked = await client.fork(forkable[0].entryId);
		assert.equal(forked.cancelled, false);
		assert.equal(typeof forked.text, "string");
		assert.notEqual((await client.getState()).sessionId, before);
		assert.deepEqual(await client.clone(), { cancelled: false });
		log.push("session");
	}

	// 10. the rest of pi's setters, answered as pi answers them
	{
		await client.setSteeringMode("all");
		await client.setFollowUpMode("one-at-a-time");
		await client.setAutoCompaction(true);
		await client.setAutoRetry(true);
		await client.abortRetry();
		const ran = await client.bash("echo from-bash");
		assert.equal(ran.output, "from-bash\n");
		assert.equal(ran.exitCode, 0);
		await client.abortBash();
		const exported = await client.exportHtml("out.html");
		assert.match(exported.path, /out\.html$/);
		const cycled = await client.cycleModel();
		assert.ok(cycled === null || typeof cycled.model.id === "string");
		assert.deepEqual(await client.getCommands(), []);
		assert.deepEqual(await client.clearQueue(), { steering: [], followUp: [] });
		log.push("misc");
	}
} finally {
	await client.stop();
}
console.log(JSON.stringify({ ok: true, steps: log }));
