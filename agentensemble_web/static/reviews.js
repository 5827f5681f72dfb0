// Reviews: the pending cards, the decided list, and everything that makes a pending review
// impossible to miss (tab title and icon with the count, a desktop notification, a sound, a
// countdown that turns urgent). Loaded before app.js; uses its clean(), el(), api() and state
// when called. Like app.js it only ever sets text, never markup.
"use strict";

const URGENT_SECONDS = 30;
const DECIDED_SHOWN = 5;
const ON_TIMEOUT = {
  exit_early: (tool) => tool ? "the call is rejected" : "the run stops (exit early)",
  continue: (tool) => tool ? "the call goes ahead" : "the run continues as if approved",
  fail: () => "the run fails",
};
const TIMING = {
  before_execution: "before the task starts",
  during_execution: "before the tool call",
  after_execution: "after the task, on its output",
};

function fmtSpan(seconds) {
  if (seconds < 90) return Math.round(seconds) + " seconds";
  if (seconds < 5400) return Math.round(seconds / 60) + " minutes";
  return (seconds / 3600).toFixed(1) + " hours";
}

function isToolReview(review) {
  const req = review.request || {};
  return req.timing === "during_execution" && !!req.tool_name;
}

function timeoutSentence(review) {
  const req = review.request || {};
  const seconds = req.timeout_seconds;
  const then = (ON_TIMEOUT[req.on_timeout] || (() => "its on_timeout rule (" + req.on_timeout +
    ") applies"))(isToolReview(review));
  if (!seconds) return "No time limit: the run waits for an answer.";
  return "If nobody answers in " + fmtSpan(seconds) + ", " + then + ".";
}

function secondsLeft(review) {
  if (review.deadline === null || review.deadline === undefined) return null;
  return Math.max(0, review.deadline - Date.now() / 1000);
}

function countdownText(review) {
  const left = secondsLeft(review);
  if (left === null) return "no time limit";
  const whole = Math.round(left);
  const text = whole >= 60 ? Math.floor(whole / 60) + " min " + String(whole % 60).padStart(2, "0")
    + " s" : whole + " s";
  return text + " left";
}

function pretty(text) {
  try {
    const value = JSON.parse(text);
    if (value !== null && typeof value === "object") return JSON.stringify(value, null, 2);
  } catch (err) { /* not JSON: shown as it is */ }
  return text;
}

const DECISION_WORDS = {continue: "Approved", edit: "Approved with an edit",
                        exit_early: "Rejected"};

function decisionText(review) {
  if (review.status === "expired" && review.abandoned) {
    return "Nobody is waiting for this answer any more: its run stopped asking (its process " +
      "ended, or the console restarted after it did).";
  }
  if (review.status === "expired") {
    return "Nobody answered in time: " + timeoutSentence(review).replace(/^If nobody.*?, /, "");
  }
  const d = review.decision || {};
  let word = DECISION_WORDS[d.decision] || d.decision;
  if (d.decision === "exit_early" && !isToolReview(review)) word = "Run stopped (exit early)";
  const when = d.decided_at ? new Date(d.decided_at * 1000).toLocaleString() : "";
  return word + " by " + (d.decided_by || "?") + " at " + when +
    (d.reason ? " · reason: " + d.reason : "");
}

async function sendDecision(review, body, card) {
  const result = await api("/api/reviews/" + encodeURIComponent(review.id) + "/decision", {body});
  const note = card.querySelector(".review-status");
  if (result.ok) { note.textContent = "Decision sent."; onMessage({kind: "review",
    review: result.data}); return; }
  const error = (result.data && result.data.error) || "HTTP " + result.status;
  const won = result.data && result.data.decision ? " (" + result.data.decision.decision + " by " +
    result.data.decision.decided_by + ")" : "";
  note.textContent = clean("Refused: " + error + won);
}

