// @ts-check
// Push-to-talk and spoken answers in the chat. The mic button beside Send records while held
// (pointer down, up) or, clicked (or Enter/Space on it, or the `[voice] hotkey` in a browser),
// until it is clicked again; a level meter shows what the mic hears (an AnalyserNode). The
// recording (MediaRecorder: WebM/Opus in Chromium, Ogg/Opus where only that is offered) goes to
// `POST /v1/speech/transcriptions`, and the text lands in the message box for review, or is
// sent at once with `[voice] send_at_once`. Nothing is kept in the page after the upload.
// A chat with spoken answers on plays each new answer (`POST /v1/speech/synthesis`); pressing
// the mic stops the playback. In the app the global hotkey arrives as the `souz://voice` event
// (the app has shown the chat first), and the page tells the tray what it is doing
// (`voice_state`: listening, transcribing, idle).
// Settings › Voice shows the in-process model `[speech] local_model` picks when the engine is
// `local`: Download fetches its files in the daemon (`POST /v1/speech/models/{id}/pull`: the
// model hub at a pinned commit, every file verified), with a progress bar that follows the
// `speech.model.download.*` events (a download started elsewhere shows too), and Cancel stops it.

import { api, apiBlob, tauri } from "./api.js";
import { h, size } from "./dom.js";
import { onRuntimeEvent } from "./events.js";
import { language, strings } from "./i18n.js";

/** @typedef {import("./types.js").VoiceSettings} VoiceSettings */
/** @typedef {import("./types.js").SpeechStatus} SpeechStatus */
/** @typedef {import("./types.js").SpeechModelInfo} SpeechModelInfo */
/** @typedef {import("./types.js").RuntimeEvent} RuntimeEvent */

