// Where each task ran in an iterative workflow, shown as nested groups of the timeline: a loop
// and its iterations (the number, how long each took, whether `until` held or the cap ended it),
// a graph and its steps (the path of states, the next state and the edge's condition chosen),
// a fan-out and its items, a nested ensemble. A task says where it sits in `TaskStarted.within`
// ("loop:<name>:<n>", "graph:<name>:<step>:<state>", "for_each:<task>:<i>", "ensemble:<name>");
// runs recorded before `within` existed are grouped by the `task_indices` of the loop and graph
// events. Loaded after timeline.js (renderTask) and before app.js (el, fmtDuration); every name
// and condition here is hostile text and reaches the page as text only.
"use strict";

const MEMBER_KINDS = new Set(["loop", "graph", "for_each"]);
const END_STATE = "__end__";
const collapsedGroups = new Set();  // what a reader folded stays folded while events arrive

function segmentOf(text) {
  let m = /^loop:([\s\S]*):(\d+)$/.exec(text);
  if (m) return {kind: "loop", name: m[1], number: Number(m[2])};
  m = /^graph:([\s\S]*?):(\d+):([\s\S]*)$/.exec(text);
  if (m) return {kind: "graph", name: m[1], number: Number(m[2]), state: m[3]};
  m = /^for_each:([\s\S]*):(\d+)$/.exec(text);
  if (m) return {kind: "for_each", name: m[1], number: Number(m[2])};
  m = /^ensemble:([\s\S]*)$/.exec(text);
  if (m) return {kind: "ensemble", name: m[1]};
  return {kind: "other", name: text};
}

// The `within` entry a loop iteration or a graph step is, as its tasks carry it.
function completionPath(e) {
  const within = Array.isArray(e.within) ? e.within.map(String) : [];
  if (e.type === "LoopIterationCompleted") {
    return [...within, "loop:" + e.loop_name + ":" + e.iteration];
  }
  return [...within, "graph:" + e.graph_name + ":" + e.step + ":" + e.state];
}

function shortWhere(seg) {
  if (seg.kind === "loop") return seg.name + " #" + seg.number;
  if (seg.kind === "graph") return seg.name + " " + seg.number + ":" + seg.state;
  if (seg.kind === "for_each") return seg.name + " [" + (seg.number + 1) + "]";
  return seg.name;
}

function newNode(fields) {
  return Object.assign({children: [], nodes: new Map(), tasks: []}, fields);
}

function childNode(parent, key, fields) {
  let node = parent.nodes.get(key);
  if (!node) {
    node = newNode(Object.assign({key, parent}, fields));
    parent.nodes.set(key, node);
    parent.children.push(node);
  }
  return node;
}

// The timeline as a tree: groups (loops, iterations, graphs, steps, fan-outs, ensembles) holding
// tasks, in the order they started. Sets task.where, the short path the time chart labels with.
// `finished`: the run is over, so a group with no completion event did not finish (a task failed,
// a reviewer stopped the run) rather than still running.
function workflowTree(tasks, events, finished) {
  const done = new Map();  // JSON of a completion's path -> its event
  const fallback = new Map();  // task index -> path, for runs whose tasks carry no `within`
  for (const e of events) {
    if (e.type !== "LoopIterationCompleted" && e.type !== "GraphStepCompleted") continue;
    const path = completionPath(e);
    done.set(JSON.stringify(path), e);
    for (const index of e.task_indices || []) if (!fallback.has(index)) fallback.set(index, path);
  }
  const root = newNode({kind: "root", key: "[]"});
  const used = new Set();
  for (const task of tasks) {
    const within = Array.isArray(task.within) ? task.within : fallback.get(task.index) || [];
    let node = root;
    const path = [];
    const where = [];
    for (const text of within.map(String)) {
      const seg = segmentOf(text);
      if (MEMBER_KINDS.has(seg.kind)) {
        node = childNode(node, JSON.stringify([...path, seg.kind + ":" + seg.name]),
                         {kind: seg.kind, name: seg.name, over: Boolean(finished)});
      }
      path.push(text);
      const key = JSON.stringify(path);
      const completion = done.get(key) || null;
      if (completion) used.add(key);
      node = childNode(node, key, MEMBER_KINDS.has(seg.kind)
        ? {kind: seg.kind + "-member", seg, done: completion, over: Boolean(finished)}
        : {kind: seg.kind, name: seg.name, over: Boolean(finished)});
      where.push(shortWhere(seg));
    }
    task.where = where.join(" › ");
    task.depth = 0;
    for (let n = node; n !== root; n = n.parent) task.depth += 1;
    node.children.push({task});
  }
  const orphans = [...done.entries()].filter(([key]) => !used.has(key)).map(([, e]) => e);
  return {root, orphans};
}

