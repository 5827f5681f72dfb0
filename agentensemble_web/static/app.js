// The console page: runs, one run, the audit list and the trace viewer (reviews: reviews.js).
// Everything shown from a run is hostile text: it only ever reaches the page through
// textContent (never innerHTML), after clean() makes invisible characters visible.
"use strict";

const state = {key: "", csrf: null, runs: new Map(), reviews: new Map(), runEvents: [], runId: null,
               trace: null, dirty: false};

function clean(value) {
  const text = value === null || value === undefined ? "" : String(value);
  return text.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cs}\u2028\u2029]/gu, (c) =>
    c === "\n" || c === "\t" ? c : "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(clean(child)));
  }
  return node;
}

// The session key arrives once, in the login redirect's fragment (never sent to a server);
// it is kept in this tab's sessionStorage and sent with every API call: the cookie alone, which
// the browser also sends to any other server of this host, is not enough.
function sessionKey() {
  const match = /^#key=([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (match) {
    sessionStorage.setItem("agentensemble-key", match[1]);
    history.replaceState(null, "", location.pathname + "#/");
  }
  return sessionStorage.getItem("agentensemble-key") || "";
}

async function api(path, options) {
  const init = Object.assign({credentials: "same-origin"}, options || {});
  init.headers = {"X-Session-Key": state.key};
  if (init.body !== undefined) {
    init.method = init.method || "POST";
    Object.assign(init.headers, {"Content-Type": "application/json", "X-CSRF-Token": state.csrf});
    init.body = JSON.stringify(init.body);
  }
  const answer = await fetch(path, init);
  let data = null;
  try { data = await answer.json(); } catch (e) { data = null; }
  return {status: answer.status, ok: answer.ok, data};
}

// ---- formatting --------------------------------------------------------------------------

function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 60) return seconds.toFixed(1) + " s";
  return Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s";
}
function fmtCost(cost) { return cost === null || cost === undefined ? "–" : "$" + cost.toFixed(4); }
function shortId(id) { return String(id).slice(0, 8); }

// ---- runs page ---------------------------------------------------------------------------

