//! The environment Souz reads, declared in one place.
//!
//! Every variable Souz reads is a [`Var`] of the registry below, with who sets it and a line
//! saying what for; reads go through [`read`] / [`read_os`] (or [`process_lookup`], which
//! answers only for registered names). Two reads are not by a registered name, each on purpose:
//! [`configured_variable`] (the user's files name the variable: a skill manifest's pass-through
//! list, an MCP server's `env_vars` and `bearer_token_env`; [`daemon_lookup`] is the runtime's
//! lookup over both kinds) and [`process_environment_os`] (the whole environment, for what
//! commands inherit, their `PATH` and the daemon's snapshot before it scrubs its secrets). Nothing else reads the environment:
//! `clippy.toml` forbids `std::env::var*` outside this file.
//!
//! Some variables override one config key or move the Souz home ([`ENV_OVERRIDES`]); the README
//! lists them, and the provider and service keys, and a test keeps README and registry in
//! sync. Override values are parsed as TOML first (`9000`, `true`) and fall back to plain
//! strings (`127.0.0.1`).

use std::ffi::OsString;

/// Looks up an environment variable; tests pass closures, the binary passes
/// [`process_lookup`].
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Who sets a variable, which decides where it is documented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setter {
    /// The user, to configure Souz: a row of the README's environment table
    /// (and of [`ENV_OVERRIDES`]).
    User,
    /// The user, to give a provider or service key: named in the README's key tables.
    Key,
    /// The operating system or login session: not Souz's to document.
    System,
    /// Tests, benchmarks, the conformance run and the desktop app's test mode: not in the
    /// README.
    Internal,
}

