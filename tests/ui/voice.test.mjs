// Push-to-talk and spoken answers in headless Chromium against a real `souz serve`. The
// microphone is Chromium's fake device playing a WAV of an espeak-ng sentence (made here, and
// resampled by sox to 48 kHz); the daemon's `[speech]` engine is `server`, pointed at a fake
// OpenAI-compatible transcription server (fake-speech.mjs) that checks the upload is really
// WebM/Opus (the EBML magic) and answers the sentence. So the test needs no model: what it
// checks is the page (hold and toggle, the level meter, the box for review, send at once, the
// errors) and the route between. Spoken answers: `[voice] tts = "server"` on the same fake,
// a chat with "Read answers aloud" plays the answer, and pressing the mic stops it.
// Prints a figure (MEASURE): release of the button to the text in the box, for a 5 s utterance.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeOpenAi, text } from "./fake-openai.mjs";
import { container, multipart, startFakeSpeech } from "./fake-speech.mjs";
import { shot, startDaemon, startSession, stopDaemon, waitFor } from "./harness.mjs";

const SENTENCE = "Please remind me tomorrow morning to water the plants on the balcony and call my mother.";

const work = mkdtempSync(join(tmpdir(), "souz-ui-voice-"));
const microphone = join(work, "microphone.wav");
let seconds = 0;
let session;