export const t = strings({
  en: {
    mic: "Hold to talk, or click to start and stop (the hotkey also works)",
    mic_label: "Speak",
    listening: "Listening… release or click to stop",
    transcribing: "Turning speech into text…",
    heard_nothing: "Nothing was heard. Try again, closer to the mic.",
    mic_denied: "Souz may not use the microphone: allow it for this page (the lock or camera icon beside the address) and try again.",
    mic_missing: "No microphone was found.",
    mic_unsupported: "This browser cannot record audio here (it needs a secure page: http://127.0.0.1 or https).",
    transcribe_failed: "Could not turn speech into text: {detail}",
    speak_failed: "Could not read the answer aloud: {detail}",
    review: "Check the text, then send it.",
    spoken_answers: "Read answers aloud",
    spoken_off: "Choose a voice first: Settings › Voice (`[voice] tts`).",
    hears_title: "Who hears you",
    hears_engine: "Speech is turned into text by {engine}.",
    hears_cloud: "Your recordings are sent to it over the internet.",
    hears_local: "It runs on this machine: your recordings do not leave it.",
    hears_not_ready: "It is not ready yet: {detail}",
    hears_unknown: "Speech to text is not available from this Souz ({detail}).",
    reads_title: "Who reads answers aloud",
    reads_off: "Nobody: spoken answers are off (`tts = \"off\"`). Choose a voice below; then turn them on in a chat's options.",
    reads_voice: "Answers are read by {voice}, in chats where \"Read answers aloud\" is on.",
    reads_cloud: "The answers' text is sent to it.",
    reads_local: "Nothing leaves this machine.",
    reads_problem: "It cannot speak now: {detail}",
    audio_note: "Recordings are not kept: the audio goes to the engine, and only the text comes back into the message box.",
    model_title: "Model on this computer: {label}",
    model_ready: "Downloaded and verified.",
    model_loaded: "Downloaded, and in memory now.",
    model_missing: "Not downloaded yet ({size}). Souz fetches it from the model hub at a pinned commit and checks every file before using it.",
    model_download: "Download",
    model_retry: "Try again",
    model_downloading: "Downloading: {received} of {total} ({percent}%). It goes on if you close this page.",
    model_cancel: "Cancel",
    model_failed: "The download failed: {error}",
    model_by_hand: "This is the tests' model: Souz does not download it. Place config.json, tokenizer.json and model.safetensors in {path}.",
    model_source: "source",
    model_source_title: "Where Download fetches it from (every file is checked)",
    model_done: "{label} is downloaded and verified: your speech is turned into text on this computer.",
    model_cancelled: "The download was stopped.",
    model_confirm_cancel: "Stop downloading {label}? What has arrived is deleted.",
  },
  ru: {
    mic: "Удерживайте, чтобы говорить, или нажмите, чтобы начать и закончить (горячая клавиша тоже работает)",
    mic_label: "Сказать",
    listening: "Слушаю… отпустите или нажмите, чтобы закончить",
    transcribing: "Превращаю речь в текст…",
    heard_nothing: "Ничего не слышно. Попробуйте ещё раз, ближе к микрофону.",
    mic_denied: "Souz не может пользоваться микрофоном: разрешите его для этой страницы (значок замка или камеры рядом с адресом) и попробуйте снова.",
    mic_missing: "Микрофон не найден.",
    mic_unsupported: "Этот браузер не может записывать звук здесь (нужна защищённая страница: http://127.0.0.1 или https).",
    transcribe_failed: "Не удалось превратить речь в текст: {detail}",
    speak_failed: "Не удалось прочитать ответ вслух: {detail}",
    review: "Проверьте текст и отправьте его.",
    spoken_answers: "Читать ответы вслух",
    spoken_off: "Сначала выберите голос: Настройки › Голос (`[voice] tts`).",
    hears_title: "Кто вас слышит",
    hears_engine: "Речь превращает в текст {engine}.",
    hears_cloud: "Ваши записи отправляются ему через интернет.",
    hears_local: "Он работает на этом компьютере: записи его не покидают.",
    hears_not_ready: "Он ещё не готов: {detail}",
    hears_unknown: "Распознавание речи недоступно в этом Souz ({detail}).",
    reads_title: "Кто читает ответы вслух",
    reads_off: "Никто: ответы вслух выключены (`tts = \"off\"`). Выберите голос ниже, затем включите их в настройках чата.",
    reads_voice: "Ответы читает {voice} в чатах, где включено «Читать ответы вслух».",
    reads_cloud: "Текст ответов отправляется ему.",
    reads_local: "Ничто не покидает этот компьютер.",
    reads_problem: "Сейчас он не может говорить: {detail}",
    audio_note: "Записи не хранятся: звук уходит распознавателю, а в поле сообщения возвращается только текст.",
    model_title: "Модель на этом компьютере: {label}",
    model_ready: "Скачана и проверена.",
    model_loaded: "Скачана и сейчас в памяти.",
    model_missing: "Ещё не скачана ({size}). Souz загрузит её с хаба моделей по закреплённому коммиту и проверит каждый файл, прежде чем использовать.",
    model_download: "Скачать",
    model_retry: "Попробовать снова",
    model_downloading: "Скачивается: {received} из {total} ({percent}%). Загрузка продолжится, даже если закрыть эту страницу.",
    model_cancel: "Отменить",
    model_failed: "Не скачалась: {error}",
    model_by_hand: "Это тестовая модель: Souz её не скачивает. Положите config.json, tokenizer.json и model.safetensors в {path}.",
    model_source: "источник",
    model_source_title: "Откуда её скачивает кнопка «Скачать» (каждый файл проверяется)",
    model_done: "{label} скачана и проверена: речь теперь превращается в текст на этом компьютере.",
    model_cancelled: "Загрузка остановлена.",
    model_confirm_cancel: "Остановить загрузку {label}? Уже скачанное будет удалено.",
  },
});

/** A press longer than this is a hold (released: stop); a shorter one is a click (toggle). */
const HOLD_MS = 350;
/** The longest recording; the daemon refuses longer audio anyway. */
const MAX_RECORDING_MS = 120_000;

/** The one recorder of the page, which the app's hotkey drives. @type {{toggle: () => void} | null} */
let active = null;
/** The hotkey came before the chat page was ready: start once it is. */
let startWhenReady = false;

/** Tells the app's tray what the page is doing (no-op in a browser); resolves to whether a
 *  hotkey press waited for the page. @param {"listening" | "transcribing" | "idle"} state
 *  @returns {Promise<boolean>} */
async function reportState(state) {
  const bridge = tauri();
  if (!bridge) return false;
  try {
    const answer = /** @type {{listen?: boolean}} */ (await bridge.invoke("voice_state", { state }));
    return Boolean(answer?.listen);
  } catch (error) { console.warn(error); return false; }
}

// The app's global hotkey: the app has shown the window's chat; toggle the recorder there.
{
  const page = /** @type {{__TAURI__?: {event?: {listen: (name: string, handler: () => void) => Promise<unknown>}}}} */ (/** @type {unknown} */ (window));
  page.__TAURI__?.event?.listen("souz://voice", () => {
    if (active) active.toggle();
    else { startWhenReady = true; if (!location.hash.startsWith("#/chat")) location.hash = "#/chat"; }
  });
}