/// Declares [`Var`] and its registry from one list, so no variant lacks a name or a purpose.
/// A variant's attributes (a `cfg`) apply to everything that names it, so a variable that exists
/// only in some builds is absent from the others' registry as a whole.
macro_rules! registry {
    ($($(#[$attr:meta])* $variant:ident => $name:literal, $setter:ident, $purpose:literal;)*) => {
        /// A variable Souz reads (its name, who sets it and what for: [`Var::name`],
        /// [`Var::setter`], [`Var::purpose`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Var {
            $(#[doc = $purpose] $(#[$attr])* $variant,)*
        }

        impl Var {
            /// Every registered variable.
            pub const ALL: &'static [Var] = &[$($(#[$attr])* Var::$variant),*];

            /// The variable's name.
            pub const fn name(self) -> &'static str {
                match self {
                    $($(#[$attr])* Var::$variant => $name,)*
                }
            }

            /// Who sets it.
            pub const fn setter(self) -> Setter {
                match self {
                    $($(#[$attr])* Var::$variant => Setter::$setter,)*
                }
            }

            /// What Souz reads it for (one line).
            pub const fn purpose(self) -> &'static str {
                match self {
                    $($(#[$attr])* Var::$variant => $purpose,)*
                }
            }
        }
    };
}

registry! {
    SouzHome => "SOUZ_HOME", User, "Folder for config.toml, token, database and logs (default ~/.souz).";
    SouzHost => "SOUZ_HOST", User, "Overrides [server] host.";
    SouzPort => "SOUZ_PORT", User, "Overrides [server] port.";
    SouzProxyToken => "SOUZ_PROXY_TOKEN", User, "Overrides [server] trusted_proxy_token (trusted-proxy mode for server deployments).";
    SouzLog => "SOUZ_LOG", User, "Overrides [log] level (e.g. debug, or info,souz_core=trace).";
    OpenAiApiKey => "OPENAI_API_KEY", Key, "The OpenAI key used when no stored key is set.";
    AnthropicApiKey => "ANTHROPIC_API_KEY", Key, "The Anthropic key used when no stored key is set.";
    QwenKey => "QWEN_KEY", Key, "The Qwen (DashScope) key used when no stored key is set.";
    DashscopeApiKey => "DASHSCOPE_API_KEY", Key, "The Qwen key under DashScope's own name (read after QWEN_KEY).";
    AiTunnelKey => "AITUNNEL_KEY", Key, "The AiTunnel key used when no stored key is set.";
    GigaKey => "GIGA_KEY", Key, "The GigaChat authorization key used when no stored key is set.";
    BraveSearchApiKey => "BRAVE_SEARCH_API_KEY", Key, "The Brave Search key of InternetSearch and InternetResearch when none is stored.";
    TelegramBotToken => "TELEGRAM_BOT_TOKEN", Key, "The Telegram bot's token ([channels.telegram]) when none is stored.";
    SaluteSpeechKey => "SALUTE_SPEECH_KEY", Key, "The SaluteSpeech authorization key ([speech] engine = \"salute\") when none is stored.";
    Home => "HOME", System, "The user's home: where ~/.souz is and the trash folder's fallback.";
    User => "USER", System, "The local user's display name.";
    LogName => "LOGNAME", System, "The local user's display name when USER is not set.";
    Tz => "TZ", System, "The machine's time zone, before /etc/localtime.";
    XdgDataHome => "XDG_DATA_HOME", System, "Where the freedesktop trash folder is (before ~/.local/share).";
    LcAll => "LC_ALL", System, "The interface language (first of LC_ALL, LC_MESSAGES, LANG).";
    LcMessages => "LC_MESSAGES", System, "The interface language when LC_ALL is not set.";
    Lang => "LANG", System, "The interface language when neither LC_ALL nor LC_MESSAGES is set.";
    AppNoTray => "SOUZ_APP_NO_TRAY", Internal, "The desktop app starts without its tray icon (its end-to-end run under Xvfb).";
    McpConformanceContext => "MCP_CONFORMANCE_CONTEXT", Internal, "The client the MCP conformance suite pre-registered (JSON), for its auth run.";
    BenchPrompts => "SOUZ_BENCH_PROMPTS", Internal, "How many prompts the local-model benchmark runs.";
    TestLocalLlm => "SOUZ_TEST_LOCAL_LLM", Internal, "The GGUF file of the small chat model the local-model tests run.";
    TestEmbeddingModel => "SOUZ_TEST_EMBEDDING_MODEL", Internal, "The folder of the small embedding model tests run.";
    TestWhisperModel => "SOUZ_TEST_WHISPER_MODEL", Internal, "The folder of the small Whisper model (tiny.en, converted) the speech tests run.";
    TestMultilingualModel => "SOUZ_TEST_MULTILINGUAL_MODEL", Internal, "The folder of multilingual-e5-small's files (config.json, tokenizer.json, model.safetensors) the cross-language recall test and the memory bench use when present.";
    TestMultilingualEndpoint => "SOUZ_TEST_MULTILINGUAL_EMBEDDINGS_URL", Internal, "An OpenAI-compatible embeddings endpoint (up to /v1) serving multilingual-e5-small, which the cross-language recall test and the memory bench use when no model folder is given.";
    NoModelDownloads => "SOUZ_NO_MODEL_DOWNLOADS", Internal, "Set (to 1) by every test harness that starts Souz: no local model is downloaded on first use; a missing one stays missing and memory recalls by words (tests never reach the internet).";
    TestClientToolTimeout => "SOUZ_TEST_CLIENT_TOOL_TIMEOUT_MS", Internal, "Milliseconds every client tool call waits for its device instead of its skill's deadline (the end-to-end test of a call that times out).";
    #[cfg(debug_assertions)]
    TestCrashAt => "SOUZ_TEST_CRASH_AT", Internal, "Debug builds only: the point of the file history's write path (history.after_checkpoint, history.after_write) where the process aborts, for the end-to-end crash test.";
}

impl Var {
    /// The registered variable named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|var| var.name() == name)
    }
}

/// The value of `var` in the process environment (`None` when unset or not UTF-8).
pub fn read(var: Var) -> Option<String> {
    read_os(var).and_then(|value| value.into_string().ok())
}

/// The value of `var` in the process environment as it is (not necessarily UTF-8).
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads a variable of the process environment"
)]
pub fn read_os(var: Var) -> Option<OsString> {
    std::env::var_os(var.name())
}

/// The process environment as an [`EnvLookup`]: a registered name reads its variable, any other
/// name reads nothing (and is logged), so a lookup cannot reach past the registry.
pub fn process_lookup(name: &str) -> Option<String> {
    match Var::from_name(name) {
        Some(var) => read(var),
        None => {
            tracing::warn!(
                name,
                "not reading an environment variable missing from the registry"
            );
            None
        }
    }
}

/// The value of a variable whose name Souz does not know when it is built, because the user's
/// own files name it: a skill manifest's `env` list (passed through to the skill's commands,
/// approved with the manifest) and an MCP server's `env_vars` and `bearer_token_env` in
/// `config.toml`. Such a name cannot be a [`Var`]; this is the one read by any name.
#[allow(
    clippy::disallowed_methods,
    reason = "variables named by the user's config or a skill manifest, not by Souz"
)]
pub fn configured_variable(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The daemon's environment as the runtime reads it (its provider and service keys, and the
/// variables `config.toml` names for MCP servers): a registered name through [`read`], any
/// other through [`configured_variable`].
pub fn daemon_lookup(name: &str) -> Option<String> {
    match Var::from_name(name) {
        Some(var) => read(var),
        None => configured_variable(name),
    }
}

/// The whole process environment. Its users need every variable, not one by name: what
/// commands inherit (filtered by `sandbox::environment::inheritable`, which drops secrets),
/// the `PATH` commands and git are searched on (`sandbox::environment::command_search_path`),
/// and the daemon's snapshot taken before it scrubs secrets from its own environment block
/// (`sandbox::daemon_process::environment_snapshot`: the variables `config.toml` names for MCP
/// servers are read from it afterwards, so it keeps every one).
#[allow(
    clippy::disallowed_methods,
    reason = "the one place that reads the whole process environment"
)]
pub fn process_environment_os() -> std::env::VarsOs {
    std::env::vars_os()
}

