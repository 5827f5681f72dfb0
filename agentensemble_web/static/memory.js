// What memory, knowledge and the session showed an agent before its task (a MemoryRetrieved
// event, or the same record in a saved trace): the scopes searched, the query, and each entry
// retrieved with its source, scope, score and size. Entry texts are hostile (anyone who wrote to
// the memory wrote them): they reach the page as text only, and a long one is folded to its
// start. Loaded after timeline.js, before app.js (whose el() and clean() it uses when called).
"use strict";

const ENTRY_PREVIEW = 300;

function fmtChars(count) {
  if (typeof count !== "number") return "";
  if (count < 1000) return count + (count === 1 ? " char" : " chars");
  if (count < 1e6) return (count / 1000).toFixed(count < 10000 ? 1 : 0) + "k chars";
  return (count / 1e6).toFixed(1) + "M chars";
}

// Scores differ by store (cosine, BM25, ...): three significant digits, never "0.000".
function fmtScore(score) {
  if (score === 0 || Math.abs(score) >= 0.001) return String(Number(score.toFixed(3)));
  return score.toPrecision(2);
}

function entrySize(entry) {
  const text = typeof entry.text === "string" ? entry.text : "";
  return typeof entry.chars === "number" ? entry.chars : text.length;
}

function renderEntry(entry, position) {
  const text = typeof entry.text === "string" ? entry.text : "";
  const size = entrySize(entry);
  const facts = [entry.source || "memory", entry.scope ? "scope " + entry.scope : "",
    typeof entry.score === "number" ? "score " + fmtScore(entry.score) : "", fmtChars(size),
    entry.entry_id ? "id " + entry.entry_id : ""].filter(Boolean).join(" · ");
  const cut = size > text.length ? el("div", {class: "cut"}, "only the first " +
    fmtChars(text.length) + " of " + fmtChars(size) + " reached the console") : null;
  const body = text.length > ENTRY_PREVIEW
    ? el("details", {class: "entry-text"},
        el("summary", {}, text.slice(0, ENTRY_PREVIEW) + " … (show all " + fmtChars(text.length)
          + ")"),
        el("pre", {}, text))
    : el("pre", {class: "entry-text"}, text);
  const meta = entry.metadata && Object.keys(entry.metadata).length
    ? el("div", {class: "sub"}, "metadata: " + JSON.stringify(entry.metadata)) : null;
  return el("li", {class: "memory-entry", dataset: {position: String(position + 1)}},
    el("div", {class: "entry-facts"}, "#" + (position + 1) + " · " + facts), body, cut, meta);
}

// The timeline item for one retrieval: a label with the counts, and a view with the entries.
function memoryItem(e) {
  const entries = Array.isArray(e.items) ? e.items : [];
  const scopes = Array.isArray(e.scopes) ? e.scopes.map(String) : [];
  const total = entries.reduce((sum, entry) => sum + entrySize(entry || {}), 0);
  const history = typeof e.history_messages === "number" ? e.history_messages : 0;
  const label = "Memory retrieved · " + entries.length + (entries.length === 1 ? " entry" :
    " entries") + " · " + fmtChars(total) + (history ? " · " + history +
    " session messages replayed" : "");
  const view = () => el("div", {class: "memory-view"},
    el("div", {class: "memory-facts"},
      el("span", {class: "scopes"}, "scopes: " + (scopes.length ? scopes.join(", ") : "none")),
      e.session ? el("span", {}, "session: " + e.session) : null),
    e.query ? el("details", {class: "query"}, el("summary", {}, "query (" +
      fmtChars(String(e.query).length) + ")"), el("pre", {}, e.query)) : null,
    entries.length ? el("ol", {class: "memory-entries"}, entries.map((entry, i) =>
      renderEntry(entry || {}, i))) : el("div", {class: "sub"}, "nothing was found"));
  return {kind: "memory", label, view, type: "MemoryRetrieved"};
}
