// A fake OpenAI Chat Completions server for the browser test: it speaks the real streaming
// wire format (`text/event-stream`, one `chat.completion.chunk` per `data:` line, `[DONE]`
// last) on loopback and answers each request with the next scripted reply. The daemon's real
// OpenAI client talks to it (`[llm] openai_base_url`), as with crates/testkit in Rust tests.

import { createServer } from "node:http";

const chunk = (delta, finishReason = null) => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "fake-model",
  choices: [{ index: 0, delta, finish_reason: finishReason }],
});

const usage = (prompt, completion) => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "fake-model",
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

/** A streamed text answer: each piece after `delayMs`. */
export function text(pieces, delayMs = 0) {
  return [
    { data: chunk({ role: "assistant", content: "" }) },
    ...pieces.map((piece) => ({ delayMs, data: chunk({ content: piece }) })),
    { data: chunk({}, "stop") },
    { data: usage(10, pieces.length) },
  ];
}

/** A streamed answer calling one tool, its arguments in two pieces. */
export function toolCall(id, name, args) {
  const json = JSON.stringify(args);
  const half = Math.ceil(json.length / 2);
  return [
    { data: chunk({ role: "assistant", content: null }) },
    { data: chunk({ tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }] }) },
    { data: chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(0, half) } }] }) },
    { data: chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(half) } }] }) },
    { data: chunk({}, "tool_calls") },
    { data: usage(20, 5) },
  ];
}

/** Starts the server on a free loopback port. `push(reply)` queues the next answer; `GET
 *  /v1/models` lists `models` (as llama.cpp's server and other OpenAI-compatible servers do). */
export async function startFakeOpenAi({ models = ["fake-model"] } = {}) {
  const replies = [];
  const requests = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (part) => { body += part; });
    request.on("end", async () => {
      if (request.method === "GET" && request.url === "/v1/models") {
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ object: "list", data: models.map((id) => ({ id, object: "model", created: 1_700_000_000 })) }));
        return;
      }
      if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
        response.writeHead(404, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ error: { message: `no route ${request.url}`, type: "fake_error" } }));
        return;
      }
      requests.push(JSON.parse(body));
      const reply = replies.shift();
      if (!reply) {
        response.writeHead(500, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ error: { message: "no scripted reply left", type: "fake_error" } }));
        return;
      }
      response.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      response.flushHeaders();
      for (const frame of reply) {
        if (frame.delayMs) await new Promise((done) => setTimeout(done, frame.delayMs));
        if (response.destroyed) return;
        response.write(`data: ${JSON.stringify(frame.data)}\n\n`);
      }
      response.end("data: [DONE]\n\n");
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    push: (reply) => replies.push(reply),
    close: () => new Promise((done) => { server.closeAllConnections(); server.close(done); }),
  };
}
