//! The speech service: picks the engine a request names (or `[speech] engine`), decodes the
//! upload, runs the engine, and keeps the one piece of state engines share — the in-process
//! Whisper model, loaded on first use and unloaded after `[speech] local_idle_minutes` without
//! use — and SaluteSpeech's token cache.
//!
//! Invariants: decoding and the model run on blocking threads, never on the async workers;
//! one local transcription runs at a time (the model is behind a mutex: two at once would only
//! share the same cores); an upload is written to the Souz home only when `[speech]
//! keep_audio` is on, and nothing else keeps it; a `server` engine with no URL is looked for on
//! loopback only ([`discover_server`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use souz_protocol::ProviderId;
use souz_protocol::language::Language;
use tokio_util::sync::CancellationToken;

use super::catalog::{self, SpeechModel};
use super::openai::OpenAiCompatible;
use super::salute::{Salute, SaluteTokens};
use super::whisper::WhisperModel;
use super::{Audio, EngineKind, MAX_AUDIO, MAX_UPLOAD_BYTES, SpeechError, Transcriber, decode};
use crate::config::Config;
use crate::llm::service::LlmService;
use crate::tasks::Tasks;

/// The service key SaluteSpeech's authorization key is stored under.
pub(crate) const SALUTE_KEY: &str = "salute_speech";
/// Where whisper.cpp's server listens by default.
pub(crate) const WHISPER_CPP: &str = "http://127.0.0.1:8080";
/// How long the loopback probe for a server may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(1500);

/// One transcription asked for.
#[derive(Debug, Clone, Default)]
pub struct TranscriptionRequest {
    /// The upload, as sent.
    pub audio: Vec<u8>,
    /// The language spoken (`ru`, `en`); `None`: `[speech] language`, else the interface's.
    pub language: Option<String>,
    /// The engine; `None`: `[speech] engine`.
    pub engine: Option<String>,
}

/// What was heard.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcription {
    /// The text.
    pub text: String,
    /// The engine that heard it.
    pub engine: EngineKind,
    /// Whether the audio left the machine.
    pub cloud: bool,
    /// The language it was told.
    pub language: String,
    /// The audio's length.
    pub audio_ms: u64,
    /// Decoding took this long.
    pub decode_ms: u64,
    /// The engine took this long.
    pub transcribe_ms: u64,
}

/// Who a transcription is for: their keys (the model service acting for them) and their
/// interface language.
#[derive(Debug, Clone, Copy)]
pub struct Person<'a> {
    /// The model service acting for them (their provider and service keys).
    pub llm: &'a LlmService,
    /// Their interface language.
    pub language: Language,
}

/// The engine a request would use, and whether it can run now.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineStatus {
    /// The engine.
    pub engine: EngineKind,
    /// Whether audio leaves the machine with it.
    pub cloud: bool,
    /// Its model.
    pub model: String,
    /// `None` when it can run; else why not.
    pub not_ready: Option<SpeechError>,
    /// The languages it hears.
    pub languages: Vec<String>,
}

/// The in-process model, shared by every request.
#[derive(Debug, Default)]
struct Local {
    /// The loaded model and the folder it came from.
    model: Mutex<Option<(PathBuf, WhisperModel)>>,
    last_used: Mutex<Option<Instant>>,
    sweeping: std::sync::atomic::AtomicBool,
}