/** Whether `event` is the `[voice] hotkey` ("CmdOrCtrl+Shift+Space": Ctrl or Cmd, Shift, Space).
 *  @param {KeyboardEvent} event @param {string} hotkey */
export function isHotkey(event, hotkey) {
  const parts = hotkey.toLowerCase().split("+").map((part) => part.trim()).filter(Boolean);
  const key = parts.pop();
  if (!key) return false;
  const want = { ctrl: false, meta: false, alt: false, shift: false, either: false };
  for (const part of parts) {
    if (part === "cmdorctrl" || part === "commandorcontrol") want.either = true;
    else if (part === "ctrl" || part === "control") want.ctrl = true;
    else if (["cmd", "command", "super", "meta"].includes(part)) want.meta = true;
    else if (part === "alt" || part === "option") want.alt = true;
    else if (part === "shift") want.shift = true;
  }
  const ctrl = want.either ? event.ctrlKey || event.metaKey : event.ctrlKey === want.ctrl && event.metaKey === want.meta;
  const pressed = event.code === "Space" ? "space" : event.key.toLowerCase();
  return ctrl && event.altKey === want.alt && event.shiftKey === want.shift && (pressed === key || event.code.toLowerCase() === key || event.code.toLowerCase() === "key" + key);
}

/** The message for a failure to open the mic. @param {unknown} error */
function micError(error) {
  const name = error instanceof DOMException ? error.name : "";
  if (name === "NotAllowedError" || name === "SecurityError") return t("mic_denied");
  if (name === "NotFoundError" || name === "OverconstrainedError") return t("mic_missing");
  return t("transcribe_failed", { detail: error instanceof Error ? error.message : String(error) });
}

/** @typedef {ReturnType<typeof pushToTalk>} PushToTalk */

/**
 * The mic button, its meter, and the spoken answers of one chat page.
 * @param {{input: HTMLTextAreaElement, send: () => void, say: (text: string, error?: boolean) => void}} options
 */
