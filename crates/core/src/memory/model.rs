//! The memory model of the original (§6.1): scopes, kinds, statuses, retentions, facts, the
//! canonical-key normalisation, the content hash and the subject key tombstones match on.
//!
//! Invariants: a canonical key is either `None` or normalised (NFKC, lowercase, separators
//! folded to `.`, at most 96 characters, one of the controlled prefixes, nothing secret-looking);
//! a content hash is the SHA-256 of the normalised `kind\ncanonicalKey\ntitle\nbody`, so equal
//! facts hash equal whatever their case and spacing.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

use super::redaction::looks_secret;

/// Where a fact applies: `global:global`, `project:<id>`, `session:<chat>` (legacy `chat` and
/// `thread` scopes are read as aliases of each other).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Scope {
    /// `global`, `project`, `session`, `chat` or `thread`.
    pub kind: String,
    /// The id inside the kind (`global` for the global scope).
    pub id: String,
}

impl Scope {
    /// The one global scope.
    pub fn global() -> Self {
        Self {
            kind: "global".to_owned(),
            id: "global".to_owned(),
        }
    }

    /// A conversation's session scope.
    pub fn session(chat_id: &str) -> Self {
        Self {
            kind: "session".to_owned(),
            id: chat_id.to_owned(),
        }
    }

    /// A project's scope.
    pub fn project(project_id: &str) -> Self {
        Self {
            kind: "project".to_owned(),
            id: project_id.to_owned(),
        }
    }

    /// A legacy chat scope.
    pub fn chat(chat_id: &str) -> Self {
        Self {
            kind: "chat".to_owned(),
            id: chat_id.to_owned(),
        }
    }

    /// The normalised form: the kind trimmed and lowercased, the id trimmed and stripped of a
    /// repeated `kind:` prefix (`session:session:x` is `session:x`).
    pub fn normalized(&self) -> Self {
        let kind = self.kind.trim().to_lowercase();
        let id = self.id.trim();
        let prefix = format!("{kind}:");
        let stripped = match id.get(..prefix.len()) {
            Some(head) if !kind.is_empty() && head.eq_ignore_ascii_case(&prefix) => {
                id[prefix.len()..].trim()
            }
            _ => id,
        };
        Self {
            kind,
            id: if stripped.is_empty() { id } else { stripped }.to_owned(),
        }
    }

    /// The scopes stored facts of this scope may carry: legacy `chat`/`thread` aliases and
    /// `kind:`-prefixed ids (original `compatibilityScopes`).
    pub fn compatible(&self) -> Vec<Self> {
        let normalized = self.normalized();
        let kinds: &[&str] = match normalized.kind.as_str() {
            "chat" => &["chat", "thread"],
            "thread" => &["thread", "chat"],
            _ => &[],
        };
        let kinds: Vec<String> = if kinds.is_empty() {
            vec![normalized.kind.clone()]
        } else {
            kinds.iter().map(|kind| (*kind).to_owned()).collect()
        };
        let mut scopes = Vec::new();
        for kind in kinds {
            let legacy = format!("{kind}:{}", normalized.id);
            scopes.push(Self {
                kind: kind.clone(),
                id: normalized.id.clone(),
            });
            if !kind.is_empty() && legacy != normalized.id {
                scopes.push(Self { kind, id: legacy });
            }
        }
        scopes.dedup();
        scopes
    }

    /// How long facts of this scope live.
    pub fn retention(&self) -> Retention {
        match self.normalized().kind.as_str() {
            "chat" | "thread" => Retention::ChatLifetime,
            "session" => Retention::SessionLifetime,
            _ => Retention::Durable,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)
    }
}

/// A value stored as text that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {value:?}")]
pub struct UnknownValue {
    /// What was parsed.
    pub what: &'static str,
    /// The text.
    pub value: String,
}