/// Speech to text for the runtime. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SpeechService {
    local: Arc<Local>,
    tokens: SaluteTokens,
    tasks: Tasks,
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The language code a request may name: two or three lowercase letters (`ru`, `en`), an
/// optional region dropped (`ru-RU`).
pub(crate) fn language_code(language: &str) -> Result<String, SpeechError> {
    let code = language
        .trim()
        .split(['-', '_'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if (2..=3).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase()) {
        Ok(code)
    } else {
        Err(SpeechError::BadLanguage(language.trim().to_owned()))
    }
}

/// Whether `url` points at this machine (an http(s) URL whose host is a loopback address or
/// `localhost`).
fn loopback(url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    if !matches!(url.scheme(), "http" | "https") {
        return false;
    }
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

/// Looks for whisper.cpp's server on loopback ([`WHISPER_CPP`]): its page names it. The
/// endpoint it answers transcriptions on, or `None`.
pub(crate) async fn discover_server(base: &str) -> Option<String> {
    if !loopback(base) {
        return None;
    }
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    let base = base.trim().trim_end_matches('/');
    let response = client.get(format!("{base}/")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = crate::llm::http::bounded::read_limited(response, 256 << 10)
        .await
        .ok()?;
    String::from_utf8_lossy(&body)
        .to_ascii_lowercase()
        .contains("whisper")
        .then(|| format!("{base}/inference"))
}

impl SpeechService {
    /// A service whose background work (the idle unload) runs on `tasks`.
    pub(crate) fn new(tasks: Tasks) -> Self {
        Self {
            local: Arc::default(),
            tokens: SaluteTokens::default(),
            tasks,
        }
    }

    /// The engine `requested` names, else `[speech] engine`.
    fn kind(config: &Config, requested: Option<&str>) -> Result<EngineKind, SpeechError> {
        let name = requested
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .unwrap_or(config.speech.engine.as_str());
        EngineKind::parse(name).ok_or_else(|| SpeechError::UnknownEngine(name.trim().to_owned()))
    }

    /// The language a request is heard in: the one asked for, else `[speech] language`, else
    /// the interface's.
    pub(crate) fn language(
        config: &Config,
        requested: Option<&str>,
        interface: Language,
    ) -> Result<String, SpeechError> {
        match requested.map(str::trim).filter(|code| !code.is_empty()) {
            Some(code) => language_code(code),
            None if !config.speech.language.trim().is_empty() => {
                language_code(&config.speech.language)
            }
            None => Ok(interface.code().to_owned()),
        }
    }

    fn models_dir(config: &Config) -> PathBuf {
        config.paths.home().join("models")
    }

    fn local_model(config: &Config) -> Result<(&'static SpeechModel, PathBuf), SpeechError> {
        let id = config.speech.local_model.trim();
        let model = catalog::find(id).ok_or_else(|| SpeechError::UnknownModel(id.to_owned()))?;
        Ok((model, model.dir(&Self::models_dir(config))))
    }

    /// The engine of `kind`, ready to call (keys looked up, the server found).
    async fn engine(
        &self,
        config: &Config,
        llm: &LlmService,
        kind: EngineKind,
    ) -> Result<Arc<dyn Transcriber>, SpeechError> {
        let speech = &config.speech;
        let timeout = Duration::from_secs(speech.timeout_seconds.max(1));
        let client = llm.http().client().clone();
        let cloud = |base: &str, key: Option<crate::llm::keys::ApiKey>| OpenAiCompatible {
            client: client.clone(),
            kind,
            endpoint: format!("{}/audio/transcriptions", base.trim().trim_end_matches('/')),
            key,
            model: speech.cloud_model.clone(),
            timeout,
        };
        let key = |provider| async move {
            llm.key(provider)
                .await
                .map_err(|error| SpeechError::Internal(error.to_string()))
        };
        Ok(match kind {
            EngineKind::Local => {
                let (model, dir) = Self::local_model(config)?;
                Arc::new(LocalEngine {
                    service: self.clone(),
                    model,
                    dir,
                    idle: Duration::from_secs(speech.local_idle_minutes.max(1) * 60),
                })
            }
            EngineKind::OpenAi => {
                let key = key(ProviderId::OpenAi)
                    .await?
                    .ok_or(SpeechError::MissingKey {
                        engine: "OpenAI",
                        how: "store the openai provider key (Settings → Keys, or OPENAI_API_KEY)",
                    })?;
                Arc::new(cloud(&config.llm.openai_base_url, Some(key)))
            }
            EngineKind::AiTunnel => {
                let key = key(ProviderId::AiTunnel)
                    .await?
                    .ok_or(SpeechError::MissingKey {
                        engine: "AiTunnel",
                        how: "store the ai_tunnel provider key (Settings → Keys, or AITUNNEL_KEY)",
                    })?;
                Arc::new(cloud(&config.llm.ai_tunnel_base_url, Some(key)))
            }
            EngineKind::Salute => {
                let key = llm
                    .service_key(SALUTE_KEY)
                    .await
                    .map_err(|error| SpeechError::Internal(error.to_string()))?
                    .ok_or(SpeechError::MissingKey {
                        engine: "SaluteSpeech",
                        how: "store the salute_speech service key (Settings → Keys, or SALUTE_SPEECH_KEY)",
                    })?;
                Arc::new(Salute {
                    client,
                    auth_url: speech.salute_auth_url.clone(),
                    url: speech.salute_url.clone(),
                    scope: speech.salute_scope.clone(),
                    key,
                    timeout,
                    tokens: self.tokens.clone(),
                })
            }
            EngineKind::Server => {
                let url = speech.server_url.trim();
                let endpoint = if url.is_empty() {
                    discover_server(WHISPER_CPP)
                        .await
                        .ok_or(SpeechError::NoServer)?
                } else {
                    format!("{}/audio/transcriptions", url.trim_end_matches('/'))
                };
                Arc::new(OpenAiCompatible {
                    client,
                    kind,
                    endpoint,
                    key: None,
                    model: speech.cloud_model.clone(),
                    timeout,
                })
            }
        })
    }

    /// Whether audio leaves the machine with `kind` as configured.
    fn cloud(config: &Config, kind: EngineKind) -> bool {
        match kind {
            EngineKind::Server => {
                let url = config.speech.server_url.trim();
                !(url.is_empty() || loopback(url))
            }
            other => other.cloud(),
        }
    }

    /// Transcribes `request` for `person`.
    pub async fn transcribe(
        &self,
        config: &Config,
        person: Person<'_>,
        request: TranscriptionRequest,
        cancel: &CancellationToken,
    ) -> Result<Transcription, SpeechError> {
        let Person {
            llm,
            language: interface,
        } = person;
        let kind = Self::kind(config, request.engine.as_deref())?;
        let language = Self::language(config, request.language.as_deref(), interface)?;
        if request.audio.len() > MAX_UPLOAD_BYTES {
            return Err(SpeechError::TooLarge {
                limit: MAX_UPLOAD_BYTES as u64,
            });
        }
        let engine = self.engine(config, llm, kind).await?;
        let started = Instant::now();
        let upload = Arc::new(request.audio);
        let bytes = Arc::clone(&upload);
        let audio = tokio::task::spawn_blocking(move || decode::decode(&bytes))
            .await
            .map_err(|error| SpeechError::Internal(error.to_string()))??;
        let decode_ms = millis(started);
        if config.speech.keep_audio {
            keep(&config.paths.home().join("speech"), &upload);
        }
        drop(upload);
        let started = Instant::now();
        let text = engine.transcribe(&audio, &language, cancel).await?;
        Ok(Transcription {
            text,
            engine: kind,
            cloud: Self::cloud(config, kind),
            language,
            audio_ms: audio.duration_ms(),
            decode_ms,
            transcribe_ms: millis(started),
        })
    }

    /// The configured engine and whether it can run now (no audio is sent to find out).
    pub async fn status(&self, config: &Config, llm: &LlmService) -> EngineStatus {
        let kind = Self::kind(config, None).unwrap_or(EngineKind::Local);
        let mut status = EngineStatus {
            engine: kind,
            cloud: Self::cloud(config, kind),
            model: config.speech.cloud_model.clone(),
            not_ready: None,
            languages: ["ru", "en"].map(str::to_owned).to_vec(),
        };
        match kind {
            EngineKind::Local => match Self::local_model(config) {
                Ok((model, dir)) => {
                    status.model = model.id.to_owned();
                    status.languages = model.languages.iter().map(|&l| l.to_owned()).collect();
                    if !SpeechModel::present(&dir) {
                        status.not_ready = Some(SpeechError::ModelMissing {
                            model: model.id.to_owned(),
                            path: dir.display().to_string(),
                            pullable: model.pullable(),
                        });
                    }
                }
                Err(error) => status.not_ready = Some(error),
            },
            EngineKind::Salute => {
                status.model = "general".to_owned();
                status.languages = ["ru", "en", "kk"].map(str::to_owned).to_vec();
                if let Err(error) = self.engine(config, llm, kind).await {
                    status.not_ready = Some(error);
                }
            }
            _ => {
                if let Err(error) = self.engine(config, llm, kind).await {
                    status.not_ready = Some(error);
                }
            }
        }
        status
    }

    /// Checks a SaluteSpeech authorization key by exchanging it for a token (no audio sent).
    pub(crate) async fn check_salute_key(
        &self,
        config: &Config,
        llm: &LlmService,
        key: crate::llm::keys::ApiKey,
    ) -> Result<(), SpeechError> {
        let speech = &config.speech;
        let salute = Salute {
            client: llm.http().client().clone(),
            auth_url: speech.salute_auth_url.clone(),
            url: speech.salute_url.clone(),
            scope: speech.salute_scope.clone(),
            key,
            timeout: Duration::from_secs(speech.timeout_seconds.max(1)),
            tokens: self.tokens.clone(),
        };
        salute.check(&CancellationToken::new()).await
    }

    /// Drops the in-process model (if loaded and not in use).
    pub fn unload(&self) -> bool {
        match self.local.model.try_lock() {
            Ok(mut model) => model.take().is_some(),
            Err(_) => false,
        }
    }

    /// The model's slot, unless a transcription holds it now.
    fn slot_now(&self) -> Option<std::sync::MutexGuard<'_, Option<(PathBuf, WhisperModel)>>> {
        match self.local.model.try_lock() {
            Ok(slot) => Some(slot),
            Err(std::sync::TryLockError::Poisoned(slot)) => Some(slot.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Whether the model from `dir` is loaded; `None` while a transcription holds the model
    /// (which one is loaded cannot be seen without waiting for it).
    pub fn loaded_from(&self, dir: &Path) -> Option<bool> {
        let slot = self.slot_now()?;
        Some(slot.as_ref().is_some_and(|(loaded, _)| loaded == dir))
    }

    /// Drops the model from `dir` if it is loaded; `false` while a transcription holds the
    /// model (nothing is dropped then).
    pub fn unload_from(&self, dir: &Path) -> bool {
        let Some(mut slot) = self.slot_now() else {
            return false;
        };
        if slot.as_ref().is_some_and(|(loaded, _)| loaded == dir) {
            *slot = None;
        }
        true
    }

    /// Whether the in-process model is loaded.
    pub fn loaded(&self) -> bool {
        self.local
            .model
            .lock()
            .map(|model| model.is_some())
            .unwrap_or(false)
    }

    /// Unloads the model once it has been idle for `idle` (one sweeper at a time).
    fn start_sweeper(&self, idle: Duration) {
        use std::sync::atomic::Ordering;
        if self.local.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let local = Arc::downgrade(&self.local);
        let stopping = self.tasks.stopping().clone();
        self.tasks.spawn_to_end(async move {
            let mut wait = idle;
            loop {
                tokio::select! {
                    () = stopping.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                let Some(local) = local.upgrade() else { return };
                let since = local
                    .last_used
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .map_or(idle, |at| at.elapsed());
                if since >= idle
                    && let Ok(mut model) = local.model.try_lock()
                {
                    if model.take().is_some() {
                        tracing::info!("the speech model was unloaded after being idle");
                    }
                    local.sweeping.store(false, Ordering::Release);
                    return;
                }
                wait = idle.saturating_sub(since).max(Duration::from_millis(50));
            }
        });
    }
}

/// Writes the upload into `dir` (owner-only), as `[speech] keep_audio` asks; a failure is
/// logged, never the request's.
fn keep(dir: &Path, upload: &[u8]) {
    let extension = match decode::Container::sniff(upload) {
        Some(decode::Container::Wav) => "wav",
        Some(decode::Container::Ogg) => "ogg",
        Some(decode::Container::WebM) => "webm",
        None => "bin",
    };
    let name = format!(
        "{}-{}.{extension}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S"),
        uuid::Uuid::new_v4().simple()
    );
    let written = std::fs::create_dir_all(dir)
        .map_err(|error| error.to_string())
        .and_then(|()| {
            crate::sandbox::DaemonFile::in_trusted_folder(&dir.join(&name))
                .and_then(|file| file.write(upload, crate::sandbox::WriteOptions::private()))
                .map(|_| ())
                .map_err(|error| error.to_string())
        });
    if let Err(error) = written {
        tracing::warn!(%error, "could not keep the recording ([speech] keep_audio)");
    }
}

/// The in-process engine over the service's shared model.
struct LocalEngine {
    service: SpeechService,
    model: &'static SpeechModel,
    dir: PathBuf,
    idle: Duration,
}

#[async_trait::async_trait]
impl Transcriber for LocalEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Local
    }

    fn model(&self) -> String {
        self.model.id.to_owned()
    }

    async fn transcribe(
        &self,
        audio: &Audio,
        language: &str,
        cancel: &CancellationToken,
    ) -> Result<String, SpeechError> {
        if !self.model.languages.contains(&language) {
            return Err(SpeechError::UnsupportedLanguage {
                engine: "local",
                language: language.to_owned(),
            });
        }
        if !SpeechModel::present(&self.dir) {
            return Err(SpeechError::ModelMissing {
                model: self.model.id.to_owned(),
                path: self.dir.display().to_string(),
                pullable: self.model.pullable(),
            });
        }
        if audio.duration_ms() > MAX_AUDIO.as_millis() as u64 + 100 {
            return Err(super::decode::too_long(
                audio.samples().len(),
                super::SAMPLE_RATE,
            ));
        }
        let local = Arc::clone(&self.service.local);
        let dir = self.dir.clone();
        let samples = audio.samples().to_vec();
        let language = language.to_owned();
        let cancel = cancel.clone();
        let heard = tokio::task::spawn_blocking(move || {
            let mut slot = local.model.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.as_ref().is_none_or(|(loaded, _)| *loaded != dir) {
                *slot = None;
                let started = Instant::now();
                let model = WhisperModel::load(&dir)?;
                tracing::info!(model = %dir.display(), load_ms = millis(started), "speech model loaded");
                *slot = Some((dir, model));
            }
            let result = match slot.as_mut() {
                Some((_, model)) => model.transcribe(&samples, &language, &cancel),
                None => Err(SpeechError::Internal("the model vanished".to_owned())),
            };
            *local
                .last_used
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            result
        })
        .await
        .map_err(|error| SpeechError::Internal(error.to_string()))?;
        self.service.start_sweeper(self.idle);
        heard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-process model is loaded by the first transcription and unloaded once it has been
    /// idle for the engine's idle time; the next transcription loads it again.
    #[tokio::test]
    async fn the_local_model_unloads_after_being_idle() {
        let service = SpeechService::new(Tasks::detached());
        let engine = LocalEngine {
            service: service.clone(),
            model: catalog::find("whisper-tiny-en").unwrap(),
            dir: crate::testing::whisper_model_dir(),
            idle: Duration::from_millis(300),
        };
        let audio = Audio::new(vec![0.0; 16_000]);
        let cancel = CancellationToken::new();
        engine.transcribe(&audio, "en", &cancel).await.unwrap();
        assert!(service.loaded());
        let deadline = Instant::now() + Duration::from_secs(10);
        while service.loaded() {
            assert!(Instant::now() < deadline, "still loaded after 10 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        engine.transcribe(&audio, "en", &cancel).await.unwrap();
        assert!(service.loaded(), "loaded again on use");
        assert!(matches!(
            engine.transcribe(&audio, "ru", &cancel).await,
            Err(SpeechError::UnsupportedLanguage { .. })
        ));
    }

    /// A whisper.cpp server is recognised on loopback by its page; another page, or an
    /// address off this machine, is not asked.
    #[tokio::test]
    async fn a_whisper_cpp_server_is_found_on_loopback_only() {
        async fn serve(page: &'static str) -> String {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let router =
                axum::Router::new().route("/", axum::routing::get(move || async move { page }));
            crate::tasks::spawn_in_test(async move {
                axum::serve(listener, router).await.unwrap();
            });
            format!("http://{address}")
        }
        let whisper = serve("<html><title>Whisper.cpp Server</title></html>").await;
        assert_eq!(
            discover_server(&whisper).await,
            Some(format!("{whisper}/inference"))
        );
        let other = serve("<html><title>Something else</title></html>").await;
        assert_eq!(discover_server(&other).await, None);
        assert_eq!(discover_server("http://192.0.2.1:8080").await, None);
        assert_eq!(discover_server("http://127.0.0.1:9").await, None);
        assert!(loopback("http://localhost:8080/v1") && loopback("http://[::1]:1"));
        assert!(!loopback("http://localhost.evil.example/v1"));
    }
}
