// pi's own SessionManager writes and reads the pi session files tether's import/export is tested on.
//
//   node pi-sessions.mjs write   <pi-coding-agent package dir> <out dir>
//       Writes, through pi's SessionManager, a session with every entry kind that pi version has
//       (tree.jsonl: branches, labels, a branch summary, a compaction, model and thinking changes,
//       custom messages and entries, a name; in 1.6 also context edits) and a linear one (linear.jsonl). From the linear one
//       it derives the older formats pi still reads (v2: `hookMessage` role; v1: no ids, a
//       compaction by index), as pi's migration undoes them. Prints the file names.
//   node pi-sessions.mjs context <pi-coding-agent package dir> <file> [--continue TEXT]
//       Opens the file with pi's SessionManager (on a copy: opening an old format rewrites it)
//       and prints buildSessionContext() as JSON; with --continue, first appends a user message
//       and an assistant reply, as continuing the session would, and reopens the file. The copy's
//       temporary folder is deleted before it exits.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [command, packageDir, target, ...rest] = process.argv.slice(2);
const pi = await import(pathToFileURL(path.join(packageDir, "dist", "index.js")).href);
const { SessionManager } = pi;

let clock = Date.parse("2026-01-02T03:04:05.000Z");
const tick = () => (clock += 1000);
const usage = (input, output) => ({
	input,
	output,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: input + output,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});
const user = (content) => ({ role: "user", content, timestamp: tick() });
const assistant = (text, extra = {}) => ({
	role: "assistant",
	content: [{ type: "text", text }],
	api: "openai-completions",
	provider: "faux",
	model: "faux-1",
	usage: usage(10, 5),
	stopReason: "stop",
	timestamp: tick(),
	...extra,
});

function writeTree(dir) {
	const s = SessionManager.create("/work/project", dir);
	s.appendModelChange("faux", "faux-1");
	s.appendThinkingLevelChange("medium");
	const first = s.appendMessage(user("list the files"));
	s.appendMessage({
		role: "assistant",
		content: [
			{ type: "thinking", thinking: "I should look." },
			{ type: "toolCall", id: "call_1", name: "ls", arguments: { path: "." } },
		],
		api: "openai-completions",
		provider: "faux",
		model: "faux-1",
		usage: usage(12, 7),
		stopReason: "toolUse",
		timestamp: tick(),
	});
	const listed = s.appendMessage({
		role: "toolResult",
		toolCallId: "call_1",
		toolName: "ls",
		content: [{ type: "text", text: "a.py\nb.py" }],
		isError: false,
		timestamp: tick(),
	});
	s.appendMessage(assistant("Two files: a.py and b.py."));
	s.appendLabelChange(first, "start");
	s.appendCustomEntry("demo-extension", { count: 1 });
	const note = s.appendCustomMessageEntry("demo-extension", "Injected note for the model.", true, { source: "test" });
	const ran = s.appendMessage({
		role: "bashExecution",
		command: "echo hi",
		output: "hi\n",
		exitCode: 0,
		cancelled: false,
		truncated: false,
		timestamp: tick(),
	});
	s.appendMessage(user("now delete b.py"));
	s.appendMessage(assistant("Deleted b.py."));
	// go back and take another path, leaving a summary of the one left
	s.branchWithSummary(ran, "The user asked to delete b.py; it was deleted.", { readFiles: [], modifiedFiles: ["b.py"] });
	s.appendModelChange("faux", "faux-2");
	s.appendThinkingLevelChange("high");
	const renamed = s.appendMessage(user("keep b.py, rename it to c.py"));
	s.appendMessage(assistant("Renamed b.py to c.py.", { model: "faux-2" }));
	// a compaction that keeps everything from the first prompt on, so all of the above stays in context
	s.appendCompaction("Files a.py and c.py exist; b.py was renamed.", first, 1234, { readFiles: ["a.py"], modifiedFiles: ["c.py"] });
	const thanks = s.appendMessage(user("thanks"));
	const welcome = s.appendMessage(assistant("You are welcome.", { model: "faux-2" }));
	if (typeof s.appendContextEdit === "function") {
		// pi 1.6: edits of earlier context (the latest per target wins; null leaves it out)
		s.appendContextEdit(listed, { content: "(listing cleared)" });
		s.appendContextEdit(note, null);
		s.appendContextEdit(thanks, { content: "thank you" });
		s.appendContextEdit(thanks, { content: [{ type: "text", text: "thanks a lot" }] });
		s.appendContextEdit(welcome, { content: [{ type: "text", text: "Glad to help." }] });
	}
	s.appendLabelChange(renamed, "renamed");
	s.appendLabelChange(first, undefined);
	s.appendSessionInfo("rename work");
	if (typeof s.appendUsage === "function") {
		s.appendUsage("cache_warm", "faux", "faux-2", usage(0, 0));
	}
	return s.getSessionFile();
}