function reviewCard(review) {
  const req = review.request || {};
  const ctx = review.context || {};
  const isTool = isToolReview(review);
  const card = el("article", {class: "review", dataset: {reviewId: review.id}, tabindex: "0"});
  const status = el("div", {class: "review-status", role: "status"});
  const editor = el("textarea", {class: "editor", hidden: ""});
  editor.value = isTool ? pretty(req.output || "") : req.output || "";
  const sendEdit = el("button", {class: "send-edit", hidden: "", onclick: () => {
    const text = editor.value;
    if (isTool) {
      let parsed;
      try { parsed = JSON.parse(text); } catch (err) {
        status.textContent = clean("Not valid JSON: " + err.message);
        return;
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        status.textContent = "The arguments must be a JSON object.";
        return;
      }
    }
    sendDecision(review, {decision: "edit", revised_output: text}, card);
  }}, "Send edit");
  const reason = el("input", {class: "reason", placeholder: "reason (optional, the agent sees it)"});
  const confirmText = isTool ? "Reject this call? The agent is told it was rejected."
    : "Exit early? This stops the whole run now.";
  const confirmBox = el("div", {class: "confirm", hidden: ""},
    el("span", {}, confirmText), reason,
    el("button", {class: "send-reject danger", onclick: () =>
      sendDecision(review, {decision: "exit_early", reason: reason.value || null}, card)},
      isTool ? "Yes, reject" : "Yes, exit early"),
    el("button", {class: "cancel", onclick: () => { confirmBox.hidden = true; }}, "Cancel"));
  const runLink = review.run_id ? el("a", {class: "run-link",
    href: "#/run/" + encodeURIComponent(review.run_id)}, "run " + shortId(review.run_id)) : "run ?";
  card.append(
    el("div", {class: "review-head"},
      el("span", {class: "what"}, isTool ? "Tool call: " + req.tool_name : "Task review, " +
        (TIMING[req.timing] || req.timing)),
      el("span", {class: "countdown"}, countdownText(review))),
    el("div", {class: "meta"}, el("span", {class: "agent-slot"}),
      runLink, " · ", el("span", {class: "timeout-rule"}, timeoutSentence(review))),
    el("div", {}, el("strong", {}, "Task: "), req.task_description || ""),
    req.prompt ? el("div", {}, el("strong", {}, "Asks: "), req.prompt) : null,
    el("div", {class: "reasoning-slot"}),
    el("div", {class: "label"}, isTool ? "Arguments" : "Output"),
    el("pre", {class: "request-output"}, isTool ? pretty(req.output || "") : req.output || ""),
    el("div", {class: "actions"},
      el("button", {class: "approve", title: "A", onclick: () =>
        sendDecision(review, {decision: "continue"}, card)}, "Approve"),
      el("button", {class: "edit", title: "E", onclick: () => {
        editor.hidden = false; sendEdit.hidden = false; editor.focus(); }}, "Edit…"),
      el("button", {class: "reject danger", title: "R", onclick: () => {
        confirmBox.hidden = false; reason.focus(); }}, isTool ? "Reject…" : "Exit early…")),
    editor, sendEdit, confirmBox, status);
  fillContext(card, ctx);
  return card;
}

// Who asks and why may arrive after the card (the run's events come on their own connection):
// filled in place, so nothing the reviewer typed or is about to click is replaced.
function fillContext(card, ctx) {
  if (!ctx || card.dataset.context === "1" || !(ctx.agent_role || ctx.reasoning)) return;
  card.dataset.context = "1";
  if (ctx.agent_role) {
    card.querySelector(".agent-slot").replaceChildren(
      el("span", {class: "agent"}, "Agent: " + ctx.agent_role), " · ");
  }
  if (ctx.reasoning) {
    card.querySelector(".reasoning-slot").replaceChildren(
      el("div", {class: "label"}, "The model's reasoning"),
      el("pre", {class: "reasoning"}, ctx.reasoning));
  }
}

function decidedCard(review) {
  const req = review.request || {};
  const d = review.decision || {};
  const kind = review.status === "expired" ? "expired" : d.decision === "exit_early" ? "rejected"
    : "approved";
  return el("article", {class: "review done " + kind, dataset: {reviewId: review.id}},
    el("div", {class: "review-head"},
      el("span", {class: "what"}, isToolReview(review) ? "Tool call: " + req.tool_name :
        "Task review, " + (TIMING[req.timing] || req.timing)),
      review.run_id ? el("a", {class: "run-link", href: "#/run/" +
        encodeURIComponent(review.run_id)}, "run " + shortId(review.run_id)) : null),
    el("div", {class: "decided-by"}, decisionText(review)),
    el("details", {}, el("summary", {}, d.decision === "edit" ? "the edited version" :
      isToolReview(review) ? "the arguments" : "the output"),
      el("pre", {class: "request-output"}, d.decision === "edit" ? d.revised_output || ""
        : isToolReview(review) ? pretty(req.output || "") : req.output || "")));
}

function renderReviews() {
  const box = document.getElementById("reviews");
  const all = [...state.reviews.values()];
  const pending = all.filter((r) => r.status === "pending")
    .sort((a, b) => a.created_at - b.created_at);
  const counter = document.getElementById("review-count");
  counter.textContent = String(pending.length);
  counter.classList.toggle("zero", !pending.length);
  const shown = new Set(pending.map((r) => r.id));
  for (const card of [...box.children]) {
    if (!shown.has(card.dataset.reviewId)) card.remove();
  }
  const present = new Set([...box.children].map((c) => c.dataset.reviewId));
  for (const review of pending) {
    if (!present.has(review.id)) box.append(reviewCard(review));
    else fillContext(box.querySelector(`[data-review-id="${CSS.escape(review.id)}"]`),
                     review.context);
  }
  const decided = all.filter((r) => r.status !== "pending").sort((a, b) =>
    decidedAt(b) - decidedAt(a)).slice(0, DECIDED_SHOWN);
  document.getElementById("decided").replaceChildren(...decided.map(decidedCard));
  document.getElementById("decided-count").textContent = String(all.length - pending.length);
  document.getElementById("decided-panel").hidden = !decided.length;
  announce(pending);
}

