// The console page: runs, one run, the audit list and the trace viewer (reviews: reviews.js).
// Everything shown from a run is hostile text: it only ever reaches the page through
// textContent (never innerHTML), after clean() makes invisible characters visible.
"use strict";

const state = {key: "", csrf: null, runs: new Map(), reviews: new Map(), runEvents: [], runId: null,
               trace: null, dirty: false, audit: [],
               filter: {q: "", status: "", offset: 0, total: 0}};

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
  if (seconds < 1) return Math.round(seconds * 1000) + " ms";
  if (seconds < 60) return seconds.toFixed(1) + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min " + Math.floor(seconds % 60) + " s";
  return Math.floor(seconds / 3600) + " h " + Math.floor(seconds % 3600 / 60) + " min";
}
// Two significant digits below a cent, cents above: never "$0.0000" for a real cost.
function fmtCost(cost) {
  if (cost === null || cost === undefined) return "–";
  if (cost === 0) return "$0";
  if (cost < 0.01) return "$" + Number(cost.toPrecision(2)).toString();
  if (cost < 100) return "$" + cost.toFixed(2);
  return "$" + Math.round(cost).toLocaleString();
}
function fmtTime(ts) {
  if (!ts) return "";
  const d = new Date(ts * 1000);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}
function shortId(id) { return String(id).slice(0, 8); }
function runTitle(run) { return run && run.name ? run.name : "Run " + shortId(run ? run.run_id : ""); }
function liveDuration(run) {
  if (run.status !== "running" || !run._received) return run.duration_seconds;
  return run.duration_seconds + (Date.now() / 1000 - run._received);
}

// ---- runs page ---------------------------------------------------------------------------

const PAGE = 50;
const STATUSES = ["", "running", "completed", "failed", "user_exit_early", "timeout"];

function runsToolbar() {
  const search = el("input", {id: "run-search", type: "search", placeholder:
    "search name, agent, id…", value: state.filter.q});
  const status = el("select", {id: "run-status"}, STATUSES.map((s) =>
    el("option", {value: s}, s || "any status")));
  status.value = state.filter.status;
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.filter.q = search.value; state.filter.offset = 0;
                               loadAll(); }, 250);
  });
  status.addEventListener("change", () => { state.filter.status = status.value;
                                            state.filter.offset = 0; loadAll(); });
  return el("div", {class: "toolbar"}, search, status);
}

