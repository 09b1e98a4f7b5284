//! Why a transcription failed, and how each failure is said to the person in their language
//! ([`SpeechError::say`]). The runtime's facade maps it to the wire once
//! (`runtime::facade::speech`).

use std::time::Duration;

use souz_protocol::language::Language;
use souz_protocol::localized;

/// Why a transcription failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpeechError {
    /// The upload has no audio field, or it is empty.
    #[error("no audio was sent")]
    Empty,
    /// The upload is larger than the bound.
    #[error("the audio file is larger than {limit} bytes")]
    TooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// The audio is longer than the bound.
    #[error("the audio is {seconds} s long; at most {limit} s are accepted")]
    TooLong {
        /// Its length (or how far decoding got before stopping), in seconds.
        seconds: u64,
        /// The bound, in seconds.
        limit: u64,
    },
    /// The container or codec is not one Souz reads.
    #[error("unsupported audio: {0} (send WAV, OGG/Opus or WebM/Opus)")]
    Unsupported(String),
    /// The file claims a format but breaks it.
    #[error("the audio file is damaged: {0}")]
    Malformed(String),
    /// A request named an engine that does not exist.
    #[error("unknown speech engine `{0}` (local, openai, ai_tunnel, salute, server)")]
    UnknownEngine(String),
    /// A request named an unusable language.
    #[error("`{0}` is not a language code (ru, en, ...)")]
    BadLanguage(String),
    /// The engine cannot hear this language.
    #[error("{engine} does not know the language `{language}`")]
    UnsupportedLanguage {
        /// The engine.
        engine: &'static str,
        /// The language asked for.
        language: String,
    },
    /// The engine needs a key that is not set.
    #[error("{engine} needs a key: {how}")]
    MissingKey {
        /// The engine.
        engine: &'static str,
        /// How to set one.
        how: &'static str,
    },
    /// `server` has no URL and none was found on this machine.
    #[error(
        "no transcription server: set [speech] server_url, or start a whisper.cpp server on 127.0.0.1:8080"
    )]
    NoServer,
    /// The local model's files are not there.
    #[error(
        "the speech model {model} is not downloaded (its files config.json, tokenizer.json and \
         model.safetensors belong in {path}; `souz models pull {model}` fetches a model Souz pins)"
    )]
    ModelMissing {
        /// Its catalog id.
        model: String,
        /// Where its files belong.
        path: String,
        /// Whether Souz can download it (pinned on the model hub).
        pullable: bool,
    },
    /// `[speech] local_model` names no model of the catalog.
    #[error("unknown speech model `{0}`")]
    UnknownModel(String),
    /// The local model's files are there but do not load.
    #[error("the speech model could not be loaded: {0}")]
    ModelBroken(String),
    /// The engine refused its key (401/403).
    #[error("{engine} refused the key (HTTP {status}); check it")]
    Unauthorized {
        /// The engine.
        engine: &'static str,
        /// The status.
        status: u16,
    },
    /// The engine is rate-limiting (429).
    #[error("{engine} is rate-limiting requests; try again{}", retry_after.map(|after| format!(" in {} s", after.as_secs().max(1))).unwrap_or_default())]
    RateLimited {
        /// The engine.
        engine: &'static str,
        /// When to try again, if it said.
        retry_after: Option<Duration>,
    },
    /// The engine took longer than `[speech] timeout_seconds`.
    #[error("{engine} did not answer within {seconds} s")]
    TimedOut {
        /// The engine.
        engine: &'static str,
        /// The bound.
        seconds: u64,
    },
    /// The engine could not be reached.
    #[error("{engine} could not be reached: {detail}")]
    Unreachable {
        /// The engine.
        engine: &'static str,
        /// What failed (no secrets).
        detail: String,
    },
    /// The engine answered with an error or something unreadable.
    #[error("{engine} failed (HTTP {status}): {message}")]
    Rejected {
        /// The engine.
        engine: &'static str,
        /// Its status (0: a readable status was not the problem).
        status: u16,
        /// What it said (bounded, no secrets).
        message: String,
    },
    /// The request was cancelled (the client went away, the daemon stops).
    #[error("the transcription was cancelled")]
    Cancelled,
    /// Something broke inside; the detail is for the log only.
    #[error("speech: {0}")]
    Internal(String),
}

impl SpeechError {
    /// The error as the person reads it, in `language`.
    pub fn say(&self, language: Language) -> String {
        self.said_of_the_audio(language)
            .or_else(|| self.said_of_the_engine(language))
            .unwrap_or_else(|| {
                localized!(
                    language,
                    "Speech recognition failed inside Souz; details are in its log.",
                    "Распознавание речи не удалось из-за внутренней ошибки Souz; подробности в журнале."
                )
            })
    }

