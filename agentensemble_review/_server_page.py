"""The reference server's review page: pending reviews with Approve / Edit / Exit buttons.

Every text from a review is escaped twice over: ``escape_for_display`` makes invisible and
deceptive characters (bidi overrides, zero-width characters, controls) visible, ``html.escape``
keeps markup inert. The buttons post decision JSON with the page's token from a script that
carries the response's CSP nonce; no inline handler, no form a foreign page could imitate.
"""

from __future__ import annotations

import html
import urllib.parse

from agentensemble._base.display import escape_for_display
from agentensemble.redaction import redact_text
from agentensemble_review._server_store import Record

_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
.review{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}
pre{background:#f6f6f6;padding:.5rem;white-space:pre-wrap;max-height:20rem;overflow:auto}
textarea{width:100%;min-height:6rem;font-family:monospace}
.meta{color:#666;font-size:.9rem} button{margin-right:.5rem;padding:.3rem .8rem}
.error{color:#a00}
"""

_SCRIPT = """
const token = document.querySelector("meta[name=review-token]").content;
for (const button of document.querySelectorAll("button[data-decision]")) {
  button.addEventListener("click", async () => {
    const box = button.closest(".review");
    const body = {decision: button.dataset.decision};
    if (body.decision === "edit") body.revised_output = box.querySelector("textarea").value;
    if (body.decision === "exit_early") body.reason = box.querySelector("input").value || null;
    const answer = await fetch("/reviews/" + encodeURIComponent(box.dataset.id) + "/decision", {
      method: "POST",
      headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
      body: JSON.stringify(body),
    });
    if (answer.ok) { location.reload(); return; }
    box.querySelector(".error").textContent = "Refused: " + (await answer.text());
  });
}
"""


def _esc(value: object) -> str:
    """Every text the page shows: redacted (the one policy), invisible characters escaped,
    then HTML-escaped."""
    return html.escape(escape_for_display(redact_text(str(value))), quote=True)


def _deadline(record: Record, now: float) -> str:
    """When a pending review expires, as the reviewer needs it: the time left."""
    timeout = record.timeout
    if timeout is None:
        return "no time limit"
    left = max(0.0, record.received_at + timeout - now)
    return f"expires in {left:.0f} s (timeout {timeout:g} s)"


def render_page(records: list[Record], secret_set: bool, token: str, nonce: str, now: float) -> str:
    """The HTML page: pending reviews with their buttons, then the last expired ones (no
    buttons: their timeout passed, the run went on without them), then the last decided."""
    pending = [r for r in records if r.status(now) == "pending"]
    expired = [r for r in records if r.status(now) == "expired"][-20:]
    decided = [r for r in records if r.decision is not None][-20:]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<title>agentensemble reviews</title>",
        f"<meta name='review-token' content='{html.escape(token, quote=True)}'>",
        "<meta http-equiv='refresh' content='3'>" if not pending else "",
        f"<style nonce='{nonce}'>{_CSS}</style></head><body>",
        f"<h1>Pending reviews ({len(pending)})</h1>",
        "<p class='meta'>Signatures are verified.</p>" if secret_set else "",
        "" if pending else "<p>Nothing to review yet; this page refreshes by itself.</p>",
        "<p><a href='?token=" + urllib.parse.quote(token) + "'>Refresh</a></p>" if pending else "",
    ]
    for record in pending:
        req = record.request
        editable = html.escape(redact_text(str(req.get("output", ""))))  # edited as sent, redacted
        tool = f" &middot; tool <b>{_esc(req.get('tool_name'))}</b>" if req.get("tool_name") else ""
        out += [
            f"<div class='review' data-id='{html.escape(record.id, quote=True)}'>",
            f"<div class='meta'>{_esc(req.get('timing', ''))}{tool}"
            f" &middot; id {_esc(record.id)} &middot; {_deadline(record, now)}</div>",
            f"<h3>{_esc(req.get('task_description', ''))}</h3>",
            f"<p><b>{_esc(req.get('prompt'))}</b></p>" if req.get("prompt") else "",
            f"<pre>{_esc(req.get('output', ''))}</pre>",
            f"<textarea name='revised_output'>{editable}</textarea>",
            "<p><input name='reason' placeholder='Reason (for Exit)' size='40'></p>",
            "<button data-decision='continue'>Approve</button>",
            "<button data-decision='edit'>Edit (send the text above)</button>",
            "<button data-decision='exit_early'>Exit</button>",
            "<p class='error'></p></div>",
        ]
    if expired:
        out.append("<h2>Expired (no decision in time; they can no longer be decided)</h2><ul>")
        for record in reversed(expired):
            why = (
                f"the run stopped waiting ({_esc(record.withdrawn)})"
                if record.withdrawn is not None
                else f"after {_esc(record.timeout)} s"
            )
            out.append(
                f"<li class='expired'>{_esc(str(record.request.get('task_description', ''))[:80])}"
                f" &middot; id {_esc(record.id)}: <b>expired</b> {why}</li>"
            )
        out.append("</ul>")
    if decided:
        out.append("<h2>Recently decided</h2><ul>")
        for record in reversed(decided):
            assert record.decision is not None
            out.append(
                f"<li>{_esc(str(record.request.get('task_description', ''))[:80])}: "
                f"<b>{_esc(record.decision.decision)}</b></li>"
            )
        out.append("</ul>")
    out.append(f"<script nonce='{nonce}'>{_SCRIPT}</script></body></html>")
    return "\n".join(part for part in out if part)


def page_csp(nonce: str) -> str:
    """The page's Content-Security-Policy: its own nonce'd script and style, fetches to itself,
    no framing, no forms, no base URL."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


__all__ = ["page_csp", "render_page"]
