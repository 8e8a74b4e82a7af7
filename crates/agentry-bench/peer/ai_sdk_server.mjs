// The peer of agentry's W7 HTTP workload: the AI SDK's own server side, as its docs show it
// (`streamText(...).toUIMessageStreamResponse()`) on Node's http server, with the AI SDK's mock
// language model streaming the same scripted answer as agentry's `echo` agent. It speaks the
// same UI message stream protocol, so one load generator drives both.
// AGENTRY_AI_SDK: the `ai` package's directory. Prints `port N` once it listens on 127.0.0.1.
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const dir = process.env.AGENTRY_AI_SDK;
const ai = await import(pathToFileURL(join(dir, "dist/index.js")).href);
const { MockLanguageModelV4, convertArrayToReadableStream } = await import(pathToFileURL(join(dir, "dist/test/index.js")).href);
const { streamText, convertToModelMessages } = ai;

function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") {
      return messages[i].parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    }
  }
  return "";
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

const server = createServer(async (req, res) => {
  if (req.method !== "POST") { res.writeHead(404).end(); return; }
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  const said = lastUserText(body.messages);
  const model = new MockLanguageModelV4({
    doStream: async () => ({
      stream: convertArrayToReadableStream([
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t1" },
        ...["echo", ": ", said, " (turn 1)"].map((delta) => ({ type: "text-delta", id: "t1", delta })),
        { type: "text-end", id: "t1" },
        { type: "finish", usage, finishReason: { unified: "stop", raw: "stop" } },
      ]),
    }),
  });
  const result = streamText({ model, messages: await convertToModelMessages(body.messages) });
  const response = result.toUIMessageStreamResponse();
  res.writeHead(response.status, Object.fromEntries(response.headers));
  Readable.fromWeb(response.body).pipe(res);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => console.log(`port ${server.address().port}`));