macro_rules! stored_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value.
            pub const ALL: &[Self] = &[$(Self::$variant),+];

            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownValue;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                let upper = text.trim().to_ascii_uppercase();
                match upper.as_str() {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(UnknownValue { what: $what, value: text.to_owned() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

stored_enum!(
    /// What a fact is.
    Kind, "kind", {
        /// Something true about the person or the world.
        Semantic => "SEMANTIC",
        /// How the person likes things done.
        Preference => "PREFERENCE",
        /// A reusable procedure.
        Procedure => "PROCEDURE",
        /// A rule of a project.
        ProjectRule => "PROJECT_RULE",
        /// Working notes of a conversation (plans, blockers, next steps).
        EpisodeNote => "EPISODE_NOTE",
        /// A decision taken in a project.
        ProjectDecision => "PROJECT_DECISION",
    }
);

stored_enum!(
    /// Whether a fact is in use.
    Status, "status", {
        /// Recalled.
        Active => "ACTIVE",
        /// Kept for history (superseded or forgotten), never recalled.
        Retired => "RETIRED",
    }
);

stored_enum!(
    /// How long a fact lives (follows its scope).
    Retention, "retention", {
        /// Until deleted.
        Durable => "DURABLE",
        /// As long as its (legacy) chat.
        ChatLifetime => "CHAT_LIFETIME",
        /// As long as its conversation.
        SessionLifetime => "SESSION_LIFETIME",
    }
);

/// The scope a writer asks for (resolved against the turn's context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RequestedScope {
    /// The global scope.
    Global,
    /// The current project (none yet: such facts are not stored).
    Project,
    /// A legacy chat scope: never resolves.
    Chat,
    /// The current conversation.
    Session,
}

impl RequestedScope {
    /// The original's default scope of a kind.
    pub fn default_for(kind: Kind) -> Self {
        match kind {
            Kind::Preference | Kind::Procedure => Self::Global,
            Kind::ProjectRule | Kind::ProjectDecision => Self::Project,
            Kind::EpisodeNote | Kind::Semantic => Self::Session,
        }
    }
}

/// Whose memory and which conversation (and project) an operation is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The owner.
    pub owner: String,
    /// The conversation, which is also the session scope.
    pub session: Option<String>,
    /// The project, when there is one.
    pub project: Option<String>,
}

impl Context {
    /// The scopes recall reads: global, the project's, the session's.
    pub fn retrieval_scopes(&self) -> Vec<Scope> {
        let mut scopes = vec![Scope::global()];
        scopes.extend(self.project.as_deref().map(Scope::project));
        scopes.extend(self.session.as_deref().map(Scope::session));
        scopes
    }

    /// Where a fact asking for `requested` (or its kind's default) goes; `None` when that
    /// scope does not exist here.
    pub fn resolve(&self, requested: Option<RequestedScope>, kind: Kind) -> Option<Scope> {
        match requested.unwrap_or_else(|| RequestedScope::default_for(kind)) {
            RequestedScope::Global => Some(Scope::global()),
            RequestedScope::Project => self.project.as_deref().map(Scope::project),
            RequestedScope::Chat => None,
            RequestedScope::Session => self.session.as_deref().map(Scope::session),
        }
    }
}

/// One stored fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    /// Its id (a UUID).
    pub id: String,
    /// Whose it is.
    pub owner: String,
    /// Where it applies.
    pub scope: Scope,
    /// What it is.
    pub kind: Kind,
    /// Short title.
    pub title: String,
    /// The fact.
    pub body: String,
    /// Its controlled key (see [`normalize_canonical_key`]).
    pub canonical_key: Option<String>,
    /// Active or retired.
    pub status: Status,
    /// How long it lives.
    pub retention: Retention,
    /// How sure the writer was (0..1).
    pub confidence: f64,
    /// How much it matters (0..1).
    pub importance: f64,
    /// Pinned facts are offered even without a strong match.
    pub pinned: bool,
    /// `user`, `writer` (capture) or another agent's name.
    pub created_by: String,
    /// See [`content_hash`].
    pub content_hash: String,
    /// When it was stored (RFC 3339).
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// The fact this one replaced.
    pub supersedes_fact_id: Option<String>,
}

/// The prefixes a canonical key may start with.
pub const CANONICAL_PREFIXES: &[&str] = &[
    "user.preference.",
    "user.workflow.",
    "project.rule.",
    "project.decision.",
    "project.procedure.",
    "session.task.",
    "chat.note.",
];
/// The longest canonical key.
pub const MAX_CANONICAL_KEY: usize = 96;

/// The original's canonical-key normalisation; `None` for anything outside the controlled
/// namespaces.
pub fn normalize_canonical_key(raw: &str) -> Option<String> {
    let text: String = raw.trim().nfkc().collect::<String>().to_lowercase();
    let mut key = String::with_capacity(text.len());
    for character in text.chars() {
        let separator =
            character.is_whitespace() || matches!(character, ':' | '/' | '\\' | '.' | '_' | '-');
        if separator {
            if !key.ends_with('.') {
                key.push('.');
            }
        } else {
            key.push(character);
        }
    }
    let key = key.trim_matches('.').to_owned();
    if key.is_empty() || key.chars().count() > MAX_CANONICAL_KEY {
        return None;
    }
    (CANONICAL_PREFIXES
        .iter()
        .any(|prefix| key.starts_with(prefix))
        && !looks_secret(&key))
    .then_some(key)
}

