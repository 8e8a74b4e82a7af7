// Drives an agentry server's AI SDK door with the AI SDK's own chat (`AbstractChat`, which
// `useChat` wraps, with its `DefaultChatTransport`) and prints what the chats hold as JSON.
// argv[2]: the server's base URL; AGENTRY_AI_SDK: the `ai` package's directory.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const ai = await import(pathToFileURL(join(process.env.AGENTRY_AI_SDK, "dist/index.js")).href);
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } = ai;
const base = process.argv[2];

// The state a UI framework keeps (React's useChat keeps it in hooks); here, plain fields.
class State {
  constructor() { this.status = "ready"; this.error = undefined; this.messages = []; }
  pushMessage(m) { this.messages = this.messages.concat([m]); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { const c = this.messages.slice(); c[i] = m; this.messages = c; }
  snapshot(t) { return structuredClone(t); }
}

class Chat extends AbstractChat {
  constructor(options) { super({ ...options, state: new State() }); }
}

function chat(agent, extra = {}) {
  const data = [];
  const c = new Chat({
    transport: new DefaultChatTransport({ api: `${base}/v1/ui/${agent}` }),
    onData: (part) => data.push(part),
    ...extra,
  });
  c.dataParts = data;
  return c;
}

async function settled(c) {
  for (let i = 0; i < 400 && c.status !== "ready" && c.status !== "error"; i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
}

const seen = { version: ai.VERSION ?? null };

// A conversation: the chat id is the session, so the second turn sees the first.
const echo = chat("echo");
await echo.sendMessage({ text: "hello" });
await echo.sendMessage({ text: "again" });
seen.echo = {
  status: echo.status,
  texts: echo.messages.map((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("")),
  stepStarts: echo.messages[1].parts.filter((p) => p.type === "step-start").length,
};

// A file the user attached (useChat's `files`) reaches the agent as an image part.
const pic = chat("echo");
await pic.sendMessage({
  text: "what is this?",
  files: [{ type: "file", mediaType: "image/png", filename: "shot.png", url: "data:image/png;base64,iVBORw0KGgo=" }],
});
seen.image = pic.messages[1].parts.filter((p) => p.type === "text").map((p) => p.text).join("");

// An approval asked by the server, answered from the client, then the run goes on.
const ops = chat("ops", { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
await ops.sendMessage({ text: "restart the api" });
const asked = ops.messages[1].parts.find((p) => p.type === "tool-shell");
seen.approval = { state: asked?.state, approvalId: asked?.approval?.id, input: asked?.input };
await ops.addToolApprovalResponse({ id: asked.approval.id, approved: true });
await settled(ops);
const done = ops.messages[ops.messages.length - 1];
const tool = done.parts.find((p) => p.type === "tool-shell");
seen.approved = {
  status: ops.status,
  messages: ops.messages.length,
  toolState: tool?.state,
  output: tool?.output,
  text: done.parts.filter((p) => p.type === "text").map((p) => p.text).join(""),
};

// Sub-agents and hook decisions.
const team = chat("team");
await team.sendMessage({ text: "research and clean up" });
const parts = team.messages[1].parts;
seen.team = {
  status: team.status,
  types: parts.map((p) => p.type),
  subagent: parts.filter((p) => p.type === "data-agentry-subagent").map((p) => p.data),
  hook: parts.filter((p) => p.type === "data-agentry-hook").map((p) => p.data),
  tools: parts.filter((p) => p.type.startsWith("tool-") || p.type === "dynamic-tool")
    .map((p) => ({ type: p.type, state: p.state, output: p.output, errorText: p.errorText })),
  text: parts.filter((p) => p.type === "text").map((p) => p.text).join(""),
  onData: team.dataParts.length,
};

// Reasoning, streamed before the answer, as a reasoning part.
const thinker = chat("thinker");
await thinker.sendMessage({ text: "why?" });
const thought = thinker.messages[1].parts;
seen.thinker = {
  status: thinker.status,
  types: thought.map((p) => p.type),
  reasoning: thought.filter((p) => p.type === "reasoning").map((p) => p.text).join(""),
  reasoningState: thought.find((p) => p.type === "reasoning")?.state,
  text: thought.filter((p) => p.type === "text").map((p) => p.text).join(""),
};

// Nothing under way: resuming the stream finds nothing (204) and the chat stays ready.
await echo.resumeStream();
seen.resumed = echo.status;

console.log(JSON.stringify(seen));
