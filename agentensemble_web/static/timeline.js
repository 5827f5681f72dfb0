// How a run is shown: its events (live) or its saved trace folded into tasks, each task's
// items (prompts, model turns, tool calls, reviews, streamed text, errors), and a timeline of
// when each task ran, so parallel branches show as overlapping bars. Loops, graph steps and
// nested tasks are grouped by workflow.js, memory retrievals shown by memory.js. Loaded before
// app.js, whose clean() and el() it uses; like app.js it only ever sets text, never markup.
"use strict";

const QUIET = new Set(["EnsembleStarted", "EnsembleCompleted", "TaskStarted", "TaskCompleted",
                       "LoopIterationCompleted", "GraphStepCompleted"]);  // these: workflow.js
const GENERIC_SKIP = new Set(["type", "run_id", "ts", "task_index", "agent_role",
                              "task_description", "parent_run_id"]);

function taskOf(tasks, index, event) {
  const key = index === null || index === undefined ? 0 : index;
  if (!tasks.has(key)) {
    tasks.set(key, {index: key, description: event.task_description || "", agent: event.agent_role
      || "", status: key === 0 ? "" : "running", items: [], streams: new Map(), calls: new Map(),
      start: null, end: null, cost: 0});
  }
  return tasks.get(key);
}

function prettyArgs(text) {
  if (typeof pretty === "function") return pretty(text || "");
  return text || "";
}

function costNote(cost) {
  return typeof cost === "number" && cost > 0 ? " · " + fmtCost(cost) : "";
}

function durationNote(seconds) {
  return typeof seconds === "number" ? " · " + fmtDuration(seconds) : "";
}

// An event kind this page does not know yet (loop iterations, graph steps, memory retrievals,
// ...) is shown as its name and fields, so a new kind is visible before it gets its own view.
function genericItem(e) {
  const fields = {};
  for (const [key, value] of Object.entries(e)) if (!GENERIC_SKIP.has(key)) fields[key] = value;
  const text = Object.keys(fields).length ? JSON.stringify(fields, null, 2) : "";
  const words = String(e.type).replace(/([a-z])([A-Z])/g, "$1 $2");
  return {kind: "other", label: words + (e.agent_role ? " · " + e.agent_role : ""), text,
          folded: text.length > 400, type: e.type};
}

function foldEvents(events) {
  const tasks = new Map();
  for (const e of events) {
    const task = taskOf(tasks, e.task_index, e);
    switch (e.type) {
      case "EnsembleStarted": case "EnsembleCompleted": break;
      case "TaskStarted":
        Object.assign(task, {description: e.task_description, agent: e.agent_role,
                             status: "running", total: e.total_tasks, start: e.ts});
        if (Array.isArray(e.within)) task.within = e.within;  // absent in runs saved before it
        break;
      case "TaskCompleted": {
        task.status = "completed"; task.end = e.ts;
        const raw = e.output && e.output.raw;
        const last = [...task.items].reverse().find((i) => i.kind === "model");
        if (last && raw && last.content && last.content.trim() === String(raw).trim()) {
          last.text = last.calls;  // the final answer is shown once, as the output
          last.label += " · final answer (below)";
        }
        task.items.push({kind: "output", label: "Output", text: raw}); break;
      }
      case "TaskFailed":
        task.status = "failed"; task.end = e.ts;
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
        const streamed = task.streams.get(e.call_id);
        if (streamed) task.items.splice(task.items.indexOf(streamed), 1);  // now the turn itself
        const calls = (r.tool_calls || []).map((c) => "→ asks for " + c.name).join("\n");
        const usage = e.usage ? e.usage.total_tokens + " tokens" : "";
        if (typeof e.cost_usd === "number") task.cost += e.cost_usd;
        task.items.push({kind: "model", label: "Model turn · " + e.model + " · " + usage +
          durationNote(e.duration) + costNote(e.cost_usd), content: r.content || "", calls,
          text: [r.content || "", calls].filter(Boolean).join("\n")}); break;
      }
      case "LLMCallFailed":
        task.items.push({kind: "failure", label: "Model call failed" + durationNote(e.duration),
          text: e.error}); break;
      case "ToolCallStarted": {
        const item = {kind: "tool", label: "Tool call · " + e.name + " · running…",
          text: "arguments:\n" + prettyArgs(e.arguments)};
        task.calls.set(e.call_id, item); task.items.push(item); break;
      }
      case "ToolCallCompleted": {
        const rec = e.record || {};
        let item = e.call_id ? task.calls.get(e.call_id) : null;
        if (!item) { item = {kind: "tool"}; task.items.push(item); }
        item.kind = rec.is_success ? "tool" : "failure";
        item.label = "Tool call · " + rec.name + (rec.is_success ? "" : " (failed)") +
          durationNote(rec.duration);
        item.text = "arguments:\n" + prettyArgs(rec.arguments) + (rec.model_arguments ?
          "\n(the model asked for: " + rec.model_arguments + ")" : "") + "\noutput:\n" +
          (rec.output || ""); break;
      }
      case "ReviewRequested":
        task.items.push({kind: "review-item", label: "Review requested · " + e.timing +
          (e.tool_name ? " · " + e.tool_name : ""), text: e.tool_name ? "" : e.output || ""});
        break;
      case "ReviewDecided":
        task.items.push({kind: "review-item", label: "Review decided: " + e.decision,
          text: Object.keys(e.details || {}).length ? JSON.stringify(e.details) : ""}); break;
      case "GuardrailChecked":
        if (!e.passed) task.items.push({kind: "failure", label: "Guardrail " + e.guardrail,
          text: e.message || ""}); break;
      case "MemoryRetrieved":
        task.items.push(memoryItem(e)); break;
      case "EnsembleFailed":
        task.items.push({kind: "failure", label: "Run failed", text: e.error}); break;
      default:
        if (!QUIET.has(e.type)) task.items.push(genericItem(e));
    }
  }
  return [...tasks.values()].filter((t) => t.index !== 0 || t.items.length)
    .sort((a, b) => a.index - b.index);
}

