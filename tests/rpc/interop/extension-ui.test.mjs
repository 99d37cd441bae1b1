// pi's own RpcClient (0.73.1 or 1.6.0: its module is $PI_MODULE) drives `tether --mode rpc` with the
// example extensions loaded, and answers their `extension_ui_request` dialogs the way a pi client
// does: an `extension_ui_response` line with the request's id. Run by
// tests/rpc/test_rpc_extensions.py, which sets TETHER_COMMAND, TETHER_HOME, TETHER_SCRIPTED (the
// scripted model's replies) and EXAMPLES (examples/extensions). Prints {"ok": true, "steps": [...]}.
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";

const { RpcClient } = await import(process.env.PI_MODULE);
const here = path.dirname(fileURLToPath(import.meta.url));
const examples = process.env.EXAMPLES;
const extensions = ["rm_guard", "word_count", "todo_command", "date_hook", "echo_provider"].flatMap((name) => [
	"-e",
	path.join(examples, `${name}.py`),
]);
const client = new RpcClient({ cliPath: path.join(here, "tether-shim.mjs"), cwd: process.cwd(), args: ["--yes", ...extensions] });

const requests = [];
let confirmAnswer = false;
function answer(frame) {
	client.process.stdin.write(`${JSON.stringify(frame)}\n`);
}
client.onEvent((event) => {
	if (event.type !== "extension_ui_request") return;
	requests.push(event);
	if (event.method === "confirm") answer({ type: "extension_ui_response", id: event.id, confirmed: confirmAnswer });
});

/** Send a prompt and wait for its run to settle (tether's `prompt_result`). */
async function run(text) {
	const settled = new Promise((resolve) => {
		const off = client.onEvent((event) => {
			if (event.type === "prompt_result") {
				off();
				resolve(event);
			}
		});
	});
	await client.prompt(text);
	const result = await settled;
	assert.equal(result.status, "completed", JSON.stringify(result));
}

async function lastToolResult() {
	const messages = await client.getMessages();
	return messages.filter((m) => m.role === "toolResult").at(-1);
}

const steps = [];
await client.start();
try {
	// get_commands lists the extension's command and the user's template
	const commands = await client.getCommands();
	const byName = Object.fromEntries(commands.map((c) => [c.name, c]));
	assert.equal(byName.todos.source, "extension");
	assert.equal(byName.review.source, "prompt");
	assert.equal(byName.review.description, "Review a file");
	assert.equal(byName.review.sourceInfo.scope, "user");
	steps.push("get_commands");

	// rm_guard: the client says no, then yes (scripted replies 1-4)
	await run("clean up");
	assert.equal(requests.at(-1).method, "confirm");
	assert.equal(requests.at(-1).title, "Allow dangerous command?");
	assert.equal(requests.at(-1).message, "rm -rf build");
	let result = await lastToolResult();
	assert.equal(result.isError, true);
	assert.equal(result.content[0].text, "The user did not allow `rm -rf build`.");
	confirmAnswer = true;
	await run("clean up, really");
	result = await lastToolResult();
	assert.equal(result.isError, false, JSON.stringify(result));
	steps.push("rm_guard");

	// word_count: a tool with parameters (replies 5-6)
	await run("count the words");
	result = await lastToolResult();
	assert.equal(result.content[0].text, "notes.txt: 3 words of at least 3 letters");
	steps.push("word_count");

	// todo_command: its answer comes as a notify request, nothing to answer; the prompt is
	// answered once the command has run ("handled" in 1.x), with no run events, as pi answers it
	const before = requests.length;
	const seen = [];
	const offSeen = client.onEvent((event) => seen.push(event.type));
	await client.prompt("/todos");
	offSeen();
	assert.deepEqual(seen.filter((t) => t !== "extension_ui_request"), []);
	const notes = requests.slice(before).filter((r) => r.method === "notify");
	assert.deepEqual(
		notes.map((r) => r.message),
		["app.py:1: x = 1  # TODO: rename"],
	);
	steps.push("todo_command");

	// echo_provider + date_hook: switch to the extension's model; the echo shows the date the hook added
	const model = await client.setModel("echo", "echo-1");
	assert.equal(model.provider, "echo");
	await run("what day is it?");
	const text = await client.getLastAssistantText();
	assert.equal(text, `echo: (Today's date: ${process.env.TODAY})`);
	steps.push("echo_provider_date_hook");
} finally {
	await client.stop();
}
console.log(JSON.stringify({ ok: true, steps }));
