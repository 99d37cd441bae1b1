// P2 on the reference: 200 turns x 3 parallel tool calls with a scripted model, events/s.
// The scripted model is the conformance oracle's (a macrotask tick before each block and delta),
// the tools answer at once, the emit sink only counts. Prints one JSON line.
// P2_PI=16 runs pi-agent-core 1.6 (installed in ../reference16, on its Node 22) instead of 0.73.1.
const scope = process.env.P2_PI === "16" ? "../reference16/node_modules/@earendil-works" : "@mariozechner";
const at = (name) => (scope.startsWith(".") ? `${scope}/${name}/dist/index.js` : `${scope}/${name}`);
const { runAgentLoop } = await import(at("pi-agent-core"));
const { createAssistantMessageEventStream } = await import(at("pi-ai"));

const TURNS = Number(process.env.P2_TURNS ?? 200);
const CALLS = 3;
const REPEATS = Number(process.env.P2_REPEATS ?? 15);

const ZERO_USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const MODEL = { id: "scripted", name: "scripted", api: "scripted", provider: "scripted", baseUrl: "", reasoning: false, input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 100000, maxTokens: 1000 };
const tick = () => new Promise((resolve) => setImmediate(resolve));

function script() {
	const responses = [];
	for (let t = 0; t < TURNS; t++) {
		const content = [];
		for (let c = 0; c < CALLS; c++) content.push({ type: "toolCall", id: `t${t}c${c}`, name: "echo", arguments: { text: `turn ${t} call ${c}` } });
		responses.push({ content });
	}
	responses.push({ content: [{ type: "text", chunks: ["all", " done"] }] });
	return responses;
}

function makeStreamFn(responses) {
	let call = 0;
	return (_model, _context, options) => {
		const stream = createAssistantMessageEventStream();
		const signal = options?.signal;
		const scripted = responses[call++];
		const partial = { role: "assistant", content: [], api: "scripted", provider: "scripted", model: "scripted", usage: ZERO_USAGE, stopReason: "stop", timestamp: Date.now() };
		(async () => {
			await tick();
			if (signal?.aborted) throw new Error("unexpected abort");
			stream.push({ type: "start", partial });
			const blocks = scripted.content;
			for (let i = 0; i < blocks.length; i++) {
				await tick();
				const b = blocks[i];
				if (b.type === "text") {
					partial.content.push({ type: "text", text: "" });
					stream.push({ type: "text_start", contentIndex: i, partial });
					for (const chunk of b.chunks) {
						await tick();
						partial.content[i].text += chunk;
						stream.push({ type: "text_delta", contentIndex: i, delta: chunk, partial });
					}
					stream.push({ type: "text_end", contentIndex: i, content: partial.content[i].text, partial });
				} else {
					const callBlock = { type: "toolCall", id: b.id, name: b.name, arguments: {} };
					partial.content.push(callBlock);
					stream.push({ type: "toolcall_start", contentIndex: i, partial });
					await tick();
					callBlock.arguments = structuredClone(b.arguments);
					stream.push({ type: "toolcall_delta", contentIndex: i, delta: JSON.stringify(b.arguments), partial });
					stream.push({ type: "toolcall_end", contentIndex: i, toolCall: { ...callBlock }, partial });
				}
			}
			await tick();
			const stopReason = partial.content.some((c) => c.type === "toolCall") ? "toolUse" : "stop";
			const message = { ...partial, stopReason };
			stream.push({ type: "done", reason: stopReason, message });
			stream.end(message);
		})();
		return stream;
	};
}

const echo = {
	name: "echo",
	label: "echo",
	description: "Echo text",
	parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
	async execute(_id, params) {
		return { content: [{ type: "text", text: params.text }], details: {} };
	},
};

async function once() {
	let events = 0;
	const config = {
		model: MODEL,
		convertToLlm: (messages) => messages.filter((m) => ["user", "assistant", "toolResult"].includes(m.role)),
		toolExecution: "parallel",
		getSteeringMessages: async () => [],
		getFollowUpMessages: async () => [],
	};
	const context = { systemPrompt: "bench", messages: [], tools: [echo] };
	const prompt = { role: "user", content: "go", timestamp: Date.now() };
	const cpuStart = process.cpuUsage();
	const start = performance.now();
	const result = await runAgentLoop([prompt], context, config, async () => { events++; }, undefined, makeStreamFn(script()));
	const seconds = (performance.now() - start) / 1000;
	const cpu = process.cpuUsage(cpuStart);
	const cpuSeconds = (cpu.user + cpu.system) / 1e6;
	// pi 1.x opens the run with a system message declaring the tools (two more events).
	const declared = process.env.P2_PI === "16" ? 1 : 0;
	if (result.length !== 1 + TURNS * (1 + CALLS) + 1 + declared) throw new Error(`unexpected result length ${result.length}`);
	return { events, seconds, cpuSeconds };
}

// Warm-up: the JIT reaches its steady state after several runs (P2_WARMUP, default 1).
for (let i = 0; i < Number(process.env.P2_WARMUP ?? 1); i++) await once();
const runs = [];
for (let i = 0; i < REPEATS; i++) runs.push(await once());
// Best of the repeats, by wall clock and by CPU time (the fair figure on a shared machine).
const seconds = Math.min(...runs.map((r) => r.seconds));
const cpuSeconds = Math.min(...runs.map((r) => r.cpuSeconds));
const events = runs[0].events;
const cpuRuns = runs.map((r) => r.cpuSeconds);
process.stdout.write(`${JSON.stringify({ turns: TURNS, calls: CALLS, events, seconds, cpuSeconds, cpuRuns, eventsPerSecond: events / seconds, eventsPerCpuSecond: events / cpuSeconds })}\n`);
