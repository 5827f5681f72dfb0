// How a run is shown: its events (live) or its saved trace folded into tasks, each task's
// items (prompts, model turns, tool calls, reviews, streamed text, errors), and a timeline of
// when each task ran, so parallel branches show as overlapping bars. Loaded before app.js,
// whose clean() and el() it uses; like app.js it only ever sets text, never markup.
"use strict";

function taskOf(tasks, index, event) {
  const key = index === null || index === undefined ? 0 : index;
  if (!tasks.has(key)) {
    tasks.set(key, {index: key, description: event.task_description || "", agent: event.agent_role
      || "", status: key === 0 ? "" : "running", items: [], streams: new Map()});
  }
  return tasks.get(key);
}

function foldEvents(events) {
  const tasks = new Map();
  for (const e of events) {
    const task = taskOf(tasks, e.task_index, e);
    switch (e.type) {
      case "TaskStarted":
        Object.assign(task, {description: e.task_description, agent: e.agent_role,
                             status: "running", total: e.total_tasks}); break;
      case "TaskCompleted":
        task.status = "completed";
        task.items.push({kind: "output", label: "Output", text: e.output && e.output.raw}); break;
      case "TaskFailed":
        task.status = "failed";
        task.items.push({kind: "failure", label: "Task failed", text: e.error}); break;
      case "LLMCallStarted":
        if (e.messages && e.messages.length) {
          task.items.push({kind: "prompt", label: "Prompt (" + e.messages.length + " messages)",
            text: e.messages.map((m) => "[" + m.role + "] " + (m.content || "")).join("\n\n"),
            folded: true});
        }
        break;
      case "TokenDelta": {
        let item = task.streams.get(e.call_id);
        if (!item) {
          item = {kind: "stream", label: "Streaming text", text: ""};
          task.streams.set(e.call_id, item); task.items.push(item);
        }
        item.text += e.text || ""; break;
      }
      case "LLMCallCompleted": {
        const r = e.response || {};
        const calls = (r.tool_calls || []).map((c) => c.name + "(" + c.arguments + ")");
        const usage = e.usage ? e.usage.total_tokens + " tokens" : "";
        task.items.push({kind: "model", label: "Model turn · " + e.model + " · " + usage,
          text: [r.content || "", ...calls].filter(Boolean).join("\n")}); break;
      }
      case "LLMCallFailed":
        task.items.push({kind: "failure", label: "Model call failed", text: e.error}); break;
      case "ToolCallStarted":
        task.items.push({kind: "tool", label: "Tool call · " + e.name, text: e.arguments}); break;
      case "ToolCallCompleted": {
        const rec = e.record || {};
        task.items.push({kind: rec.is_success ? "tool" : "failure",
          label: "Tool result · " + rec.name + (rec.is_success ? "" : " (failed)"),
          text: "arguments: " + rec.arguments + "\noutput: " + rec.output}); break;
      }
      case "ReviewRequested":
        task.items.push({kind: "review-item", label: "Review requested · " + e.timing +
          (e.tool_name ? " · " + e.tool_name : ""), text: e.output || ""}); break;
      case "ReviewDecided":
        task.items.push({kind: "review-item", label: "Review decided: " + e.decision,
          text: Object.keys(e.details || {}).length ? JSON.stringify(e.details) : ""}); break;
      case "GuardrailChecked":
        if (!e.passed) task.items.push({kind: "failure", label: "Guardrail " + e.guardrail,
          text: e.message || ""}); break;
      case "EnsembleFailed":
        task.items.push({kind: "failure", label: "Run failed", text: e.error}); break;
      default: break;
    }
  }
  return [...tasks.values()].filter((t) => t.index !== 0 || t.items.length)
    .sort((a, b) => a.index - b.index);
}

