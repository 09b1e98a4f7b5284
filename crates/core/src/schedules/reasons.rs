//! Why a run did not end `ok`, when the scheduler itself is the one saying so (a run cancelled,
//! skipped behind a running one, cut off by a stop): written into the run's `reason` in the
//! local person's language, read when the reason is written. Reasons that come from the run's
//! execution (a denied call, a provider's error) are that execution's own.

use std::sync::Arc;

use souz_protocol::language::Language;

/// The language reasons are written in, read each time (the person may switch it).
pub(crate) type SharedLanguage = Arc<dyn Fn() -> Language + Send + Sync>;

/// English, for tests and benchmarks.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn english() -> SharedLanguage {
    Arc::new(|| Language::En)
}

/// A reason the scheduler gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunReason {
    /// Someone cancelled the run's execution.
    Cancelled,
    /// The daemon stopped (or died) while the run went.
    Stopped,
    /// The occurrence came while the previous run still went (overlap `skip`).
    StillGoing,
    /// A parked run this process cannot follow.
    NotFollowed,
    /// Its execution failed and said no more.
    Failed,
}

impl RunReason {
    /// The reason, in `language`.
    pub(crate) fn text(self, language: Language) -> &'static str {
        match (self, language) {
            (Self::Cancelled, Language::En) => "The run was cancelled.",
            (Self::Cancelled, Language::Ru) => "Запуск отменён.",
            (Self::Stopped, Language::En) => "Souz stopped during the run.",
            (Self::Stopped, Language::Ru) => "Souz остановился во время запуска.",
            (Self::StillGoing, Language::En) => "The previous run was still going.",
            (Self::StillGoing, Language::Ru) => "Предыдущий запуск ещё шёл.",
            (Self::NotFollowed, Language::En) => "This run cannot be followed after a restart.",
            (Self::NotFollowed, Language::Ru) => {
                "За этим запуском нельзя проследить после перезапуска."
            }
            (Self::Failed, Language::En) => "The run failed.",
            (Self::Failed, Language::Ru) => "Запуск не удался.",
        }
    }
}