function renderRuns(main) {
  const rows = [...state.runs.values()].sort((a, b) => b.started_at - a.started_at).map((run) =>
    el("tr", {dataset: {runId: run.run_id}},
      el("td", {}, el("a", {href: "#/run/" + encodeURIComponent(run.run_id)}, shortId(run.run_id))),
      el("td", {class: "status status-" + run.status}, run.status),
      el("td", {class: "tasks"}, run.tasks_done + "/" + run.tasks_total),
      el("td", {class: "tokens"}, String(run.tokens)),
      el("td", {}, fmtCost(run.cost_usd)),
      el("td", {}, fmtDuration(run.duration_seconds)),
      el("td", {}, pendingFor(run.run_id) ? pendingFor(run.run_id) + " pending" : "")));
  main.append(el("h1", {}, "Runs"),
    el("table", {id: "runs"},
      el("thead", {}, el("tr", {}, ["Run", "Status", "Tasks", "Tokens", "Cost", "Duration",
                                     "Reviews"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)));
  if (!rows.length) {
    main.append(el("p", {class: "empty"}, "No runs yet. Connect an ensemble with " +
      "listeners=[WebConsole(url, token)]."));
  }
}

function pendingFor(runId) {
  return [...state.reviews.values()].filter((r) => r.run_id === runId && r.status === "pending")
    .length;
}

function renderRun(main) {
  const run = state.runs.get(state.runId);
  main.append(el("h1", {}, "Run " + shortId(state.runId)));
  if (run) {
    main.append(el("div", {class: "summary", id: "run-summary"},
      el("span", {class: "status status-" + run.status}, run.status),
      el("span", {}, "tasks " + run.tasks_done + "/" + run.tasks_total),
      el("span", {}, run.tokens + " tokens"), el("span", {}, fmtCost(run.cost_usd)),
      el("span", {}, fmtDuration(run.duration_seconds)),
      run.error ? el("span", {class: "error"}, run.error) : null));
  }
  const tasks = foldEvents(state.runEvents);
  const gantt = renderGantt(tasks, eventTimes(state.runEvents));
  if (gantt) main.append(gantt);
  main.append(el("div", {id: "timeline"}, renderTasks(tasks)));
}

// ---- trace viewer ------------------------------------------------------------------------

function renderTrace(main) {
  const input = el("input", {type: "file", id: "trace-file", accept: ".json,application/json"});
  const note = el("p", {id: "trace-error", class: "error"});
  input.addEventListener("change", () => {
    const file = input.files[0];
    if (!file) return;
    file.text().then((text) => {
      try {
        const trace = JSON.parse(text);
        if (!trace || !Array.isArray(trace.tasks) || !trace.run_id) {
          throw new Error("not an agentensemble trace (no run_id and tasks)");
        }
        state.trace = trace; render();
      } catch (err) { note.textContent = clean("Cannot open this file: " + err.message); }
    });
  });
  main.append(el("h1", {}, "Trace viewer"),
    el("p", {}, "Open a trace saved with trace.save(path). It is read here, not uploaded."),
    input, note);
  const t = state.trace;
  if (t) {
    main.append(el("div", {class: "summary", id: "trace-summary"},
      el("span", {}, "run " + shortId(t.run_id)),
      el("span", {class: "status status-" + t.status}, t.status),
      el("span", {}, ((t.usage || {}).total_tokens || 0) + " tokens"),
      el("span", {}, fmtCost(t.cost_usd)), el("span", {}, t.workflow || "")),
      renderGantt(traceTasks(t), traceTimes(t)) || el("div", {}),
      el("div", {id: "timeline"}, renderTasks(traceTasks(t))));
  }
}

// ---- routing, live updates ---------------------------------------------------------------

function route() {
  const hash = location.hash || "#/";
  if (hash.startsWith("#/run/")) return ["run", decodeURIComponent(hash.slice(6))];
  if (hash === "#/trace") return ["trace", null];
  return ["runs", null];
}

function render() {
  state.dirty = false;
  const main = document.getElementById("main");
  main.replaceChildren();
  const [page] = route();
  if (page === "run") renderRun(main);
  else if (page === "trace") renderTrace(main);
  else renderRuns(main);
  renderReviews();
}

function renderSoon() {
  if (state.dirty) return;
  state.dirty = true;
  setTimeout(render, 100);
}

async function loadAll() {
  const runs = await api("/api/runs");
  if (runs.ok) for (const run of runs.data.runs) state.runs.set(run.run_id, run);
  const reviews = await api("/api/reviews");
  if (reviews.ok) for (const r of reviews.data.reviews) state.reviews.set(r.id, r);
  const [page, runId] = route();
  state.runId = page === "run" ? runId : null;
  state.runEvents = [];
  if (state.runId) {
    const run = await api("/api/runs/" + encodeURIComponent(state.runId));
    if (run.ok) { state.runs.set(state.runId, run.data.run); state.runEvents = run.data.events; }
  }
  render();
}

function onMessage(message) {
  if (message.kind === "run") {
    state.runs.set(message.run.run_id, message.run);
    renderSoon();
  } else if (message.kind === "event") {
    if (message.event.run_id === state.runId) { state.runEvents.push(message.event); renderSoon(); }
  } else if (message.kind === "review") {
    state.reviews.set(message.review.id, message.review);
    renderReviews();
  }
}

// The live stream: server-sent events read with fetch (so the session key goes in a header).
// A dropped stream reconnects with a growing pause; a 401 means the session is gone (the
// console restarted or the access was revoked): the page says so and asks to log in again.
function setLive(text, on) {
  const live = document.getElementById("live");
  live.textContent = text; live.className = "live " + (on ? "on" : "off");
}

function loggedOut() {
  state.loggedOut = true;
  setLive("logged out", false);
  const banner = document.getElementById("login-again");
  banner.hidden = false;
}

async function readStream(answer) {
  const reader = answer.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6)).join("\n");
      if (data) onMessage(JSON.parse(data));
    }
  }
}

async function stream() {
  let pause = 500;
  while (!state.loggedOut) {
    try {
      const answer = await fetch("/api/stream", {credentials: "same-origin",
                                                headers: {"X-Session-Key": state.key}});
      if (answer.status === 401) { loggedOut(); return; }
      if (answer.ok) {
        setLive("live", true); pause = 500;
        await loadAll();
        await readStream(answer);
      }
    } catch (err) { /* the console is down or restarting: try again */ }
    if (state.loggedOut) return;
    setLive("reconnecting…", false);
    await new Promise((done) => setTimeout(done, pause));
    pause = Math.min(pause * 2, 5000);
  }
}

async function start() {
  state.key = sessionKey();
  const session = await api("/api/session");
  if (!session.ok) { loggedOut(); return; }
  state.csrf = session.data.csrf;
  state.principal = session.data.principal;
  document.getElementById("who").textContent = clean("signed in as " + state.principal);
  window.addEventListener("hashchange", loadAll);
  setupAlerts();
  setInterval(tickCountdowns, 1000);
  stream();
}

document.addEventListener("DOMContentLoaded", start);
