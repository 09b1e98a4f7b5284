//! The Souz wire contract.
//!
//! Everything a client of the daemon sees on the wire is declared here: response bodies, the
//! error envelope and its stable codes, runtime events, and the daemon's proof of identity
//! (`identity`). The crate depends on serde, schemars and the hashes of that proof only, so any
//! client (the menu-bar app, the CLI, tests) can use it without pulling in the daemon. Wire enums are `#[serde(tag = "type", rename_all = "snake_case")]` and every
//! variant carries a doc line, because the docs become the OpenAPI descriptions.

pub mod approvals;
pub mod chat;
pub mod clients;
pub mod config;
pub mod connect;
pub mod display;
pub mod error;
pub mod event;
pub mod history;
pub mod identity;
pub mod language;
pub mod llm;
pub mod local_models;
pub mod mcp;
pub mod memory;
pub mod review;
pub mod schedules;
pub mod setup;
pub mod skills;
pub mod speech;
pub mod system;
pub mod telegram;
pub mod tools;
pub mod voice;

pub use approvals::{
    Approval, ApprovalList, ApprovalStatus, ArgumentMatch, DecisionRequest, DecisionResponse,
    Effect, ExpiryReason, Grant, GrantList, ParkedRun, RecordedDecision, Requester, ScopeKind,
    SuggestedScope, ToolGroup, Verdict,
};
pub use clients::{
    ClientList, ClientScope, ClientToken, CreatedClient, IdentityProof, IdentityQuery, NewClient,
    OPERATOR_IDENTITY, UiCode, UiCodeExchange, UiSession,
};
pub use connect::{
    ApplyDesktopConfig, ClaudeCodeCommand, ClientMemoryAccess, ConnectStatus, ConnectedClient,
    DesktopConfigApplied, DesktopConfigChange,
};
pub use error::{ErrorBody, ErrorCode, ErrorDetail};
pub use event::StreamControl;
pub use event::{EventEnvelope, RuntimeEvent};
pub use llm::{
    KeySource, ProviderId, ProviderKeyInfo, ProviderKeyList, ProviderKeyResponse, ProviderKeyTest,
    ProviderLogin, ProviderLoginState, PutProviderKey, SERVICE_KEYS, ServiceKeyInfo,
    ServiceKeyList, ServiceKeyTest,
};
pub use local_models::{LocalModelInfo, LocalModelList};
pub use mcp::{
    McpLogin, McpOAuthCallback, McpServerEnabled, McpServerList, McpServerPut, McpServerStatus,
    McpServerTest, McpToken,
};
pub use memory::{
    LocalModelState, MemoryEvidence, MemoryEvidenceList, MemoryFact, MemoryFactList,
    MemoryFactPatch, MemoryKind, MemoryModelInfo, MemoryQuery, MemorySearchHit,
    MemorySearchRequest, MemorySearchResult, MemoryStatus, MemoryStatusFilter, NewMemoryFact,
    RecallMode,
};
pub use setup::{
    LocalServer, LocalServerList, LocalServerProbe, ProbeLocalServer, ProbeProblem, PutSetupState,
    Restarting, SetupState,
};
pub use skills::{
    FindingSeverity, InstalledSkill, SkillConsent, SkillDetail, SkillFinding, SkillGitSource,
    SkillList, SkillPath, SkillPermissions, SkillSource, SkillSummary, SkillValidation,
};
pub use speech::{SpeechModelInfo, SpeechStatus, SpeechTimings, SpeechTranscription};
pub use system::{
    Bootstrap, Capabilities, ComponentStatus, ConfinementKind, DaemonInfo, Features, Health,
    LocalUser, ModelCapability, RouteIndex, SandboxStatus, ToolCapability,
};
pub use tools::{
    Action, AuditEntry, AuditPage, DecisionSource, EffectivePolicy, Outcome, Risk, ToolAnnotations,
    ToolCall, ToolCallRequest, ToolCallStatus, ToolCategory, ToolInfo, ToolList, ToolResult,
};
