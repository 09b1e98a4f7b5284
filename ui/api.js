// @ts-check
// The one way the page talks to the Souz daemon: fetch with the bearer token, and WebSockets
// that present the token as the `souz.token.<token>` subprotocol (browsers cannot set headers
// on WebSockets). The token comes from the URL fragment (`#token=...`), never from the server,
// or from a one-time code (`#code=...`, what `souz ui --open` opens) traded for it once.

import { strings } from "./i18n.js";

const TOKEN_KEY = "souz.token";

/** What an error code means, in Russian (English shows the daemon's own message). `{detail}` is
 *  that message: what only the daemon can say (which field, which file) stays as it wrote it.
 *  Keyed by the envelope's `code` (docs/openapi.json); the CLI says the same
 *  (`ErrorCode::said` in crates/protocol, whose test keeps the two alike). */
const errors = strings({
  en: {},
  ru: {
    invalid_request: "Запрос не принят: {detail}",
    unauthorized: "Ключ доступа к Souz не подошёл: войдите снова.",
    forbidden_host: "Souz отвечает только на своём адресе (127.0.0.1).",
    forbidden_origin: "Souz не принимает запросы с этой страницы.",
    not_found: "Не найдено: {detail}",
    method_not_allowed: "Souz так не умеет: {detail}",
    payload_too_large: "Слишком большой запрос: {detail}",
    conflict: "Не получилось: {detail}",
    unavailable: "Souz сейчас недоступен: {detail}",
    internal_error: "Внутренняя ошибка Souz; подробности в его журнале.",
    chat_not_found: "Такого чата нет (или он не ваш).",
    execution_not_found: "В этом чате нет такого хода агента.",
    option_not_found: "Такого вопроса нет.",
    chat_already_has_active_execution: "В этом чате уже работает агент: дождитесь ответа или остановите его.",
    idempotency_conflict: "Этот запрос уже отправлялся с другим содержимым.",
    unsupported_backend_model: "Эту модель нельзя использовать в чатах: {detail}",
    onboarding_requires_model_access: "Пока нет ни одной доступной модели: добавьте API-ключ провайдера (`souz keys set openai` или страница настройки в веб-интерфейсе: `souz ui --open`) или запустите локальный сервер моделей (Ollama, LM Studio или llama.cpp на его обычном порту).",
    untrusted_proxy: "Прокси не подтвердил, что ему можно доверять.",
    missing_user_identity: "Прокси не сообщил, кто вы.",
    invalid_user_identity: "Прокси сообщил непригодное имя пользователя.",
    agent_execution_failed: "Агент не смог начать работу: {detail}",
    paused: "Souz на паузе: агенты и запросы разрешений ждут, пока вы не продолжите.",
    forbidden: "Это может делать только владелец Souz.",
  },
});

/** Reads `#token=` or `#code=` (and an optional `go=` route) from the fragment, removes it
 *  from the address bar and history, and keeps the token for this tab (a code is traded for
 *  it first: it works once, for about a minute). Resolves to the route to open, or null. */
export async function takeTokenFromFragment() {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ""));
  const token = fragment.get("token");
  const code = fragment.get("code");
  if (!token && !code) return null;
  const route = fragment.get("go") || "/chat";
  history.replaceState(null, "", location.pathname + location.search + "#" + route);
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    return route;
  }
  // The exchange is public: it carries the code, no token.
  const exchanged = await request("POST", "/v1/ui-codes/exchange", { code }, {});
  sessionStorage.setItem(TOKEN_KEY, exchanged.token);
  return route;
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value.trim());
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** An API error with the daemon's envelope (`code`, `message`) and the whole body. */
export class ApiError extends Error {
  /** @param {number} status @param {import("./types.js").ErrorBody | null} body */
  constructor(status, body) {
    const detail = body?.error?.message || `HTTP ${status}`;
    const code = body?.error?.code || "http_error";
    const said = errors(code, { detail });
    super(said === code ? detail : said);
    this.status = status;
    this.code = code;
    /** The daemon's own words. */
    this.detail = detail;
    this.body = body;
  }
}

/** One authenticated call. The answer is the parsed JSON body: callers name its type from
 *  ./types.js (generated from the OpenAPI document) with a JSDoc cast. A `body` is sent as
 *  JSON, a Blob as its bytes with its own type.
 *  @param {string} method @param {string} path @param {unknown} [body]
 *  @returns {Promise<any>} */
export async function api(method, path, body) {
  return request(method, path, body, { Authorization: `Bearer ${token()}` });
}

/** One call of the daemon with `headers`; a failing answer becomes an ApiError. A FormData
 *  body goes as multipart (the browser writes its boundary).
 *  @param {string} method @param {string} path @param {unknown} body
 *  @param {Record<string, string>} headers @returns {Promise<any>} */
async function request(method, path, body, headers) {
  const response = await send(method, path, body, headers);
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

/** @param {string} method @param {string} path @param {unknown} body
 *  @param {Record<string, string>} headers @returns {Promise<Response>} */
function send(method, path, body, headers) {
  const bytes = body instanceof Blob;
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers["Content-Type"] = bytes ? body.type || "application/octet-stream" : "application/json";
  return fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : bytes || form ? body : JSON.stringify(body),
    cache: "no-store",
  });
}

/** One authenticated call whose answer is bytes (audio): the Blob; a failing answer (JSON
 *  envelope) becomes an ApiError. @param {string} method @param {string} path @param {unknown} [body]
 *  @returns {Promise<Blob>} */
export async function apiBlob(method, path, body) {
  const response = await send(method, path, body, { Authorization: `Bearer ${token()}` });
  if (response.ok) return response.blob();
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { /* not the envelope: the status says it */ }
  throw new ApiError(response.status, parsed);
}

/** Opens a WebSocket to `path` and calls `onFrame` with each parsed frame. Reconnects with
 *  backoff while `keep()` is true; `onOpen` runs before each (re)connection so the caller can
 *  pick where to resume (it returns the path to use). Returns a function that closes it. */
/** @template Frame The frame type the stream sends (from ./types.js), named by `onFrame`.
 *  @param {() => string} pathFor @param {(frame: Frame) => void} onFrame
 *  @param {{onState?: (up: boolean) => void, keep?: () => boolean}} [options]
 *  @returns {() => void} */
export function follow(pathFor, onFrame, { onState = (_up) => {}, keep = () => true } = {}) {
  let socket = null;
  let closed = false;
  let delay = 500;
  const connect = () => {
    if (closed || !keep()) return;
    const url = new URL(pathFor(), location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(url, ["souz", "souz.token." + token()]);
    socket.onopen = () => { delay = 500; onState(true); };
    socket.onmessage = (message) => {
      try { onFrame(JSON.parse(message.data)); } catch (error) { console.error(error); }
    };
    socket.onclose = () => {
      onState(false);
      if (!closed) setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  };
  connect();
  return () => { closed = true; socket?.close(); };
}

/** @typedef {{invoke: (command: string, args?: Record<string, unknown>) => Promise<any>}} TauriCore */

/** The Tauri bridge when the page runs inside the menu-bar app, else null.
 *  @returns {TauriCore | null} */
export function tauri() {
  const page = /** @type {{__TAURI__?: {core?: TauriCore}}} */ (/** @type {unknown} */ (window));
  return page.__TAURI__?.core ?? null;
}