function renderTasks(tasks) {
  return tasks.map((task) => el("section", {class: "task", dataset: {task: String(task.index)}},
    el("h3", {}, (task.index ? "Task " + task.index + " · " : "Run · ") + task.agent + " ",
      el("span", {class: "status status-" + task.status}, task.status)),
    task.description ? el("div", {class: "meta"}, task.description) : null,
    task.items.map((item) => {
      const body = item.text ? el("pre", {}, item.text) : null;
      return el("div", {class: "item " + item.kind},
        item.folded ? el("details", {}, el("summary", {class: "label"}, item.label), body)
                    : [el("div", {class: "label"}, item.label), body]);
    })));
}

function traceTasks(trace) {
  return (trace.tasks || []).map((t) => {
    const items = [];
    if (t.system_prompt || t.user_prompt) {
      items.push({kind: "prompt", label: "Prompt", folded: true,
        text: "[system] " + (t.system_prompt || "") + "\n\n[user] " + (t.user_prompt || "")});
    }
    const timed = [];
    for (const m of t.model_turns || []) {
      const calls = (m.tool_calls || []).map((c) => c.name + "(" + c.arguments + ")");
      timed.push([m.started_at, {kind: m.error ? "failure" : "model",
        label: "Model turn · " + m.model + " · " + ((m.usage || {}).total_tokens || 0) + " tokens",
        text: [m.content || "", ...calls, m.error ? m.error.type + ": " + m.error.message : ""]
          .filter(Boolean).join("\n")}]);
    }
    for (const c of t.tool_calls || []) {
      timed.push([c.started_at || "", {kind: c.is_success === false ? "failure" : "tool",
        label: "Tool call · " + c.name, text: "arguments: " + c.arguments + "\noutput: " +
        (c.output || "")}]);
    }
    for (const r of t.reviews || []) {
      timed.push([r.requested_at, {kind: "review-item", label: "Review · " + r.timing + " · " +
        (r.decision || "pending"), text: r.output || ""}]);
    }
    timed.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    items.push(...timed.map((pair) => pair[1]));
    if (t.output) items.push({kind: "output", label: "Output", text: t.output});
    if (t.error) items.push({kind: "failure", label: "Task failed",
                             text: t.error.type + ": " + t.error.message});
    return {index: t.index, description: t.description, agent: t.agent_role, status: t.status,
            items};
  });
}

function eventTimes(events) {
  const times = new Map();
  for (const e of events) {
    if (!e.task_index) continue;
    const entry = times.get(e.task_index) || {start: null, end: null};
    if (e.type === "TaskStarted") entry.start = e.ts;
    if (e.type === "TaskCompleted" || e.type === "TaskFailed") entry.end = e.ts;
    times.set(e.task_index, entry);
  }
  return times;
}

function traceTimes(trace) {
  const times = new Map();
  for (const t of trace.tasks || []) {
    const start = Date.parse(t.started_at) / 1000;
    const end = t.ended_at ? Date.parse(t.ended_at) / 1000 : null;
    times.set(t.index, {start: isNaN(start) ? null : start, end: end === null || isNaN(end) ? null : end});
  }
  return times;
}

function renderGantt(tasks, times) {
  const known = tasks.filter((t) => times.has(t.index) && times.get(t.index).start !== null);
  if (!known.length) return null;
  const now = Date.now() / 1000;
  const starts = known.map((t) => times.get(t.index).start);
  const ends = known.map((t) => times.get(t.index).end || now);
  const first = Math.min(...starts);
  const span = Math.max(Math.max(...ends) - first, 0.001);
  return el("div", {id: "gantt"}, known.map((task) => {
    const time = times.get(task.index);
    const bar = el("div", {class: "bar status-bg-" + task.status, dataset: {task: String(task.index)}});
    bar.style.left = ((time.start - first) / span * 100).toFixed(2) + "%";
    bar.style.width = Math.max(1, ((time.end || now) - time.start) / span * 100).toFixed(2) + "%";
    return el("div", {class: "gantt-row"},
      el("span", {class: "gantt-label"}, "Task " + task.index + " · " + task.agent),
      el("div", {class: "track"}, bar));
  }));
}
