// A fake OpenAI-compatible speech server for the browser test, on loopback, speaking the real
// wire formats: `POST /v1/audio/transcriptions` (multipart with a `file` part, answered by
// `{"text": ...}`) and `POST /v1/audio/speech` (JSON `{model, input, voice, response_format}`,
// answered by audio bytes). It records every upload with what it really was: a WebM file
// starts with the EBML magic 1A 45 DF A3, an Ogg one with "OggS".

import { createServer } from "node:http";

/** The parts of a multipart/form-data body, by field name: headers and bytes.
 *  @param {Buffer} body @param {string} contentType */
export function multipart(body, contentType) {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  if (!boundary) return {};
  const marker = Buffer.from(`--${boundary[1] || boundary[2]}`);
  /** @type {Record<string, {headers: string, bytes: Buffer}>} */
  const parts = {};
  let at = body.indexOf(marker);
  while (at >= 0) {
    const start = at + marker.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const headerEnd = body.indexOf("\r\n\r\n", start);
    const next = body.indexOf(marker, headerEnd);
    if (headerEnd < 0 || next < 0) break;
    const headers = body.subarray(start + 2, headerEnd).toString();
    const name = /name="([^"]*)"/.exec(headers)?.[1] ?? "";
    parts[name] = { headers, bytes: body.subarray(headerEnd + 4, next - 2) };
    at = next;
  }
  return parts;
}

/** What an upload's first bytes say it is. @param {Buffer} bytes */
export function container(bytes) {
  if (bytes.subarray(0, 4).equals(Buffer.from([0x1a, 0x45, 0xdf, 0xa3]))) return "webm";
  if (bytes.subarray(0, 4).toString() === "OggS") return "ogg";
  if (bytes.subarray(0, 4).toString() === "RIFF") return "wav";
  return "unknown";
}

/** A WAV of `seconds` of a 440 Hz tone (16 kHz, 16-bit mono): an answer read aloud. */
export function toneWav(seconds = 2) {
  const rate = 16000;
  const samples = Math.round(rate * seconds);
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write("RIFF", 0); wav.writeUInt32LE(36 + samples * 2, 4); wav.write("WAVE", 8);
  wav.write("fmt ", 12); wav.writeUInt32LE(16, 16); wav.writeUInt16LE(1, 20); wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(rate, 24); wav.writeUInt32LE(rate * 2, 28); wav.writeUInt16LE(2, 32); wav.writeUInt16LE(16, 34);
  wav.write("data", 36); wav.writeUInt32LE(samples * 2, 40);
  for (let index = 0; index < samples; index += 1) wav.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * index) / rate) * 8000), 44 + index * 2);
  return wav;
}

/** Starts the server on a free loopback port; every transcription answers `transcript`. */
export async function startFakeSpeech(transcript) {
  /** @type {{field: string, container: string, bytes: number, contentType: string, language: string, model: string}[]} */
  const uploads = [];
  /** @type {any[]} */
  const spoken = [];
  const server = createServer((request, response) => {
    /** @type {Buffer[]} */
    const chunks = [];
    request.on("data", (part) => chunks.push(part));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      if (request.method === "POST" && request.url === "/v1/audio/transcriptions") {
        const parts = multipart(body, request.headers["content-type"] || "");
        const file = parts.file ?? parts.audio;
        if (!file) {
          response.writeHead(400, { "Content-Type": "application/json" });
          response.end(JSON.stringify({ error: { message: "no file part", type: "invalid_request_error" } }));
          return;
        }
        uploads.push({
          field: parts.file ? "file" : "audio",
          container: container(file.bytes),
          bytes: file.bytes.length,
          contentType: /content-type:\s*([^\r\n]+)/i.exec(file.headers)?.[1] ?? "",
          language: parts.language?.bytes.toString() ?? "",
          model: parts.model?.bytes.toString() ?? "",
        });
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ text: transcript }));
        return;
      }
      if (request.method === "POST" && request.url === "/v1/audio/speech") {
        spoken.push(JSON.parse(body.toString()));
        response.writeHead(200, { "Content-Type": "audio/wav" });
        response.end(toneWav(3));
        return;
      }
      response.writeHead(404, { "Content-Type": "application/json" });
      response.end(JSON.stringify({ error: { message: `no route ${request.url}`, type: "fake_error" } }));
    });
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${port}`,
    uploads,
    spoken,
    close: () => new Promise((done) => { server.closeAllConnections(); server.close(done); }),
  };
}
