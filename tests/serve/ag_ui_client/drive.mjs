// The real AG-UI client (@ag-ui/client's HttpAgent) driving agentensemble's AG-UI endpoint:
// a run that ends at an interrupt, then a resume answering it. Prints one JSON summary line.
// Usage: node drive.mjs URL PAYLOAD_JSON [TOKEN]
import { HttpAgent } from "@ag-ui/client";

const [url, payloadText, token] = process.argv.slice(2);
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const agent = new HttpAgent({
  url,
  headers,
  threadId: "npm-thread",
  initialMessages: [{ id: "m1", role: "user", content: "the picnic" }],
});

async function run(parameters) {
  const types = [];
  const finished = [];
  const errors = [];
  await agent.runAgent(parameters, {
    onEvent({ event }) {
      types.push(event.type);
    },
    onRunFinishedEvent(params) {
      finished.push({ outcome: params.outcome, result: params.result ?? null });
    },
    onRunErrorEvent({ event }) {
      errors.push(event.message);
    },
  });
  return { types, finished, errors };
}

try {
  const first = await run({ runId: "npm-run-1" });
  const interrupts = agent.pendingInterrupts.map((i) => ({
    id: i.id,
    reason: i.reason,
    toolCallId: i.toolCallId ?? null,
    message: i.message,
  }));
  const resume = agent.pendingInterrupts.map((i) => ({
    interruptId: i.id,
    status: "resolved",
    payload: JSON.parse(payloadText),
  }));
  const second = await run({ runId: "npm-run-2", resume });
  const summary = {
    first,
    interrupts,
    second,
    pendingAfter: agent.pendingInterrupts.length,
    state: agent.state,
    messages: agent.messages.map((m) => ({ role: m.role, content: m.content ?? null })),
  };
  console.log(JSON.stringify(summary));
} catch (error) {
  console.log(JSON.stringify({ failed: String(error && error.stack ? error.stack : error) }));
  process.exitCode = 1;
}