export function pushToTalk({ input, send, say }) {
  const meter = h("span.voice-meter#chat-mic-meter", { hidden: true, "aria-hidden": "true" }, h("span.level"));
  const level = /** @type {HTMLElement} */ (meter.firstChild);
  const mic = h("button#chat-mic", { type: "button", title: t("mic"), "aria-label": t("mic"), "aria-pressed": "false", dataset: { state: "idle" } }, "🎤");
  /** @type {VoiceSettings} */
  let settings = { sendAtOnce: false, hotkey: "", tts: "off", ttsLabel: "", ttsCloud: false, ttsReady: false };
  const loaded = api("GET", "/v1/voice").then((/** @type {VoiceSettings} */ read) => { settings = read; }).catch((error) => console.warn(error));
  let spoken = false;

  /** @type {"idle" | "starting" | "recording" | "transcribing"} */
  let state = "idle";
  let pressedAt = 0;
  let releaseWhenStarted = false;
  let ignoreNextUp = false;
  /** @type {{stream: MediaStream, recorder: MediaRecorder, chunks: Blob[], context: AudioContext, frame: number, limit: number} | null} */
  let recording = null;

  const setState = (/** @type {typeof state} */ next) => {
    state = next;
    mic.dataset.state = next;
    mic.setAttribute("aria-pressed", String(next === "recording"));
    meter.hidden = next !== "recording";
    reportState(next === "recording" || next === "starting" ? "listening" : next === "transcribing" ? "transcribing" : "idle");
  };

  const start = async () => {
    if (state !== "idle") return;
    stopSpeaking();
    setState("starting");
    if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === "undefined") {
      setState("idle");
      say(t("mic_unsupported"), true);
      return;
    }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
    } catch (error) {
      setState("idle");
      say(micError(error), true);
      return;
    }
    const type = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"].find((candidate) => MediaRecorder.isTypeSupported(candidate));
    const recorder = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    /** @type {Blob[]} */
    const chunks = [];
    recorder.addEventListener("dataavailable", (event) => { if (event.data.size) chunks.push(event.data); });
    // The meter: the loudness of the last few milliseconds, as the level bar's width.
    const context = new AudioContext();
    const analyser = context.createAnalyser();
    analyser.fftSize = 1024;
    context.createMediaStreamSource(stream).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    const draw = () => {
      if (!recording) return;
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const sample of samples) sum += sample * sample;
      const loudness = Math.min(1, Math.sqrt(sum / samples.length) * 4);
      level.style.width = `${Math.round(loudness * 100)}%`;
      meter.dataset.level = loudness.toFixed(3);
      if (loudness > Number(meter.dataset.peak || 0)) meter.dataset.peak = loudness.toFixed(3);
      recording.frame = requestAnimationFrame(draw);
    };
    recorder.start(250);
    recording = { stream, recorder, chunks, context, frame: 0, limit: window.setTimeout(() => finish(), MAX_RECORDING_MS) };
    meter.dataset.peak = "0";
    setState("recording");
    say(t("listening"));
    draw();
    if (releaseWhenStarted) { releaseWhenStarted = false; finish(); }
  };

  const finish = async () => {
    if (state !== "recording" || !recording) return;
    const { stream, recorder, chunks, context, frame, limit } = recording;
    setState("transcribing");
    const stopped = new Promise((done) => recorder.addEventListener("stop", done, { once: true }));
    recorder.stop();
    const releasedAt = performance.now();
    await stopped;
    recording = null;
    cancelAnimationFrame(frame);
    clearTimeout(limit);
    for (const track of stream.getTracks()) track.stop();
    context.close().catch(() => {});
    say(t("transcribing"));
    try {
      const type = recorder.mimeType || "audio/webm";
      const audio = new Blob(chunks, { type });
      // Stopped before the recorder wrote anything: nothing to send.
      if (!audio.size) { say(t("heard_nothing"), true); return; }
      const form = new FormData();
      form.append("audio", audio, type.includes("ogg") ? "speech.ogg" : "speech.webm");
      form.append("language", language());
      const heard = /** @type {{text?: string}} */ (await api("POST", "/v1/speech/transcriptions", form));
      const text = (heard.text || "").trim();
      if (!text) { say(t("heard_nothing"), true); return; }
      input.value = input.value.trim() ? `${input.value.trim()} ${text}` : text;
      mic.dataset.releaseToTextMs = String(Math.round(performance.now() - releasedAt));
      await loaded;
      if (settings.sendAtOnce) { say(""); send(); } else { say(t("review")); input.focus(); }
    } catch (error) {
      say(t("transcribe_failed", { detail: error instanceof Error ? error.message : String(error) }), true);
    } finally {
      setState("idle");
    }
  };

  const toggle = () => { if (state === "recording") finish(); else if (state === "idle") start(); };

  mic.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    event.preventDefault();
    stopSpeaking();
    // A recording started by a click ends with the next press.
    if (state === "recording") { ignoreNextUp = true; finish(); return; }
    if (state !== "idle") return;
    // The release comes to the button wherever the pointer is by then (the meter appearing
    // beside it moves it, and a person's hand moves too).
    mic.setPointerCapture(event.pointerId);
    pressedAt = performance.now();
    start();
  });
  mic.addEventListener("pointerup", () => {
    if (ignoreNextUp) { ignoreNextUp = false; return; }
    if (performance.now() - pressedAt < HOLD_MS) return;
    if (state === "starting") releaseWhenStarted = true;
    else finish();
  });
  // Enter or Space on the focused button: a click with no pointer (detail 0) toggles.
  mic.addEventListener("click", (event) => { if (event.detail === 0) toggle(); });
  /** The hotkey in a browser (in the app the system takes it and sends `souz://voice`). @param {KeyboardEvent} event */
  const onKey = (event) => {
    if (!settings.hotkey || !isHotkey(event, settings.hotkey)) return;
    event.preventDefault();
    stopSpeaking();
    toggle();
  };
  document.addEventListener("keydown", onKey);

  // ----- spoken answers -----
  /** The answer playing (or being made), and a counter that retires answers overtaken by a
   *  newer one or by the mic. @type {HTMLAudioElement | null} */
  let playing = null;
  let generation = 0;
  const stopSpeaking = () => {
    generation += 1;
    if (playing) { playing.pause(); URL.revokeObjectURL(playing.src); playing = null; }
    delete mic.dataset.speaking;
  };
  /** Reads `text` aloud when the chat has spoken answers on. @param {string} text */
  const speak = async (text) => {
    if (!spoken || !text.trim()) return;
    stopSpeaking();
    const mine = generation;
    mic.dataset.speaking = "fetching";
    try {
      const audio = await apiBlob("POST", "/v1/speech/synthesis", { text, language: language() });
      if (mine !== generation) return;
      playing = new Audio(URL.createObjectURL(audio));
      playing.addEventListener("ended", () => { if (mine === generation) stopSpeaking(); });
      mic.dataset.speaking = "playing";
      await playing.play();
    } catch (error) {
      if (mine !== generation) return;
      delete mic.dataset.speaking;
      say(t("speak_failed", { detail: error instanceof Error ? error.message : String(error) }), true);
    }
  };

  const controller = { toggle };
  return {
    mic, meter, speak, stopSpeaking,
    /** The chat is loaded: the app's hotkey reaches this recorder now (and one pressed before
     *  starts it). */
    ready() {
      active = controller;
      if (startWhenReady) { startWhenReady = false; start(); return; }
      // The app's hotkey opened the window: its press waited for this page.
      reportState("idle").then((listen) => { if (listen && active === controller) start(); });
    },
    /** Whether this chat reads answers aloud. @param {boolean} on */
    setSpoken(on) { spoken = on; if (!on) stopSpeaking(); },
    /** The voice settings, once read. */
    settings: () => loaded.then(() => settings),
    dispose() {
      stopSpeaking();
      document.removeEventListener("keydown", onKey);
      if (recording) { recording.recorder.stop(); for (const track of recording.stream.getTracks()) track.stop(); recording.context.close().catch(() => {}); clearTimeout(recording.limit); recording = null; }
      if (active === controller) active = null;
      reportState("idle");
    },
  };
}

