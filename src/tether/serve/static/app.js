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

async function renderConversation() {
  if (!current) return;
  try {
    const page = await api("GET", "/api/sessions/" + encodeURIComponent(current) + "/html");
    $("conversation").srcdoc = page;
    const data = await api("GET", "/api/sessions/" + encodeURIComponent(current) + "/state");
    $("status").textContent = data.running ? "running" : "idle";
  } catch (error) { notice(error.message); }
}

function scheduleRender() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(renderConversation, 100);
}

function follow(id) {
  if (source) source.close();
  let url = "/api/sessions/" + encodeURIComponent(id) + "/events?history=false";
  if (token()) url += "&access_token=" + encodeURIComponent(token());
  source = new EventSource(url);
  source.addEventListener("entry", () => { $("live").textContent = ""; scheduleRender(); loadSessions(); });
  source.addEventListener("delta", (event) => {
    const data = JSON.parse(event.data);
    if (data.kind === "text_delta") $("live").textContent += data.delta;
  });
  source.addEventListener("status", (event) => {
    $("status").textContent = JSON.parse(event.data).running ? "running" : "idle";
  });
  source.addEventListener("deleted", () => { notice("the session was deleted"); source.close(); });
}

async function openSession(id) {
  current = id;
  $("title").textContent = id;
  $("live").textContent = "";
  for (const item of $("sessions").children) item.classList.toggle("current", item.dataset.id === id);
  follow(id);
  await renderConversation();
}

async function send(event) {
  event.preventDefault();
  const message = $("prompt").value;
  if (!message.trim()) return;
  try {
    if (current) {
      const running = $("status").textContent === "running";
      await api("POST", "/api/sessions/" + encodeURIComponent(current) + "/prompt",
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

async function abort() {
  if (!current) return;
  try { await api("POST", "/api/sessions/" + encodeURIComponent(current) + "/abort"); }
  catch (error) { notice(error.message); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("search").addEventListener("input", () => { clearTimeout(window.searchTimer); window.searchTimer = setTimeout(loadSessions, 200); });
  $("new-session").addEventListener("click", () => {
    current = null;
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
  loadSessions();
});