before(async () => {
  // The utterance: espeak-ng's sentence, resampled to what Chromium's fake device reads
  // (16-bit PCM at 48 kHz), with a little silence after it.
  const spoken = join(work, "spoken.wav");
  execFileSync("espeak-ng", ["-v", "en", "-s", "150", "-w", spoken, SENTENCE]);
  execFileSync("sox", [spoken, "-r", "48000", "-c", "1", "-b", "16", microphone, "pad", "0.1", "0.4"]);
  seconds = Number(execFileSync("sox", ["--i", "-D", microphone]).toString().trim());
  session = await startSession({}, {
    browserArgs: [
      "--use-fake-ui-for-media-stream",
      "--use-fake-device-for-media-stream",
      `--use-file-for-fake-audio-capture=${microphone}`,
      "--autoplay-policy=no-user-gesture-required",
    ],
  });
});
after(async () => {
  await session?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Waits for the transcript in the box; on a timeout, says what the page's notice said. */
async function transcriptIn(tab) {
  try {
    await waitFor(async () => (await tab.locator("#chat-input").inputValue()) === SENTENCE, "the transcript in the box");
  } catch (error) {
    throw new Error(`${error.message}; the notice said: ${await tab.locator("#chat-notice").textContent()}`);
  }
}

/** A daemon of its own: `[speech]` on the fake transcription server, models on a fake
 *  OpenAI, `voice` lines added to its `[voice]` section. */
async function voiceDaemon(voice = "") {
  const speech = await startFakeSpeech(SENTENCE);
  const provider = await startFakeOpenAi();
  const home = mkdtempSync(join(tmpdir(), "souz-ui-voice-home-"));
  const user = mkdtempSync(join(tmpdir(), "souz-ui-voice-user-"));
  writeFileSync(join(home, "config.toml"), [
    "[llm]", `openai_base_url = "${provider.url}/v1"`, "",
    "[agent]", 'default_agent = "skills"', "",
    "[speech]", 'engine = "server"', `server_url = "${speech.url}/v1"`, "",
    "[voice]", voice, "",
  ].join("\n"));
  const daemon = await startDaemon(home, user, { OPENAI_API_KEY: "sk-ui-test-key" });
  const call = async (method, path, body) => {
    const response = await fetch(daemon.url + path, {
      method,
      headers: { Authorization: `Bearer ${daemon.token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.text();
    return { status: response.status, body: answer ? JSON.parse(answer) : null };
  };
  const context = await session.browser.newContext({ viewport: { width: 1200, height: 820 } });
  const open = async (route) => {
    const tab = await context.newPage();
    tab.on("pageerror", (error) => { throw error; });
    await tab.goto(`${daemon.url}/app/#token=${daemon.token}&go=${route}`);
    await tab.waitForSelector("#connection.up");
    return tab;
  };
  const chat = async () => {
    const created = await call("POST", "/v1/chats", { title: "Voice" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body.chat.id;
  };
  const close = async () => {
    await context.close();
    await stopDaemon(daemon.child);
    await speech.close();
    await provider.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(user, { recursive: true, force: true });
  };
  return { speech, provider, call, open, chat, close };
}

test("holding the mic records the fake microphone, and the transcript lands in the box for review", async () => {
  const live = await voiceDaemon();
  try {
    const id = await live.chat();
    const tab = await live.open(`/chat/${id}`);
    await tab.waitForSelector("#chat-send:not([disabled])");
    // What the page uploads: the multipart body's `audio` part, as the browser sent it.
    /** @type {Buffer[]} */
    const sent = [];
    await tab.route("**/v1/speech/transcriptions", async (route) => {
      const body = route.request().postDataBuffer();
      if (body) sent.push(body);
      await route.continue();
    });
    const mic = tab.locator("#chat-mic");
    await mic.hover();
    await tab.mouse.down();
    await tab.waitForSelector('#chat-mic[data-state="recording"]');
    await tab.waitForSelector("#chat-mic-meter:not([hidden])");
    // Hold for the utterance (the fake device plays it from the start of the capture).
    await tab.waitForTimeout(Math.round(Math.min(seconds, 5) * 1000));
    const peak = Number(await tab.locator("#chat-mic-meter").getAttribute("data-peak"));
    assert.ok(peak > 0.02, `the level meter moved with the voice (peak ${peak})`);
    await shot(tab, "chat-voice");
    const released = Date.now();
    await tab.mouse.up();
    await transcriptIn(tab);
    const wall = Date.now() - released;
    const inPage = Number(await mic.getAttribute("data-release-to-text-ms"));
    console.log(`MEASURE push-to-talk release to text in the box ${inPage} ms in the page, ${wall} ms seen by the test (${Math.min(seconds, 5).toFixed(1)} s utterance, WebM/Opus upload, fake transcription server)`);
    // Not sent: the person reviews it first.
    assert.equal(await tab.locator(".messages .message.user").count(), 0);
    assert.match(await tab.locator("#chat-notice").textContent() ?? "", /Check the text/);
    assert.equal(await mic.getAttribute("data-state"), "idle");
    // What the page sent: one WebM/Opus recording (the EBML magic 1A 45 DF A3) in `audio`.
    assert.equal(sent.length, 1);
    const parts = multipart(sent[0], "multipart/form-data; boundary=" + /^--([^\r\n]+)/.exec(sent[0].toString("latin1"))?.[1]);
    assert.equal(container(parts.audio.bytes), "webm", `EBML magic expected, got ${parts.audio.bytes.subarray(0, 8).toString("hex")}`);
    assert.match(parts.audio.headers, /audio\/webm/);
    assert.ok(parts.audio.bytes.length > 8000, `a few seconds of Opus, got ${parts.audio.bytes.length} bytes`);
    assert.equal(parts.language.bytes.toString(), "en");
    // What reached the engine: the daemon decoded it and sent the server 16 kHz 16-bit mono
    // WAV as long as the hold (within a second).
    assert.equal(live.speech.uploads.length, 1, JSON.stringify(live.speech.uploads));
    const [upload] = live.speech.uploads;
    assert.equal(upload.container, "wav", JSON.stringify(upload));
    const heldSeconds = (upload.bytes - 44) / 32000;
    assert.ok(Math.abs(heldSeconds - Math.min(seconds, 5)) < 1, `${heldSeconds.toFixed(2)} s reached the engine`);
  } finally {
    await live.close();
  }
});

test("a click starts and a second click stops; with send_at_once the transcript is sent at once", async () => {
  const live = await voiceDaemon("send_at_once = true");
  try {
    live.provider.push(text(["Noted: ", "plants and mother."]));
    const id = await live.chat();
    const tab = await live.open(`/chat/${id}`);
    await tab.waitForSelector("#chat-send:not([disabled])");
    await tab.locator("#chat-mic").click();
    await tab.waitForSelector('#chat-mic[data-state="recording"]');
    await tab.waitForTimeout(1500);
    // Still recording after the click was released: a click toggles.
    assert.equal(await tab.locator("#chat-mic").getAttribute("data-state"), "recording");
    await tab.locator("#chat-mic").click();
    await tab.waitForSelector(`.messages .message.user:has-text("${SENTENCE}")`);
    await tab.waitForSelector('.messages .message.assistant:has-text("Noted: plants and mother.")');
    assert.equal(await tab.locator("#chat-input").inputValue(), "");
    assert.equal(await tab.locator("#chat-input").inputValue(), "");
    assert.equal(live.speech.uploads.length, 1);
    const request = live.provider.requests.at(-1);
    assert.equal(request.messages.filter((message) => message.role === "user").at(-1).content, SENTENCE);
  } finally {
    await live.close();
  }
});

test("a chat with spoken answers plays the answer, and pressing the mic stops it", async () => {
  // The voice is the fake speech server itself, as the transcription engine is.
  const speech = await startFakeSpeech(SENTENCE);
  const provider = await startFakeOpenAi();
  const home = mkdtempSync(join(tmpdir(), "souz-ui-voice-home-"));
  const user = mkdtempSync(join(tmpdir(), "souz-ui-voice-user-"));
  writeFileSync(join(home, "config.toml"), [
    "[llm]", `openai_base_url = "${provider.url}/v1"`, "",
    "[agent]", 'default_agent = "skills"', "",
    "[speech]", 'engine = "server"', `server_url = "${speech.url}/v1"`, "",
    "[voice]", 'tts = "server"', `tts_url = "${speech.url}/v1"`, 'tts_voice = "nova"', "",
  ].join("\n"));
  const daemon = await startDaemon(home, user, { OPENAI_API_KEY: "sk-ui-test-key" });
  const context = await session.browser.newContext({ viewport: { width: 1200, height: 820 } });
  try {
    const headers = { Authorization: `Bearer ${daemon.token}`, "Content-Type": "application/json" };
    const settings = await (await fetch(`${daemon.url}/v1/voice`, { headers })).json();
    assert.equal(settings.ttsReady, true, JSON.stringify(settings));
    assert.equal(settings.ttsCloud, false, "a voice on loopback keeps the text here");
    const created = await (await fetch(`${daemon.url}/v1/chats`, { method: "POST", headers, body: JSON.stringify({ title: "Spoken" }) })).json();
    const id = created.chat.id;
    provider.push(text(["The plants are watered."]));
    const tab = await context.newPage();
    tab.on("pageerror", (error) => { throw error; });
    await tab.goto(`${daemon.url}/app/#token=${daemon.token}&go=/chat/${id}`);
    await tab.waitForSelector("#chat-send:not([disabled])");
    // Off by default; the switch stores it in the chat's settings.
    assert.equal(await tab.locator("#chat-spoken").isChecked(), false);
    await tab.locator("#chat-spoken").check();
    await waitFor(async () => (await (await fetch(`${daemon.url}/v1/chats/${id}/settings`, { headers })).json()).spokenAnswers === true, "spokenAnswers stored");
    await tab.locator("#chat-input").fill("Did you water the plants?");
    await tab.locator("#chat-send").click();
    try {
      await tab.waitForSelector('#chat-mic[data-speaking="playing"]', { timeout: 15000 });
    } catch (error) {
      throw new Error(`${error.message}; notice: ${await tab.locator("#chat-notice").textContent()}; speaking: ${await tab.locator("#chat-mic").getAttribute("data-speaking")}; asked: ${JSON.stringify(speech.spoken)}`);
    }
    assert.equal(speech.spoken.length, 1);
    assert.deepEqual(speech.spoken[0], { model: "gpt-4o-mini-tts", input: "The plants are watered.", voice: "nova", response_format: "mp3" });
    // A new utterance stops the answer.
    await tab.locator("#chat-mic").click();
    await waitFor(async () => (await tab.locator("#chat-mic").getAttribute("data-speaking")) === null, "the playback stopped");
    await tab.waitForSelector('#chat-mic[data-state="recording"]');
    await tab.waitForTimeout(1500);
    await tab.locator("#chat-mic").click();
    await transcriptIn(tab);
  } finally {
    await context.close();
    await stopDaemon(daemon.child);
    await speech.close();
    await provider.close();
    rmSync(home, { recursive: true, force: true });
    rmSync(user, { recursive: true, force: true });
  }
});

test("Settings › Voice says who hears you and who reads answers, in the person's language", async () => {
  const live = await voiceDaemon();
  try {
    const tab = await live.open("/settings/voice");
    await tab.waitForSelector("#voice-engine");
    assert.equal(await tab.locator("#voice-engine").getAttribute("data-cloud"), "false");
    assert.match(await tab.locator("#voice-hears").textContent() ?? "", /on this machine/);
    assert.match(await tab.locator("#voice-reads").textContent() ?? "", /Nobody: spoken answers are off/);
    // The `[voice]` and `[speech]` keys are edited on the same tab.
    await tab.waitForSelector("text=send_at_once");
    await tab.waitForSelector("text=server_url");
    await tab.selectOption("#language", "ru");
    await tab.waitForSelector("#voice-hears:has-text('Кто вас слышит')");
    assert.match(await tab.locator("#voice-reads").textContent() ?? "", /Никто: ответы вслух выключены/);
  } finally {
    await live.close();
  }
});