/** The chat option that reads its answers aloud (`spokenAnswers` in the chat's settings).
 *  @param {boolean} on @param {(on: boolean) => void} change @param {VoiceSettings | null} settings */
export function spokenAnswersSwitch(on, change, settings) {
  const box = h("input#chat-spoken", { type: "checkbox", checked: on });
  box.addEventListener("change", () => change(box.checked));
  const off = settings && settings.tts === "off";
  return h("label.check", { title: off ? t("spoken_off") : settings?.ttsLabel || "" }, box, " ", t("spoken_answers"));
}

/** Whole percent of `part` in `whole`. @param {number} part @param {number} whole */
const percent = (part, whole) => Math.min(100, Math.floor((part * 100) / Math.max(whole, 1)));

/** The in-process model of Settings › Voice: its state, Download with a progress bar, Cancel.
 *  `refresh` reads `GET /v1/speech` again and redraws the card, saying `message` under the model
 *  from then on (none given: what it said before).
 *  @param {SpeechModelInfo} model @param {(message?: string) => Promise<void>} refresh */
function modelSection(model, refresh) {
  const note = h("p.meta#voice-model-note");
  const section = h("div#voice-model", { dataset: { model: model.id, state: model.state, label: model.label } },
    h("p", {}, t("model_title", { label: model.label })));
  /** @param {string} text @param {boolean} [error] */
  const say = (text, error = false) => note.replaceChildren(h(error ? "span.error" : "span", {}, text));
  /** Runs `work`; redraws saying what it answers, or says why it failed.
   *  @param {() => Promise<string | undefined>} work */
  const act = async (work) => {
    let message;
    try { message = await work(); } catch (error) { say(error instanceof Error ? error.message : String(error), true); return; }
    await refresh(message);
  };
  const download = (/** @type {string} */ label) => h("button.primary#voice-model-download", { type: "button", onclick: () => act(async () => {
    await api("POST", `/v1/speech/models/${encodeURIComponent(model.id)}/pull`, {});
    return "";
  }) }, label);
  const source = model.source
    ? h("a.meta.source", { href: model.source, target: "_blank", rel: "noopener noreferrer", title: t("model_source_title") }, t("model_source"))
    : null;
  switch (model.state) {
    case "ready": section.append(h("p.meta", {}, t("model_ready"))); break;
    case "loaded": section.append(h("p.meta", {}, t("model_loaded"))); break;
    case "downloading": {
      section.append(h("div.download", {},
        h("progress", { max: Math.max(model.total, 1), value: Math.min(model.received, model.total) }),
        h("span.meta#voice-model-progress", {}, t("model_downloading", { received: size(model.received), total: size(model.total), percent: percent(model.received, model.total) }))),
      h("p.row", {}, h("button#voice-model-cancel", { type: "button", onclick: () => act(async () => {
        if (!confirm(t("model_confirm_cancel", { label: model.label }))) return undefined;
        await api("DELETE", `/v1/speech/models/${encodeURIComponent(model.id)}`);
        return t("model_cancelled");
      }) }, t("model_cancel"))));
      break;
    }
    case "failed":
      section.append(h("p.error", {}, t("model_failed", { error: model.error })), h("p.row", {}, download(t("model_retry")), source ? " " : null, source));
      break;
    default:
      if (!model.pullable) section.append(h("p.meta.by-hand", {}, t("model_by_hand", { path: model.path })));
      else section.append(h("p.meta", {}, t("model_missing", { size: size(model.bytes) })), h("p.row", {}, download(t("model_download")), source ? " " : null, source));
  }
  section.append(note);
  return section;
}

