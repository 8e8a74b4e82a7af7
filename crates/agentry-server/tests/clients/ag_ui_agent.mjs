// Drives an agentry server's AG-UI door with the official client (`HttpAgent` of
// @ag-ui/client, which checks every event against the protocol) and prints what it saw as JSON.
// argv[2]: the server's base URL; AGENTRY_AG_UI: the @ag-ui/client package's directory.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const { HttpAgent } = await import(pathToFileURL(join(process.env.AGENTRY_AG_UI, "dist/index.mjs")).href);
const base = process.argv[2];

function agent(name, threadId) {
  return new HttpAgent({ url: `${base}/v1/ag-ui/${name}`, threadId });
}

async function run(a, text, params = {}) {
  const types = [];
  const custom = [];
  if (text !== undefined) {
    a.messages = a.messages.concat([{ id: `u-${a.messages.length}`, role: "user", content: text }]);
  }
  const result = await a.runAgent(params, {
    onEvent: ({ event }) => { types.push(event.type); },
    onCustomEvent: ({ event }) => { custom.push(event); },
  });
  return { types, custom, result: result.result };
}

const texts = (a) => a.messages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);
const seen = {};

// A conversation on one thread.
const echo = agent("echo", "thread-echo");
const first = await run(echo, "hello");
await run(echo, "again");
seen.echo = { types: first.types, texts: texts(echo), result: first.result };

// State: deltas as the tools change it, a snapshot at the end.
const notes = agent("notes", "thread-notes");
const n = await run(notes, "note milk and eggs");
seen.notes = { state: notes.state, deltas: n.types.filter((t) => t === "STATE_DELTA").length, types: n.types };

// An approval: the run ends with an interrupt; the next run resumes it.
const ops = agent("ops", "thread-ops");
const asked = await run(ops, "restart the api");
seen.interrupts = ops.pendingInterrupts.map((i) => ({ id: i.id, toolCallId: i.toolCallId, reason: i.reason }));
const resumed = await run(ops, undefined, {
  resume: [{ interruptId: ops.pendingInterrupts[0].id, status: "resolved", payload: { approved: true } }],
});
seen.resumed = {
  askedTypes: asked.types,
  types: resumed.types,
  pending: ops.pendingInterrupts.length,
  texts: texts(ops),
  toolResults: ops.messages.filter((m) => m.role === "tool").map((m) => m.content),
};

// Sub-agents and hook decisions.
const team = agent("team", "thread-team");
const t = await run(team, "research and clean up");
seen.team = {
  types: t.types,
  hooks: t.custom.filter((c) => c.name === "agentry.hook_decision").map((c) => c.value),
  subagentMessages: team.messages.filter((m) => m.subagentRunId).map((m) => m.content ?? null),
  texts: texts(team),
};

console.log(JSON.stringify(seen));
