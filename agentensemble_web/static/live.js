// The live connection to the console (loaded before app.js, whose loadAll() and onMessage() it
// calls once the page has started).
"use strict";

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