/** Settings › Voice: which engine hears you (`GET /v1/speech`, with the in-process model and
 *  its download when the engine is `local`) and which voice reads answers (`GET /v1/voice`),
 *  each saying whether anything leaves this machine. `stop` ends the card's following of the
 *  download events.
 *  @returns {Promise<{cards: HTMLElement[], stop: () => void}>} */
export async function voiceCards() {
  const hears = h("div.card#voice-hears");
  /** What every redraw says under the model (how the last download ended) until the next
   *  Download. */
  let after = "";
  /** Counts redraws: only the newest one is shown (answers can arrive out of order). */
  let redraws = 0;
  /** @param {string} [message] */
  const render = async (message) => {
    if (message !== undefined) after = message;
    const redraw = ++redraws;
    /** @type {HTMLElement[]} */
    const parts = [h("h2", {}, t("hears_title"))];
    try {
      /** @type {SpeechStatus} */
      const engine = await api("GET", "/v1/speech");
      parts.push(h("p#voice-engine", { dataset: { engine: engine.engine ?? "", cloud: String(Boolean(engine.cloud)) } }, t("hears_engine", { engine: engine.engineLabel || engine.engine || "?" })),
        h("p.meta", {}, engine.cloud ? t("hears_cloud") : t("hears_local")));
      const model = engine.engine === "local" ? (engine.models ?? []).find((item) => item.selected) : undefined;
      if (model) {
        const section = modelSection(model, render);
        if (after) section.querySelector("#voice-model-note")?.replaceChildren(after);
        parts.push(section);
      } else if (engine.ready === false) {
        parts.push(h("p.meta", {}, t("hears_not_ready", { detail: engine.reason || engine.model || "" })));
      }
    } catch (error) {
      parts.push(h("p.meta", {}, t("hears_unknown", { detail: error instanceof Error ? error.message : String(error) })));
    }
    if (redraw !== redraws) return;
    hears.replaceChildren(...parts, h("p.meta", {}, t("audio_note")));
  };
  await render();
  /** A download's progress moves the bar in place; its end redraws the card. @param {RuntimeEvent} event */
  const follow = (event) => {
    if (event.type !== "speech.model.download.progress" && event.type !== "speech.model.download.completed"
      && event.type !== "speech.model.download.failed" && event.type !== "speech.model.download.cancelled") return;
    const section = hears.querySelector("#voice-model");
    if (!(section instanceof HTMLElement) || section.dataset.model !== event.model) return;
    if (event.type === "speech.model.download.progress") {
      const bar = section.querySelector("progress");
      const label = section.querySelector("#voice-model-progress");
      if (!bar || !label || section.dataset.state !== "downloading") { render(); return; }
      bar.max = Math.max(event.total, 1);
      bar.value = Math.max(bar.value, Math.min(event.received, event.total));
      label.textContent = t("model_downloading", { received: size(bar.value), total: size(event.total), percent: percent(bar.value, event.total) });
      return;
    }
    render(event.type === "speech.model.download.completed" ? t("model_done", { label: section.dataset.label ?? event.model })
      : event.type === "speech.model.download.cancelled" ? t("model_cancelled") : "");
  };
  const stop = onRuntimeEvent(follow);
  const reads = h("div.card#voice-reads", {}, h("h2", {}, t("reads_title")));
  try {
    const voice = /** @type {VoiceSettings} */ (await api("GET", "/v1/voice"));
    if (voice.tts === "off") reads.append(h("p", {}, t("reads_off")));
    else {
      reads.append(h("p#voice-tts", { dataset: { tts: voice.tts, cloud: String(voice.ttsCloud) } }, t("reads_voice", { voice: voice.ttsLabel || voice.tts })),
        h("p.meta", {}, voice.ttsCloud ? t("reads_cloud") : t("reads_local")));
      if (voice.ttsProblem) reads.append(h("p.error", {}, t("reads_problem", { detail: voice.ttsProblem })));
    }
  } catch (error) {
    reads.append(h("p.error", {}, error instanceof Error ? error.message : String(error)));
  }
  return { cards: [hears, reads], stop };
}