function decidedAt(review) {
  return review.decision ? review.decision.decided_at : review.deadline || review.created_at;
}

function tickCountdowns() {
  for (const card of document.querySelectorAll("#reviews .review")) {
    const review = state.reviews.get(card.dataset.reviewId);
    if (!review) continue;
    card.querySelector(".countdown").textContent = countdownText(review);
    const left = secondsLeft(review);
    card.classList.toggle("urgent", left !== null && left <= URGENT_SECONDS);
  }
}

// ---- being noticed: title, icon, notification, sound ---------------------------------------

const settings = {
  get notify() { return localStorage.getItem("agentensemble-notify") !== "off"; },
  set notify(on) { localStorage.setItem("agentensemble-notify", on ? "on" : "off"); },
  get sound() { return localStorage.getItem("agentensemble-sound") !== "off"; },
  set sound(on) { localStorage.setItem("agentensemble-sound", on ? "on" : "off"); },
};
const announced = new Set();

function favicon(count) {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 32;
  const g = canvas.getContext("2d");
  g.fillStyle = "#23272f"; g.fillRect(0, 0, 32, 32);
  g.fillStyle = "#7fdc8c"; g.font = "bold 20px sans-serif"; g.fillText("ae", 3, 22);
  if (count) {
    g.fillStyle = "#d93025"; g.beginPath(); g.arc(22, 10, 10, 0, 2 * Math.PI); g.fill();
    g.fillStyle = "#fff"; g.font = "bold 14px sans-serif"; g.textAlign = "center";
    g.fillText(count > 9 ? "9+" : String(count), 22, 15);
  }
  let link = document.querySelector("link[rel=icon]");
  if (!link) { link = el("link", {rel: "icon"}); document.head.append(link); }
  link.href = canvas.toDataURL("image/png");
}

function beep() {
  try {
    const Audio = window.AudioContext || window.webkitAudioContext;
    state.audio = state.audio || new Audio();
    const osc = state.audio.createOscillator();
    const gain = state.audio.createGain();
    osc.frequency.value = 880; gain.gain.value = 0.08;
    osc.connect(gain); gain.connect(state.audio.destination);
    osc.start(); osc.stop(state.audio.currentTime + 0.25);
  } catch (err) { /* no audio here */ }
}

function askPermissionOnce() {
  if (!("Notification" in window) || Notification.permission !== "default") return;
  if (localStorage.getItem("agentensemble-notify-asked")) return;
  localStorage.setItem("agentensemble-notify-asked", "1");
  Notification.requestPermission().then(renderSettings);
}

function notify(review) {
  if (!settings.notify || !("Notification" in window)) return;
  if (Notification.permission === "default") { askPermissionOnce(); return; }
  if (Notification.permission !== "granted") return;
  const req = review.request || {};
  const note = new Notification("Review needed: " + clean(req.tool_name || "task output"), {
    body: clean((req.task_description || "").slice(0, 200)) + "\n" + timeoutSentence(review),
    tag: review.id, requireInteraction: true});
  note.onclick = () => { window.focus(); note.close(); };
  document.body.dataset.notified = String(Number(document.body.dataset.notified || 0) + 1);
}

function announce(pending) {
  const count = pending.length;
  document.title = (count ? "(" + count + ") " : "") + "agentensemble console";
  if (state.iconCount !== count) { favicon(count); state.iconCount = count; }
  const fresh = pending.filter((r) => !announced.has(r.id));
  for (const review of fresh) { announced.add(review.id); notify(review); }
  if (fresh.length && settings.sound) beep();
}

function renderSettings() {
  const bell = document.getElementById("toggle-notify");
  const perm = "Notification" in window ? Notification.permission : "unsupported";
  bell.textContent = "Notifications: " + (!settings.notify ? "off" : perm === "granted" ? "on" :
    perm === "denied" ? "blocked by the browser" : "not allowed yet");
  document.getElementById("toggle-sound").textContent = "Sound: " + (settings.sound ? "on" : "muted");
}

function setupAlerts() {
  document.getElementById("toggle-notify").addEventListener("click", () => {
    if ("Notification" in window && Notification.permission === "default") {
      settings.notify = true;
      localStorage.setItem("agentensemble-notify-asked", "1");
      Notification.requestPermission().then(renderSettings);
    } else {
      settings.notify = !settings.notify;
    }
    renderSettings();
  });
  document.getElementById("toggle-sound").addEventListener("click", () => {
    settings.sound = !settings.sound; renderSettings();
  });
  renderSettings();
  document.addEventListener("keydown", onKey);
}

// Keyboard: A approves, E edits, R rejects (asks to confirm) the oldest pending review.
function onKey(event) {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA")) return;
  const card = document.querySelector("#reviews .review");
  if (!card) return;
  const button = {a: ".approve", e: ".edit", r: ".reject"}[event.key.toLowerCase()];
  if (!button) return;
  event.preventDefault();
  card.querySelector(button).click();
}