/// The system's interface language: the first set of `LC_ALL`, `LC_MESSAGES` and `LANG`
/// (English when it names neither Russian nor English).
pub fn system_language(env: EnvLookup<'_>) -> souz_protocol::language::Language {
    let values = [Var::LcAll, Var::LcMessages, Var::Lang].map(|var| env(var.name()));
    souz_protocol::language::Language::from_locale_vars(values.iter().map(Option::as_deref))
}

/// What an environment variable overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideTarget {
    /// The Souz home folder itself.
    Home,
    /// One key of `config.toml`.
    Key {
        /// Section name.
        section: &'static str,
        /// Key inside the section.
        key: &'static str,
    },
}

/// One supported environment variable.
#[derive(Debug, Clone, Copy)]
pub struct EnvOverride {
    /// Variable name.
    pub name: &'static str,
    /// What it overrides.
    pub target: OverrideTarget,
    /// One line for the README and `--help`.
    pub doc: &'static str,
}

/// The variables that move the Souz home or override one config key (each also a [`Var`]
/// set by the [`Setter::User`]).
pub const ENV_OVERRIDES: &[EnvOverride] = &[
    EnvOverride {
        name: "SOUZ_HOME",
        target: OverrideTarget::Home,
        doc: "Folder for config.toml, token, database and logs (default ~/.souz).",
    },
    EnvOverride {
        name: "SOUZ_HOST",
        target: OverrideTarget::Key {
            section: "server",
            key: "host",
        },
        doc: "Overrides [server] host.",
    },
    EnvOverride {
        name: "SOUZ_PORT",
        target: OverrideTarget::Key {
            section: "server",
            key: "port",
        },
        doc: "Overrides [server] port.",
    },
    EnvOverride {
        name: "SOUZ_PROXY_TOKEN",
        target: OverrideTarget::Key {
            section: "server",
            key: "trusted_proxy_token",
        },
        doc: "Overrides [server] trusted_proxy_token (trusted-proxy mode for server deployments).",
    },
    EnvOverride {
        name: "SOUZ_LOG",
        target: OverrideTarget::Key {
            section: "log",
            key: "level",
        },
        doc: "Overrides [log] level (e.g. debug, or info,souz_core=trace).",
    },
];

/// Turns an environment string into the TOML value it most likely means.
pub fn env_value(raw: &str) -> toml_edit::Value {
    raw.trim()
        .parse::<toml_edit::Value>()
        .unwrap_or_else(|_| toml_edit::Value::from(raw))
}

#[cfg(test)]
mod tests;
