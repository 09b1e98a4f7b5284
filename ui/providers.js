// @ts-check
// Model providers by the names people know (`ai_tunnel` is AiTunnel, `giga` GigaChat,
// `lm_studio` LM Studio): the one table every page shows them from — Settings' and the setup's key
// lists, the local servers found, the model pickers. The wire and config names (`openai`,
// `ollama/llama3.2`) stay the values; only what a person reads changes.

import { strings } from "./i18n.js";

/** A provider's wire name → its name, as its makers write it. */
const NAMES = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  qwen: "Qwen",
  ai_tunnel: "AiTunnel",
  giga: "GigaChat",
  codex: "ChatGPT (Codex)",
  ollama: "Ollama",
  lm_studio: "LM Studio",
  llama_cpp: "llama.cpp",
};

const t = strings({
  en: { local: "Souz (on this computer)" },
  ru: { local: "Souz (на этом компьютере)" },
});

/** The name a person knows `provider` by; an unknown one as it is.
 *  @param {string} provider */
export function providerName(provider) {
  if (provider === "local") return t("local");
  return Object.hasOwn(NAMES, provider) ? NAMES[provider] : provider;
}

/** A model as a person reads it: "qwen3:8b · Ollama" for `ollama/qwen3:8b` (or for the
 *  provider and model apart); a name that is not `provider/model` (an alias) as it is.
 *  @param {string} providerOrValue @param {string} [model] */
export function modelName(providerOrValue, model) {
  let provider = providerOrValue;
  if (model === undefined) {
    const slash = providerOrValue.indexOf("/");
    provider = slash > 0 ? providerOrValue.slice(0, slash) : "";
    model = slash > 0 ? providerOrValue.slice(slash + 1) : providerOrValue;
    if (!provider || (!Object.hasOwn(NAMES, provider) && provider !== "local")) return providerOrValue;
  }
  return `${model} · ${providerName(provider)}`;
}