function renderTask(task) {
  return el("section", {class: "task", dataset: {task: String(task.index)}},
    el("h3", {}, (task.index ? "Task " + task.index + " · " : "Run · ") + task.agent + " ",
      el("span", {class: "status status-" + task.status}, task.status),
      task.start && task.end ? el("span", {class: "took"}, fmtDuration(task.end - task.start))
        : null,
      task.cost ? el("span", {class: "took"}, fmtCost(task.cost)) : null),
    task.description ? el("div", {class: "meta"}, task.description) : null,
    task.items.map((item) => {
      const body = item.view ? item.view() : item.text ? el("pre", {}, item.text) : null;
      return el("div", {class: "item " + item.kind, dataset: item.type ? {type: item.type} : {}},
        item.folded ? el("details", {}, el("summary", {class: "label"}, item.label), body)
                    : [el("div", {class: "label"}, item.label), body]);
    }));
}

// A saved trace (schema 2) may store a task's user prompt by reference: the first `length`
// characters of the prompt of tasks[start_of], an earlier task, then `rest`. The file is
// hostile input: a reference that is not to an earlier prompt, or that asks for more than it
// holds, is shown as such; and the prompts shown add up to at most PROMPT_CHARS_SHOWN (a
// small file naming one big prompt many times would otherwise expand to gigabytes here).
const PROMPT_CHARS_SHOWN = 32 * 1024 * 1024;

function tracePrompts(tasks) {
  const sizes = [];  // each prompt's length (null: not valid), known without expanding it
  const texts = [];  // each prompt as shown
  const whole = [];  // whether texts[i] is the prompt itself (not a note about it)
  let shown = 0;
  tasks.forEach((t, position) => {
    const ref = t && t.user_prompt_ref;
    let size = null;
    let text = null;
    let real = false;
    if (ref == null) {
      text = t && typeof t.user_prompt === "string" ? t.user_prompt : null;
      size = text === null ? 0 : text.length;
      real = true;
    } else if (!Number.isInteger(ref.start_of) || ref.start_of < 0 || ref.start_of >= position ||
               !Number.isInteger(ref.length) || ref.length < 0 || typeof ref.rest !== "string" ||
               sizes[ref.start_of] === null || ref.length > sizes[ref.start_of]) {
      text = "(this prompt's reference to an earlier task's prompt is not valid)";
    } else {
      size = ref.length + ref.rest.length;
      if (whole[ref.start_of] && shown + size <= PROMPT_CHARS_SHOWN) {
        text = (texts[ref.start_of] || "").slice(0, ref.length) + ref.rest;
        shown += size;
        real = true;
      } else {
        text = "(a prompt of " + size + " characters, not shown: the prompts shown add up to " +
          PROMPT_CHARS_SHOWN + " characters at most)";
      }
    }
    sizes.push(size);
    texts.push(text);
    whole.push(real);
  });
  return texts;
}