function writeLinear(dir) {
	const s = SessionManager.create("/work/project", dir);
	s.appendModelChange("faux", "faux-1");
	s.appendMessage(user("hello"));
	s.appendMessage(assistant("Hi."));
	s.appendMessage({ role: "custom", customType: "hook", content: "a hook said this", display: true, timestamp: tick() });
	const kept = s.appendMessage(user("what now?"));
	s.appendMessage(assistant("Anything you like."));
	s.appendCompaction("They greeted each other.", kept, 99);
	s.appendMessage(user("bye"));
	s.appendMessage(assistant("Bye."));
	return s.getSessionFile();
}

const lines = (file) =>
	readFileSync(file, "utf8")
		.split("\n")
		.filter((l) => l.trim())
		.map((l) => JSON.parse(l));
const dump = (file, records) => writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n") + "\n");

function older(linearFile, dir) {
	const v3 = lines(linearFile);
	const v2 = v3.map((r) => {
		if (r.type === "session") return { ...r, version: 2 };
		if (r.type === "message" && r.message.role === "custom") return { ...r, message: { ...r.message, role: "hookMessage" } };
		return r;
	});
	const v2File = path.join(dir, "linear-v2.jsonl");
	dump(v2File, v2);
	const index = new Map(v2.map((r, i) => [r.id, i]));
	const v1 = v2.map((r) => {
		if (r.type === "session") {
			const { version, ...header } = r;
			return header;
		}
		const { id, parentId, ...entry } = r;
		if (entry.type === "compaction") {
			const { firstKeptEntryId, ...compaction } = entry;
			return { ...compaction, firstKeptEntryIndex: index.get(firstKeptEntryId) };
		}
		return entry;
	});
	const v1File = path.join(dir, "linear-v1.jsonl");
	dump(v1File, v1);
	return [v2File, v1File];
}

if (command === "write") {
	const tree = writeTree(target);
	const linear = writeLinear(target);
	const named = [path.join(target, "tree.jsonl"), path.join(target, "linear.jsonl")];
	copyFileSync(tree, named[0]);
	copyFileSync(linear, named[1]);
	console.log(JSON.stringify([...named, ...older(named[1], target)]));
} else if (command === "context") {
	const dir = mkdtempSync(path.join(tmpdir(), "pi-session-"));
	try {
		const copy = path.join(dir, path.basename(target));
		copyFileSync(target, copy);
		let s = SessionManager.open(copy);
		const at = rest.indexOf("--continue");
		if (at >= 0) {
			s.appendMessage(user(rest[at + 1]));
			s.appendMessage(assistant("continued"));
			s = SessionManager.open(copy);
		}
		const context = s.buildSessionContext();
		console.log(JSON.stringify({ ...context, leafId: s.getLeafId(), name: s.getSessionName?.() ?? null }));
	} finally {
		rmSync(dir, { recursive: true, force: true }); // one a run piled up in /tmp otherwise
	}
} else {
	console.error(`unknown command ${command}`);
	process.exit(2);
}