    /// What is said of a request or its audio (before any engine runs).
    fn said_of_the_audio(&self, language: Language) -> Option<String> {
        Some(match self {
            Self::Empty => localized!(language, "No audio was sent.", "Звук не получен."),
            Self::TooLarge { limit } => localized!(
                language,
                "The recording is too large: at most {} MB.",
                "Запись слишком большая: не больше {} МБ.",
                limit >> 20
            ),
            Self::TooLong { limit, .. } => localized!(
                language,
                "The recording is too long: at most {} seconds.",
                "Запись слишком длинная: не больше {} секунд.",
                limit
            ),
            Self::Unsupported(what) => localized!(
                language,
                "This audio format is not supported ({}): send WAV, OGG/Opus or WebM/Opus.",
                "Такой формат звука не поддерживается ({}): нужен WAV, OGG/Opus или WebM/Opus.",
                what
            ),
            Self::Malformed(what) => localized!(
                language,
                "The recording is damaged: {}.",
                "Запись повреждена: {}.",
                what
            ),
            Self::UnknownEngine(name) => localized!(
                language,
                "Unknown speech engine `{}` (local, openai, ai_tunnel, salute, server).",
                "Неизвестный движок распознавания `{}` (local, openai, ai_tunnel, salute, server).",
                name
            ),
            Self::BadLanguage(code) => localized!(
                language,
                "`{}` is not a language code (ru, en, ...).",
                "`{}` — не код языка (ru, en, ...).",
                code
            ),
            _ => return None,
        })
    }

    /// What is said of an engine that cannot run or failed.
    fn said_of_the_engine(&self, language: Language) -> Option<String> {
        Some(match self {
            Self::UnsupportedLanguage {
                engine,
                language: code,
            } => localized!(
                language,
                "{} cannot recognise the language `{}`.",
                "{} не распознаёт язык `{}`.",
                engine,
                code
            ),
            Self::MissingKey { engine, how } => localized!(
                language,
                "{} needs a key: {}.",
                "Для {} нужен ключ: {}.",
                engine,
                how
            ),
            Self::NoServer => localized!(
                language,
                "No transcription server: set [speech] server_url, or start a whisper.cpp server on 127.0.0.1:8080.",
                "Нет сервера распознавания: задайте [speech] server_url или запустите сервер whisper.cpp на 127.0.0.1:8080."
            ),
            Self::ModelMissing {
                model,
                path,
                pullable,
            } => model_missing(language, model, path, *pullable),
            Self::UnknownModel(model) => localized!(
                language,
                "Unknown speech model `{}` ([speech] local_model).",
                "Неизвестная модель распознавания `{}` ([speech] local_model).",
                model
            ),
            Self::ModelBroken(detail) => localized!(
                language,
                "The speech model could not be loaded ({}): replace its files with good ones.",
                "Модель распознавания не загрузилась ({}): замените её файлы исправными.",
                detail
            ),
            Self::Unauthorized { engine, status } => localized!(
                language,
                "{} refused the key (HTTP {}): check it in Settings.",
                "{} не принял ключ (HTTP {}): проверьте его в настройках.",
                engine,
                status
            ),
            Self::RateLimited {
                engine,
                retry_after,
            } => rate_limited(language, engine, *retry_after),
            Self::TimedOut { engine, seconds } => localized!(
                language,
                "{} did not answer within {} s.",
                "{} не ответил за {} с.",
                engine,
                seconds
            ),
            Self::Unreachable { engine, detail } => localized!(
                language,
                "{} could not be reached: {}.",
                "Не удалось связаться с {}: {}.",
                engine,
                detail
            ),
            Self::Rejected {
                engine,
                status,
                message,
            } => localized!(
                language,
                "{} failed (HTTP {}): {}",
                "{} вернул ошибку (HTTP {}): {}",
                engine,
                status,
                message
            ),
            Self::Cancelled => localized!(
                language,
                "The transcription was cancelled.",
                "Распознавание отменено."
            ),
            _ => return None,
        })
    }
}

/// What is said of an engine that rate-limits.
fn rate_limited(language: Language, engine: &str, retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(after) => localized!(
            language,
            "{} is busy (too many requests): try again in {} s.",
            "{} перегружен (слишком много запросов): попробуйте через {} с.",
            engine,
            after.as_secs().max(1)
        ),
        None => localized!(
            language,
            "{} is busy (too many requests): try again later.",
            "{} перегружен (слишком много запросов): попробуйте позже.",
            engine
        ),
    }
}

/// What is said of a local model whose files are missing: how to download it, or, for the
/// tests' model, where to place it.
fn model_missing(language: Language, model: &str, path: &str, pullable: bool) -> String {
    if pullable {
        localized!(
            language,
            "The speech model {} is not downloaded yet: download it in Settings › Voice or with `souz models pull {}` (its files go to {}).",
            "Модель распознавания {} ещё не загружена: скачайте её в Настройки › Голос или командой `souz models pull {}` (её файлы сохраняются в {}).",
            model,
            model,
            path
        )
    } else {
        localized!(
            language,
            "The speech model {} is not downloaded: it is the tests' model, which Souz does not fetch; its files (config.json, tokenizer.json, model.safetensors) belong in {}.",
            "Модель распознавания {} не загружена: это тестовая модель, Souz её не скачивает; её файлы (config.json, tokenizer.json, model.safetensors) должны лежать в {}.",
            model,
            path
        )
    }
}