function runsTable() {
  const rows = [...state.runs.values()].sort((a, b) => b.started_at - a.started_at).map((run) =>
    el("tr", {dataset: {runId: run.run_id}},
      el("td", {class: "run-name"},
        el("a", {href: "#/run/" + encodeURIComponent(run.run_id)}, runTitle(run)),
        el("div", {class: "sub"}, shortId(run.run_id) + " · started " + fmtTime(run.started_at))),
      el("td", {class: "agents"}, (run.agents || []).join(", ")),
      el("td", {class: "status status-" + run.status}, run.status),
      el("td", {class: "tasks"}, run.tasks_done + "/" + run.tasks_total),
      el("td", {class: "tokens"}, String(run.tokens)),
      el("td", {class: "cost"}, fmtCost(run.cost_usd)),
      el("td", {class: "duration", dataset: {runId: run.run_id}}, fmtDuration(liveDuration(run))),
      el("td", {class: "pending"}, pendingFor(run.run_id) ? pendingFor(run.run_id) + " pending" :
        "")));
  const f = state.filter;
  const last = Math.min(f.offset + PAGE, f.total);
  const pager = el("div", {class: "pager"},
    el("button", {id: "prev-page", onclick: () => {
      f.offset = Math.max(0, f.offset - PAGE); loadAll(); }}, "‹ Newer"),
    el("span", {id: "page-info"}, f.total ? (f.offset + 1) + "–" + last + " of " + f.total :
      "no runs"),
    el("button", {id: "next-page", onclick: () => {
      f.offset += PAGE; loadAll(); }}, "Older ›"));
  pager.querySelector("#prev-page").disabled = f.offset === 0;
  pager.querySelector("#next-page").disabled = last >= f.total;
  const table = el("table", {id: "runs"},
    el("thead", {}, el("tr", {}, ["Run", "Agents", "Status", "Tasks", "Tokens", "Cost",
                                   "Duration", "Reviews"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
  const empty = rows.length ? null : el("p", {class: "empty"}, f.q || f.status
    ? "No run matches." : "No runs yet. Connect an ensemble with listeners=[WebConsole(url, token)].");
  return el("div", {id: "runs-body"}, table, empty, pager);
}

function renderRuns(main) {
  if (main.dataset.page === "runs" && main.querySelector("#runs-body")) {
    main.querySelector("#runs-body").replaceWith(runsTable());  // the search box keeps focus
    return;
  }
  main.replaceChildren(el("h1", {}, "Runs"), runsToolbar(), runsTable());
}

function tickDurations() {
  for (const cell of document.querySelectorAll("#runs td.duration")) {
    const run = state.runs.get(cell.dataset.runId);
    if (run && run.status === "running") cell.textContent = fmtDuration(liveDuration(run));
  }
  const summary = document.querySelector("#run-summary .duration");
  const run = state.runs.get(state.runId);
  if (summary && run && run.status === "running") {
    summary.textContent = fmtDuration(liveDuration(run));
  }
}

function pendingFor(runId) {
  return [...state.reviews.values()].filter((r) => r.run_id === runId && r.status === "pending")
    .length;
}

function renderRun(main) {
  const run = state.runs.get(state.runId);
  main.append(el("p", {}, el("a", {href: "#/"}, "‹ all runs")),
    el("h1", {}, runTitle(run || {run_id: state.runId})));
  if (run) {
    main.append(el("div", {class: "summary", id: "run-summary"},
      el("span", {class: "status status-" + run.status}, run.status),
      el("span", {}, "id " + run.run_id),
      el("span", {}, "started " + fmtTime(run.started_at)),
      (run.agents || []).length ? el("span", {}, "agents: " + run.agents.join(", ")) : null,
      el("span", {}, "tasks " + run.tasks_done + "/" + run.tasks_total),
      el("span", {}, run.tokens + " tokens"), el("span", {class: "cost"}, fmtCost(run.cost_usd)),
      el("span", {class: "duration"}, fmtDuration(liveDuration(run))),
      run.error ? el("span", {class: "error"}, run.error) : null));
  }
  const decided = [...state.reviews.values()].filter((r) => r.run_id === state.runId &&
    r.status !== "pending").sort((a, b) => decidedAt(a) - decidedAt(b));
  if (decided.length) {
    main.append(el("section", {id: "run-decisions"}, el("h2", {}, "Decisions in this run"),
      el("ul", {}, decided.map((r) => el("li", {}, (isToolReview(r) ? (r.request || {}).tool_name
        : "task output") + ": " + decisionText(r))))));
  }
  const tasks = foldEvents(state.runEvents);
  // first: it names where each task ran (the time chart's labels)
  const tree = workflowTree(tasks, state.runEvents, Boolean(run && run.status !== "running"));
  const times = eventTimes(state.runEvents);
  const gantt = renderGantt(tasks, times, ganttGroups(tree, times));
  if (gantt) main.append(gantt);
  main.append(el("div", {id: "timeline"}, renderTimeline(tree)));
}

// ---- audit -------------------------------------------------------------------------------

function renderAudit(main) {
  const rows = state.audit.map((r) => {
    const d = r.decision || {};
    const req = r.request || {};
    return el("tr", {dataset: {reviewId: r.id}},
      el("td", {}, fmtTime(d.decided_at || r.deadline)),
      el("td", {class: "reviewer"}, r.status === "expired" ? "(nobody: timed out)" :
        d.decided_by || "?"),
      el("td", {class: "decision"}, r.status === "expired" ? "expired" : d.decision),
      el("td", {}, isToolReview(r) ? "tool " + req.tool_name : "task (" + req.timing + ")"),
      el("td", {}, r.run_id ? el("a", {href: "#/run/" + encodeURIComponent(r.run_id)},
        shortId(r.run_id)) : ""),
      el("td", {}, d.reason || (d.decision === "edit" ? "edited" : "")));
  });
  main.append(el("h1", {}, "Audit: every decision"),
    el("table", {id: "audit"}, el("thead", {}, el("tr", {}, ["When", "Reviewer", "Decision",
      "What", "Run", "Reason"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)),
    ...(rows.length ? [] : [el("p", {class: "empty"}, "No decision yet.")]));
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
    const tasks = traceTasks(t);
    // the trace keeps loop iterations and graph steps among its run-level events
    const events = (t.events || []).map((r) => Object.assign({}, r.fields || {},
      {type: r.type, ts: Date.parse(r.at) / 1000}));
    const tree = workflowTree(tasks, events, true);
    main.append(el("div", {class: "summary", id: "trace-summary"},
      el("span", {}, "run " + shortId(t.run_id)),
      el("span", {class: "status status-" + t.status}, t.status),
      el("span", {}, ((t.usage || {}).total_tokens || 0) + " tokens"),
      el("span", {}, fmtCost(t.cost_usd)), el("span", {}, t.workflow || "")),
      renderGantt(tasks, traceTimes(t), ganttGroups(tree, traceTimes(t))) || el("div", {}),
      el("div", {id: "timeline"}, renderTimeline(tree)));
  }
}

// ---- routing, live updates ---------------------------------------------------------------

function route() {
  const hash = location.hash || "#/";
  if (hash.startsWith("#/run/")) return ["run", decodeURIComponent(hash.slice(6))];
  if (hash === "#/trace") return ["trace", null];
  if (hash === "#/audit") return ["audit", null];
  return ["runs", null];
}

function render() {
  state.dirty = false;
  const main = document.getElementById("main");
  const [page] = route();
  if (page === "runs") renderRuns(main);
  else {
    main.replaceChildren();
    if (page === "run") renderRun(main);
    else if (page === "audit") renderAudit(main);
    else renderTrace(main);
  }
  main.dataset.page = page;
  for (const link of document.querySelectorAll("header nav a")) {
    link.classList.toggle("current", link.getAttribute("href") === "#/" + (page === "runs" ? "" :
      page === "run" ? "" : page));
  }
  renderReviews();
}

function renderSoon() {
  if (state.dirty) return;
  state.dirty = true;
  setTimeout(render, 100);
}

function received(run) { run._received = Date.now() / 1000; return run; }

async function loadAll() {
  const f = state.filter;
  const query = new URLSearchParams({limit: String(PAGE), offset: String(f.offset), q: f.q,
                                     status: f.status});
  const [runs, reviews] = await Promise.all([api("/api/runs?" + query),
                                             api("/api/reviews")]);
  if (runs.status === 401 || reviews.status === 401) { loggedOut(); return; }
  if (runs.ok) {
    state.runs = new Map(runs.data.runs.map((run) => [run.run_id, received(run)]));
    f.total = runs.data.total;
  }
  if (reviews.ok) for (const r of reviews.data.reviews) state.reviews.set(r.id, r);
  const [page, runId] = route();
  state.runId = page === "run" ? runId : null;
  state.runEvents = [];
  if (state.runId) {
    const run = await api("/api/runs/" + encodeURIComponent(state.runId));
    if (run.ok) {
      state.runs.set(state.runId, received(run.data.run)); state.runEvents = run.data.events;
    }
  }
  if (page === "audit") {
    const audit = await api("/api/audit");
    if (audit.ok) state.audit = audit.data.decisions;
  }
  render();
}

function onMessage(message) {
  if (message.kind === "run") {
    const run = received(message.run);
    const f = state.filter;
    // a new run shows on the first page when no filter hides it; known ones are updated
    if (state.runs.has(run.run_id) || run.run_id === state.runId ||
        (f.offset === 0 && !f.q && !f.status)) {
      if (!state.runs.has(run.run_id)) f.total += 1;
      state.runs.set(run.run_id, run);
      renderSoon();
    }
  } else if (message.kind === "event") {
    if (message.event.run_id === state.runId) { state.runEvents.push(message.event); renderSoon(); }
  } else if (message.kind === "review") {
    state.reviews.set(message.review.id, message.review);
    renderReviews();
    if (route()[0] !== "trace") renderSoon();
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
  setInterval(() => { tickCountdowns(); tickDurations(); }, 1000);
  stream();
}

document.addEventListener("DOMContentLoaded", start);