function spanOf(node) {
  let start = null;
  let end = null;
  let running = false;
  const visit = (n) => {
    for (const child of n.children) {
      if (child.task) {
        const t = child.task;
        if (typeof t.start === "number" && (start === null || t.start < start)) start = t.start;
        if (typeof t.end === "number") { if (end === null || t.end > end) end = t.end; }
        else running = true;
      } else visit(child);
    }
    if (n.done && typeof n.done.ts === "number" && (end === null || n.done.ts > end)) end = n.done.ts;
  };
  visit(node);
  return {start, end, running};
}

function spanText(node) {
  const span = spanOf(node);
  if (span.start === null) return "";
  if (span.running && !node.done) return node.over ? "" : "running";
  return span.end === null ? "" : fmtDuration(Math.max(0, span.end - span.start));
}

function members(node) { return node.children.filter((c) => c.seg); }

function stateName(name) { return name === END_STATE ? "END" : name; }

function condition(name) { return name ? el("code", {class: "condition"}, name) : null; }

function loopSummary(node) {
  const its = members(node);
  const last = its.length ? its[its.length - 1].done : null;
  const cond = its.map((m) => m.done && m.done.condition).find(Boolean);
  const count = its.length + (its.length === 1 ? " iteration" : " iterations");
  const over = its.length && its[its.length - 1].over;
  if (!last || !last.stopped_by) {
    return [count + (over ? " · ended in iteration " + its.length + " (the run stopped there)"
                          : " · running (iteration " + its.length + ")")];
  }
  if (last.stopped_by === "until") {
    return [count + " · stopped: until ", condition(cond || "until"),
            " held after iteration " + last.iteration];
  }
  return [count + " · stopped: max_iterations reached (" + last.iteration + ")" +
          (cond ? " · until " : ""), condition(cond), cond ? " never held" : ""];
}

function iterationSummary(member) {
  const e = member.done;
  const head = "Iteration " + member.seg.number;
  if (!e) return [head + (member.over ? " · did not finish" : " · running")];
  const took = spanText(member);
  const parts = [head + (took ? " · " + took : "")];
  if (e.stopped_by === "until") parts.push(" · until ", condition(e.condition || "until"),
                                           " held: the loop ends");
  else if (e.stopped_by === "max_iterations") {
    parts.push(" · last: max_iterations reached" + (e.condition ? " (until " : ""),
               condition(e.condition), e.condition ? " did not hold)" : "");
  } else if (e.condition) parts.push(" · until ", condition(e.condition), " did not hold: again");
  else parts.push(" · next iteration");
  return parts;
}

function graphSummary(node) {
  const steps = members(node);
  const path = steps.map((m) => stateName(m.done ? m.done.state : m.seg.state));
  const last = steps.length ? steps[steps.length - 1].done : null;
  let tail = " → …";
  if (last) tail = last.next_state ? (last.next_state === END_STATE ? " → END" : " → …")
                                   : " → (stopped: no edge matched)";
  if (steps.length && !last && steps[steps.length - 1].over) tail = " (the run stopped here)";
  return [steps.length + (steps.length === 1 ? " step" : " steps") + " · path: ",
          el("span", {class: "graph-path"}, path.join(" → ") + tail)];
}

function stepSummary(member) {
  const e = member.done;
  const state = e ? e.state : member.seg.state;
  const head = "Step " + member.seg.number + " · " + stateName(state);
  if (!e) return [head + (member.over ? " · did not finish" : " · running")];
  const took = spanText(member);
  const parts = [head];
  if (e.next_state) {
    parts.push(" → " + stateName(e.next_state) + (e.condition ? " (when " : " (edge without condition)"),
               condition(e.condition), e.condition ? " held)" : "");
  } else parts.push(" → no edge matched: the graph stops");
  if (took) parts.push(" · " + took);
  return parts;
}