function traceTasks(trace) {
  const prompts = tracePrompts(trace.tasks || []);
  return (trace.tasks || []).map((t, position) => {
    const items = [];
    const userPrompt = prompts[position];
    if (t.system_prompt || userPrompt) {
      items.push({kind: "prompt", label: "Prompt", folded: true,
        text: "[system] " + (t.system_prompt || "") + "\n\n[user] " + (userPrompt || "")});
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
    for (const record of t.events || []) {
      if (record.type === "MemoryRetrieved") {
        timed.push([record.at || "", memoryItem(Object.assign({}, record.fields || {}))]);
      }
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
    const start = Date.parse(t.started_at) / 1000;
    const end = t.ended_at ? Date.parse(t.ended_at) / 1000 : NaN;
    return {index: t.index, description: t.description, agent: t.agent_role, status: t.status,
            items, start: isNaN(start) ? null : start, end: isNaN(end) ? null : end};
  });
}

function eventTimes(events) {
  const times = new Map();
  for (const e of events) {
    if (!e.task_index) continue;
    const entry = times.get(e.task_index) || {start: null, end: null, segments: []};
    if (e.type === "TaskStarted") entry.start = e.ts;
    if (e.type === "TaskCompleted" || e.type === "TaskFailed") entry.end = e.ts;
    if (e.type === "LLMCallCompleted" && typeof e.duration === "number") {
      entry.segments.push({kind: "model", start: e.ts - e.duration, end: e.ts});
    }
    if (e.type === "ToolCallCompleted" && e.record && typeof e.record.duration === "number") {
      entry.segments.push({kind: "tool", start: e.ts - e.record.duration, end: e.ts});
    }
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

function niceStep(span) {
  const rough = span / 5;
  const power = Math.pow(10, Math.floor(Math.log10(rough)));
  for (const m of [1, 2, 5, 10]) if (m * power >= rough) return m * power;
  return 10 * power;
}

function ganttBar(cls, start, end, first, span, title) {
  const bar = el("div", {class: cls, title});
  bar.style.left = ((start - first) / span * 100).toFixed(2) + "%";
  bar.style.width = Math.max(0.5, (end - start) / span * 100).toFixed(2) + "%";
  return bar;
}

function ganttLabel(text, depth, title) {
  const label = el("span", {class: "gantt-label", title: title || ""}, text);
  if (depth) label.style.paddingLeft = (depth * 0.8).toFixed(1) + "rem";
  return label;
}

// One row per task; with `groups` (workflow.js: rows of loops, iterations, graph steps... by the
// index of the task they open), each group's row comes before its first task, its bar spanning it.
function renderGantt(tasks, times, groups) {
  const known = tasks.filter((t) => times.has(t.index) && times.get(t.index).start !== null);
  if (!known.length) return null;
  const now = Date.now() / 1000;
  const starts = known.map((t) => times.get(t.index).start);
  const ends = known.map((t) => times.get(t.index).end || now);
  const first = Math.min(...starts);
  const span = Math.max(Math.max(...ends) - first, 0.001);
  const pos = (t) => ((t - first) / span * 100).toFixed(2) + "%";
  const step = niceStep(span);
  const ticks = [];
  for (let t = 0; t <= span + 1e-9; t += step) ticks.push(t);
  const axis = el("div", {class: "gantt-row axis"}, el("span", {class: "gantt-label"}, "time"),
    el("div", {class: "track axis-track"}, ticks.map((t) => {
      const tick = el("span", {class: "tick"}, t ? fmtDuration(t) : "0");
      tick.style.left = (t / span * 100).toFixed(2) + "%";
      return tick;
    })));
  const groupRows = (task) => ((groups && groups.get(task.index)) || []).map((g) =>
    el("div", {class: "gantt-row group-row", dataset: {group: g.kind}},
      ganttLabel(g.label, g.depth, g.label),
      el("div", {class: "track"}, g.start === null ? null : ganttBar("bar group-bar group-bar-" +
        g.kind, g.start, g.end || now, first, span, fmtDuration((g.end || now) - g.start))),
      el("span", {class: "gantt-took"}, g.start === null ? "" :
        fmtDuration((g.end || now) - g.start))));
  return el("div", {id: "gantt"}, axis, known.flatMap((task) => {
    const time = times.get(task.index);
    const bar = el("div", {class: "bar status-bg-" + task.status, dataset: {task: String(task.index)},
      title: fmtDuration((time.end || now) - time.start)});
    bar.style.left = pos(time.start);
    bar.style.width = Math.max(0.5, ((time.end || now) - time.start) / span * 100).toFixed(2) + "%";
    const segments = (time.segments || []).map((seg) => {
      const mark = el("div", {class: "seg seg-" + seg.kind, title: seg.kind + " " +
        fmtDuration(seg.end - seg.start)});
      mark.style.left = pos(Math.max(seg.start, first));
      mark.style.width = Math.max(0.3, (seg.end - seg.start) / span * 100).toFixed(2) + "%";
      return mark;
    });
    return [...groupRows(task), el("div", {class: "gantt-row"},
      ganttLabel("Task " + task.index + " · " + task.agent, task.depth || 0, task.where),
      el("div", {class: "track"}, bar, segments),
      el("span", {class: "gantt-took"}, fmtDuration((time.end || now) - time.start)))];
  }));
}