fn collapse(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// SHA-256 (hex) of the normalised `kind\ncanonicalKey\ntitle\nbody`.
pub fn content_hash(kind: Kind, canonical_key: Option<&str>, title: &str, body: &str) -> String {
    let text = [
        kind.as_str(),
        canonical_key.unwrap_or_default(),
        title,
        body,
    ]
    .iter()
    .map(|part| collapse(part))
    .collect::<Vec<_>>()
    .join("\n");
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Lowercase terms of `text`: runs of letters, digits and `_ . / : -`.
pub fn terms(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|character: char| {
            !(character.is_alphanumeric() || matches!(character, '_' | '.' | '/' | ':' | '-'))
        })
        .filter(|term| !term.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The subject a tombstone names: the first six terms of three or more characters, joined
/// with `.`; `None` when there are none.
pub fn subject_key(title: &str) -> Option<String> {
    let key = terms(title)
        .into_iter()
        .filter(|term| term.chars().count() >= 3)
        .take(6)
        .collect::<Vec<_>>()
        .join(".");
    (!key.is_empty()).then_some(key)
}

/// The subject key that marks a scope closed for capture (its conversation was cleaned up).
pub const SCOPE_CLOSED_SUBJECT: &str = "__scope_closed__";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_keys_are_normalised_or_refused() {
        let cases = [
            ("user.preference.language", Some("user.preference.language")),
            (
                " User:Preference/Response_Language ",
                Some("user.preference.response.language"),
            ),
            (
                "project.rule.test--command",
                Some("project.rule.test.command"),
            ),
            ("ＵＳＥＲ.preference.x", Some("user.preference.x")),
            ("session.task. next step", Some("session.task.next.step")),
            ("random.key", None),
            ("", None),
            ("user.preference.", None),
            ("user.preference.0123456789abcdef0123456789abcdef", None),
        ];
        for (raw, expected) in cases {
            assert_eq!(normalize_canonical_key(raw).as_deref(), expected, "{raw}");
        }
        let long = format!("user.preference.{}", "a".repeat(90));
        assert_eq!(normalize_canonical_key(&long), None);
    }

    #[test]
    fn content_hash_ignores_case_and_spacing_only() {
        let one = content_hash(Kind::Preference, None, "Tea", "Likes  green tea");
        let two = content_hash(Kind::Preference, None, " tea ", "likes green\ntea");
        assert_eq!(one, two);
        assert_ne!(
            one,
            content_hash(Kind::Semantic, None, "Tea", "Likes green tea")
        );
        assert_ne!(
            one,
            content_hash(
                Kind::Preference,
                Some("user.preference.tea"),
                "Tea",
                "Likes green tea"
            )
        );
        assert_eq!(one.len(), 64);
    }

    #[test]
    fn scopes_normalise_and_carry_their_retention() {
        let scope = Scope {
            kind: " Session ".into(),
            id: "session:abc".into(),
        };
        assert_eq!(scope.normalized(), Scope::session("abc"));
        assert_eq!(Scope::global().retention(), Retention::Durable);
        assert_eq!(Scope::project("p").retention(), Retention::Durable);
        assert_eq!(Scope::chat("c").retention(), Retention::ChatLifetime);
        assert_eq!(Scope::session("c").retention(), Retention::SessionLifetime);
        let aliases = Scope::chat("c").compatible();
        assert!(aliases.contains(&Scope {
            kind: "thread".into(),
            id: "c".into()
        }));
        assert!(aliases.contains(&Scope {
            kind: "chat".into(),
            id: "chat:c".into()
        }));
    }

    #[test]
    fn requested_scopes_resolve_against_the_context() {
        let context = Context {
            owner: "local".into(),
            session: Some("chat-1".into()),
            project: None,
        };
        assert_eq!(
            context.resolve(None, Kind::Preference),
            Some(Scope::global())
        );
        assert_eq!(
            context.resolve(None, Kind::Semantic),
            Some(Scope::session("chat-1"))
        );
        assert_eq!(context.resolve(None, Kind::ProjectRule), None);
        assert_eq!(
            context.resolve(Some(RequestedScope::Chat), Kind::Semantic),
            None
        );
        assert_eq!(
            context.retrieval_scopes(),
            vec![Scope::global(), Scope::session("chat-1")]
        );
    }

    #[test]
    fn subject_keys_take_six_long_terms() {
        assert_eq!(
            subject_key("My favourite colour is deep blue, not red at all").as_deref(),
            Some("favourite.colour.deep.blue.not.red")
        );
        assert_eq!(subject_key("a b"), None);
    }
}