function groupHead(node) {
  switch (node.kind) {
    case "loop": return ["Loop · " + node.name + " · ", ...loopSummary(node)];
    case "loop-member": return iterationSummary(node);
    case "graph": return ["Graph · " + node.name + " · ", ...graphSummary(node)];
    case "graph-member": return stepSummary(node);
    case "for_each": {
      const took = spanText(node);
      return ["Fan-out · " + node.name + " · " + members(node).length + " items" +
              (took ? " · " + took : "")];
    }
    case "for_each-member": return ["Item " + (node.seg.number + 1)];
    case "ensemble": {
      const took = spanText(node);
      return ["Nested ensemble · " + node.name + (took ? " · " + took : "")];
    }
    default: return ["Within · " + node.name];
  }
}

function groupData(node) {
  const data = {group: node.kind};
  if (node.seg) data.number = String(node.seg.number);
  if (node.done && node.done.stopped_by) data.stoppedBy = String(node.done.stopped_by);
  return data;
}

function renderNode(node) {
  if (node.task) return renderTask(node.task);
  const box = el("details", {class: "group group-" + node.kind, dataset: groupData(node)},
    el("summary", {class: "group-head"}, groupHead(node)),
    node.children.map(renderNode));
  box.open = !collapsedGroups.has(node.key);
  box.addEventListener("toggle", () => {
    if (box.open) collapsedGroups.delete(node.key); else collapsedGroups.add(node.key);
  });
  return box;
}

// The run's timeline: tasks outside any workflow as they are, the others inside their groups.
function renderTimeline(tree) {
  const nodes = tree.root.children.map(renderNode);
  if (tree.orphans.length) {
    nodes.push(renderTask({index: 0, agent: "", status: "", description: "",
      items: tree.orphans.map(genericItem)}));
  }
  return nodes;
}

function ganttName(node) {
  switch (node.kind) {
    case "loop": return "Loop · " + node.name;
    case "loop-member": return "Iteration " + node.seg.number;
    case "graph": return "Graph · " + node.name;
    case "graph-member": return "Step " + node.seg.number + " · " + stateName(
      node.done ? node.done.state : node.seg.state);
    case "for_each": return "Fan-out · " + node.name;
    case "for_each-member": return "Item " + (node.seg.number + 1);
    case "ensemble": return "Ensemble · " + node.name;
    default: return node.name;
  }
}

// The time chart's group rows, by the index of the first task each group holds (see renderGantt):
// a group's row comes before its children's, indented by its depth.
function ganttGroups(tree, times) {
  const measure = (node) => {  // {first task index, start, end (null while open)}
    let first = null;
    let start = null;
    let end = null;
    let open = false;
    for (const child of node.children) {
      const part = child.task ? taskSpan(child.task, times) : measure(child);
      if (first === null) first = part.first;
      if (part.start !== null && (start === null || part.start < start)) start = part.start;
      if (part.end === null) open = true;
      else if (end === null || part.end > end) end = part.end;
    }
    if (node.done && typeof node.done.ts === "number") {
      open = false;
      if (end === null || node.done.ts > end) end = node.done.ts;
    }
    node.span = {first, start, end: open ? null : end};
    return node.span;
  };
  measure(tree.root);
  const rows = new Map();
  const walk = (node, depth) => {
    for (const child of node.children) {
      if (child.task || child.span.first === null) continue;
      const list = rows.get(child.span.first) || [];
      list.push({kind: child.kind, label: ganttName(child), depth, start: child.span.start,
                 end: child.span.end});
      rows.set(child.span.first, list);
      walk(child, depth + 1);
    }
  };
  walk(tree.root, 0);
  return rows;
}

function taskSpan(task, times) {
  const time = times.get(task.index);
  if (!time) return {first: task.index, start: null, end: null};
  return {first: task.index, start: time.start, end: time.end === undefined ? null : time.end};
}
