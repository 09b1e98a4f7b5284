//! Append-only schema migrations. Version N of the schema is the result of applying the first N
//! entries of [`MIGRATIONS`]; `PRAGMA user_version` records N. Never edit or reorder an entry
//! that has shipped: add a new one.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// One schema change.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Short name, recorded in `schema_migrations`.
    pub name: &'static str,
    /// SQL run inside the migration transaction.
    pub sql: &'static str,
}

/// Every migration, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "schema_migrations",
        sql: "CREATE TABLE schema_migrations (
                  version    INTEGER PRIMARY KEY,
                  name       TEXT NOT NULL,
                  applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
              ) STRICT;",
    },
    Migration {
        name: "runtime_events",
        sql: "CREATE TABLE runtime_events (
                  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
                  kind       TEXT NOT NULL,
                  payload    TEXT NOT NULL,
                  created_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        name: "approval_gate",
        sql: "CREATE TABLE tool_calls (
                  id           TEXT PRIMARY KEY,
                  tool         TEXT NOT NULL,
                  requester    TEXT NOT NULL,
                  arguments    TEXT NOT NULL,
                  status       TEXT NOT NULL,
                  summary      TEXT,
                  approval_id  TEXT,
                  result       TEXT,
                  created_at   TEXT NOT NULL,
                  finished_at  TEXT,
                  delivered_at TEXT
              ) STRICT;
              CREATE INDEX tool_calls_open ON tool_calls (status) WHERE finished_at IS NULL;

              CREATE TABLE approvals (
                  id            TEXT PRIMARY KEY,
                  call_id       TEXT NOT NULL REFERENCES tool_calls (id),
                  status        TEXT NOT NULL
                                CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
                  requester     TEXT NOT NULL,
                  tool          TEXT NOT NULL,
                  risk          TEXT NOT NULL,
                  arguments     TEXT NOT NULL,
                  summary       TEXT NOT NULL,
                  diff          TEXT,
                  reason        TEXT NOT NULL,
                  suggested     TEXT NOT NULL,
                  created_at    TEXT NOT NULL,
                  expires_at    TEXT NOT NULL,
                  decision      TEXT,
                  expiry_reason TEXT
              ) STRICT;
              CREATE INDEX approvals_by_status ON approvals (status, created_at);

              CREATE TABLE grants (
                  id          TEXT PRIMARY KEY,
                  effect      TEXT NOT NULL CHECK (effect IN ('allow', 'deny')),
                  tool        TEXT NOT NULL,
                  requester   TEXT,
                  match       TEXT NOT NULL,
                  created_at  TEXT NOT NULL,
                  expires_at  TEXT,
                  approval_id TEXT,
                  revoked_at  TEXT
              ) STRICT;

              CREATE TABLE audit_log (
                  id          INTEGER PRIMARY KEY AUTOINCREMENT,
                  at          TEXT NOT NULL,
                  call_id     TEXT NOT NULL,
                  requester   TEXT NOT NULL,
                  tool        TEXT NOT NULL,
                  risk        TEXT,
                  arguments   TEXT NOT NULL,
                  result      TEXT,
                  decision    TEXT,
                  decided_by  TEXT NOT NULL,
                  outcome     TEXT NOT NULL,
                  duration_ms INTEGER NOT NULL
              ) STRICT;
              CREATE INDEX audit_by_tool ON audit_log (tool, id);",
    },
    Migration {
        name: "provider_keys",
        sql: "CREATE TABLE provider_keys (
                  provider   TEXT PRIMARY KEY,
                  ciphertext BLOB NOT NULL,
                  key_hint   TEXT NOT NULL,
                  updated_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        name: "chats",
        sql: "CREATE TABLE users (
                  id           TEXT PRIMARY KEY,
                  created_at   TEXT NOT NULL,
                  last_seen_at TEXT NOT NULL
              ) STRICT;

              CREATE TABLE user_settings (
                  user_id                 TEXT PRIMARY KEY REFERENCES users (id),
                  settings                TEXT NOT NULL,
                  onboarding_completed_at TEXT,
                  updated_at              TEXT NOT NULL
              ) STRICT;

              CREATE TABLE chats (
                  id           TEXT PRIMARY KEY,
                  user_id      TEXT NOT NULL REFERENCES users (id),
                  title        TEXT,
                  archived     INTEGER NOT NULL DEFAULT 0,
                  request_id   TEXT,
                  payload_hash TEXT,
                  created_at   TEXT NOT NULL,
                  updated_at   TEXT NOT NULL,
                  UNIQUE (user_id, request_id)
              ) STRICT;
              CREATE INDEX chats_by_user ON chats (user_id, updated_at DESC);

              CREATE TABLE messages (
                  id         TEXT PRIMARY KEY,
                  chat_id    TEXT NOT NULL REFERENCES chats (id),
                  seq        INTEGER NOT NULL,
                  role       TEXT NOT NULL,
                  content    TEXT NOT NULL,
                  metadata   TEXT NOT NULL,
                  created_at TEXT NOT NULL,
                  UNIQUE (chat_id, seq)
              ) STRICT;

              CREATE TABLE executions (
                  id                   TEXT PRIMARY KEY,
                  chat_id              TEXT NOT NULL REFERENCES chats (id),
                  user_message_id      TEXT,
                  assistant_message_id TEXT,
                  status               TEXT NOT NULL,
                  client_message_id    TEXT,
                  model                TEXT,
                  provider             TEXT,
                  settings             TEXT NOT NULL,
                  started_at           TEXT,
                  finished_at          TEXT,
                  cancel_requested     INTEGER NOT NULL DEFAULT 0,
                  error_code           TEXT,
                  error_message        TEXT,
                  usage                TEXT,
                  owner                TEXT,
                  lease_until          TEXT,
                  created_at           TEXT NOT NULL
              ) STRICT;
              CREATE UNIQUE INDEX executions_one_active ON executions (chat_id)
                  WHERE status IN ('queued', 'running', 'waiting_option', 'cancelling');
              CREATE UNIQUE INDEX executions_by_client_message ON executions (chat_id, client_message_id)
                  WHERE client_message_id IS NOT NULL;

              CREATE TABLE chat_events (
                  chat_id      TEXT NOT NULL REFERENCES chats (id),
                  seq          INTEGER NOT NULL,
                  execution_id TEXT,
                  type         TEXT NOT NULL,
                  payload      TEXT NOT NULL,
                  created_at   TEXT NOT NULL,
                  PRIMARY KEY (chat_id, seq)
              ) STRICT;
              CREATE UNIQUE INDEX chat_events_one_terminal ON chat_events (execution_id)
                  WHERE type IN ('execution.finished', 'execution.failed', 'execution.cancelled');

              CREATE TABLE options (
                  id             TEXT PRIMARY KEY,
                  chat_id        TEXT NOT NULL REFERENCES chats (id),
                  execution_id   TEXT NOT NULL REFERENCES executions (id),
                  kind           TEXT NOT NULL,
                  title          TEXT NOT NULL,
                  selection_mode TEXT NOT NULL,
                  choices        TEXT NOT NULL,
                  free_text      INTEGER NOT NULL,
                  status         TEXT NOT NULL,
                  answer         TEXT,
                  created_at     TEXT NOT NULL,
                  expires_at     TEXT,
                  answered_at    TEXT
              ) STRICT;",
    },
    Migration {
        name: "daemon_state",
        sql: "CREATE TABLE daemon_state (
                  key   TEXT PRIMARY KEY,
                  value TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        name: "agent_sessions",
        sql: "CREATE TABLE agent_turns (
                  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
                  id          TEXT NOT NULL UNIQUE,
                  chat_id     TEXT NOT NULL,
                  agent       TEXT NOT NULL,
                  model       TEXT NOT NULL,
                  input       TEXT NOT NULL,
                  status      TEXT NOT NULL CHECK (status IN
                              ('running', 'completed', 'failed', 'cancelled', 'interrupted')),
                  reply       TEXT,
                  error       TEXT,
                  usage       TEXT,
                  started_at  TEXT NOT NULL,
                  finished_at TEXT
              ) STRICT;
              CREATE INDEX agent_turns_by_chat ON agent_turns (chat_id, seq);
              CREATE INDEX agent_turns_running ON agent_turns (status) WHERE status = 'running';

              CREATE TABLE agent_steps (
                  turn_id        TEXT NOT NULL REFERENCES agent_turns (id) ON DELETE CASCADE,
                  ordinal        INTEGER NOT NULL,
                  step_index     INTEGER,
                  node           TEXT NOT NULL,
                  graph          TEXT NOT NULL,
                  depth          INTEGER NOT NULL,
                  attempts       INTEGER NOT NULL,
                  elapsed_ms     INTEGER NOT NULL,
                  summary        TEXT NOT NULL,
                  data           TEXT NOT NULL,
                  history_change TEXT,
                  at             TEXT NOT NULL,
                  PRIMARY KEY (turn_id, ordinal)
              ) STRICT, WITHOUT ROWID;

              CREATE TABLE agent_conversations (
                  chat_id    TEXT PRIMARY KEY,
                  history    TEXT NOT NULL,
                  updated_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        name: "knowledge",
        sql: "CREATE TABLE knowledge_entries (
                  id              TEXT PRIMARY KEY,
                  chat_id         TEXT NOT NULL,
                  source_tool     TEXT NOT NULL,
                  original_length INTEGER NOT NULL,
                  head            TEXT NOT NULL,
                  tail            TEXT,
                  created_at      TEXT NOT NULL
              ) STRICT;
              CREATE INDEX knowledge_by_chat ON knowledge_entries (chat_id);",
    },
    Migration {
        // The id an execution's answer is stored under, allocated when it starts so live
        // deltas can name the message before it exists (original §1.8).
        name: "execution_reply_message",
        sql: "ALTER TABLE executions ADD COLUMN reply_message_id TEXT;",
    },
    Migration {
        // Provider keys belong to a user (the original's `user_provider_keys`): behind a
        // trusted proxy each person brings their own. Keys stored before are the local user's.
        name: "provider_keys_per_user",
        sql: "CREATE TABLE provider_keys_by_user (
                  user_id    TEXT NOT NULL,
                  provider   TEXT NOT NULL,
                  ciphertext BLOB NOT NULL,
                  key_hint   TEXT NOT NULL,
                  updated_at TEXT NOT NULL,
                  PRIMARY KEY (user_id, provider)
              ) STRICT;
              INSERT INTO provider_keys_by_user (user_id, provider, ciphertext, key_hint, updated_at)
                  SELECT 'local', provider, ciphertext, key_hint, updated_at FROM provider_keys;
              DROP TABLE provider_keys;
              ALTER TABLE provider_keys_by_user RENAME TO provider_keys;",
    },
    Migration {
        // MCP client tokens (issue 11 §1): named, revocable, valid on `/mcp` only. Only the
        // token's SHA-256 is kept; active names are unique so `mcp:<name>` rules name one.
        name: "client_tokens",
        sql: "CREATE TABLE client_tokens (
                  id           TEXT PRIMARY KEY,
                  name         TEXT NOT NULL,
                  token_sha256 BLOB NOT NULL UNIQUE,
                  created_at   TEXT NOT NULL,
                  revoked_at   TEXT
              ) STRICT;
              CREATE UNIQUE INDEX client_tokens_active_name
                  ON client_tokens (name COLLATE NOCASE) WHERE revoked_at IS NULL;",
    },
    Migration {
        // File-backed skills (issue 14): the current bundle of each installed skill, and the
        // validation verdicts by (skill, bundle hash, policy version).
        name: "skills",
        sql: "CREATE TABLE skills (
                  id           TEXT PRIMARY KEY,
                  hash         TEXT NOT NULL,
                  enabled      INTEGER NOT NULL,
                  origin       TEXT NOT NULL,
                  installed_at TEXT NOT NULL
              ) STRICT;
              CREATE TABLE skill_verdicts (
                  skill_id       TEXT NOT NULL,
                  bundle_hash    TEXT NOT NULL,
                  policy_version TEXT NOT NULL,
                  approved       INTEGER NOT NULL,
                  findings       TEXT NOT NULL,
                  created_at     TEXT NOT NULL,
                  PRIMARY KEY (skill_id, bundle_hash, policy_version)
              ) STRICT;",
    },
    Migration {
        // Long-term memory (issue 13, original §6.5): facts with their evidence and source
        // events, embeddings, embedding jobs, tombstones, retrieval stats, and a lexical index
        // of stemmed text (its rowid is the fact's rowid; `memory` keeps it in step).
        name: "memory",
        sql: "CREATE TABLE memory_source_events (
                  id            TEXT PRIMARY KEY,
                  owner_id      TEXT NOT NULL,
                  scope_type    TEXT NOT NULL,
                  scope_id      TEXT NOT NULL,
                  source_type   TEXT NOT NULL,
                  source_ref    TEXT,
                  text          TEXT NOT NULL,
                  metadata_json TEXT NOT NULL DEFAULT '{}',
                  created_at    TEXT NOT NULL
              ) STRICT;
              CREATE INDEX memory_source_events_owner_scope
                  ON memory_source_events (owner_id, scope_type, scope_id, created_at);

              CREATE TABLE memory_facts (
                  id                 TEXT PRIMARY KEY,
                  owner_id           TEXT NOT NULL,
                  scope_type         TEXT NOT NULL,
                  scope_id           TEXT NOT NULL,
                  kind               TEXT NOT NULL CHECK (kind IN ('SEMANTIC', 'PREFERENCE',
                                     'PROCEDURE', 'PROJECT_RULE', 'EPISODE_NOTE',
                                     'PROJECT_DECISION')),
                  title              TEXT NOT NULL,
                  body               TEXT NOT NULL,
                  canonical_key      TEXT,
                  status             TEXT NOT NULL CHECK (status IN ('ACTIVE', 'RETIRED')),
                  retention          TEXT NOT NULL CHECK (retention IN ('DURABLE',
                                     'CHAT_LIFETIME', 'SESSION_LIFETIME')),
                  confidence         REAL NOT NULL,
                  importance         REAL NOT NULL,
                  pinned             INTEGER NOT NULL DEFAULT 0,
                  created_by         TEXT NOT NULL,
                  content_hash       TEXT NOT NULL,
                  created_at         TEXT NOT NULL,
                  updated_at         TEXT NOT NULL,
                  supersedes_fact_id TEXT
              ) STRICT;
              CREATE INDEX memory_facts_owner_scope
                  ON memory_facts (owner_id, scope_type, scope_id, status, updated_at);
              CREATE UNIQUE INDEX memory_facts_active_canonical
                  ON memory_facts (owner_id, scope_type, scope_id, canonical_key)
                  WHERE status = 'ACTIVE' AND canonical_key IS NOT NULL;
              CREATE INDEX memory_facts_content_hash ON memory_facts (content_hash);
              CREATE INDEX memory_facts_pinned ON memory_facts (owner_id)
                  WHERE pinned = 1 AND status = 'ACTIVE';

              CREATE TABLE memory_fact_evidence (
                  fact_id         TEXT NOT NULL REFERENCES memory_facts (id) ON DELETE CASCADE,
                  source_event_id TEXT NOT NULL REFERENCES memory_source_events (id),
                  evidence_text   TEXT,
                  PRIMARY KEY (fact_id, source_event_id)
              ) STRICT;
              CREATE INDEX memory_fact_evidence_source ON memory_fact_evidence (source_event_id);

              CREATE TABLE memory_fact_embeddings (
                  fact_id         TEXT PRIMARY KEY REFERENCES memory_facts (id) ON DELETE CASCADE,
                  embedding_model TEXT NOT NULL,
                  embedding_blob  BLOB NOT NULL,
                  dimension       INTEGER NOT NULL,
                  content_hash    TEXT NOT NULL,
                  created_at      TEXT NOT NULL
              ) STRICT;

              CREATE TABLE memory_fact_stats (
                  fact_id           TEXT PRIMARY KEY REFERENCES memory_facts (id) ON DELETE CASCADE,
                  last_retrieved_at TEXT,
                  retrieval_count   INTEGER NOT NULL DEFAULT 0
              ) STRICT;

              CREATE TABLE memory_index_jobs (
                  fact_id         TEXT NOT NULL REFERENCES memory_facts (id) ON DELETE CASCADE,
                  owner_id        TEXT NOT NULL,
                  embedding_model TEXT NOT NULL,
                  content_hash    TEXT NOT NULL,
                  status          TEXT NOT NULL CHECK (status IN ('PENDING', 'COMPLETED',
                                  'FAILED')),
                  attempt_count   INTEGER NOT NULL DEFAULT 0,
                  next_attempt_at TEXT NOT NULL,
                  last_error_code TEXT,
                  created_at      TEXT NOT NULL,
                  updated_at      TEXT NOT NULL,
                  PRIMARY KEY (fact_id, embedding_model, content_hash)
              ) STRICT;
              CREATE INDEX memory_index_jobs_due ON memory_index_jobs (status, next_attempt_at);

              CREATE TABLE memory_tombstones (
                  id            TEXT PRIMARY KEY,
                  owner_id      TEXT NOT NULL,
                  scope_type    TEXT NOT NULL,
                  scope_id      TEXT NOT NULL,
                  canonical_key TEXT,
                  subject_key   TEXT,
                  reason        TEXT NOT NULL,
                  created_at    TEXT NOT NULL,
                  expires_at    TEXT
              ) STRICT;
              CREATE INDEX memory_tombstones_lookup
                  ON memory_tombstones (owner_id, scope_type, scope_id);

              CREATE VIRTUAL TABLE memory_facts_fts USING fts5 (
                  terms, tokenize = 'unicode61 remove_diacritics 0'
              );",
    },
    Migration {
        // External MCP tools trusted on first use (issue 15): the definition (description and
        // schemas) the person trusts, per server and tool; a changed one asks again.
        name: "mcp_tool_definitions",
        sql: "CREATE TABLE mcp_tool_definitions (
                  server     TEXT NOT NULL,
                  tool       TEXT NOT NULL,
                  sha256     TEXT NOT NULL,
                  definition TEXT NOT NULL,
                  trusted_at TEXT NOT NULL,
                  PRIMARY KEY (server, tool)
              ) STRICT;",
    },
    Migration {
        // Which external MCP server an approval's tool belongs to (issue 15), for the Queue
        // page, notifications and the tray; NULL for Souz's own tools.
        name: "approvals_server",
        sql: "ALTER TABLE approvals ADD COLUMN server TEXT;",
    },
    Migration {
        // What one chat uses instead of the user's settings (issue 17): model, agent, tools.
        name: "chat_settings",
        sql: "CREATE TABLE chat_settings (
                  chat_id    TEXT PRIMARY KEY REFERENCES chats (id),
                  settings   TEXT NOT NULL,
                  updated_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        // Secrets that are not provider keys (issue 15): MCP servers' bearer tokens and OAuth
        // credentials, sealed like provider keys (same data key; the name is authenticated).
        name: "secrets",
        sql: "CREATE TABLE secrets (
                  name       TEXT PRIMARY KEY,
                  ciphertext BLOB NOT NULL,
                  updated_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        // Recall's pinned candidates per scope (issue 13): the old partial index on the owner
        // alone lost to `memory_facts_owner_scope` in the planner, so every recall walked all
        // active facts of a scope (100k rows: ~0.5 s). With the scope and status columns it
        // wins for `pinned = 1 AND status = 'ACTIVE'` and holds only pinned facts.
        name: "memory_pinned_by_scope",
        sql: "DROP INDEX memory_facts_pinned;
              CREATE INDEX memory_facts_pinned
                  ON memory_facts (owner_id, scope_type, scope_id, status, pinned, updated_at)
                  WHERE pinned = 1 AND status = 'ACTIVE';",
    },
    Migration {
        // The web search cache (issue 18): results by backend choice and normalized query,
        // kept `[web] cache_ttl_secs` (expired rows are replaced or pruned on write).
        name: "web_search_cache",
        sql: "CREATE TABLE web_search_cache (
                  cache_key  TEXT NOT NULL,
                  query      TEXT NOT NULL,
                  backend    TEXT NOT NULL,
                  results    TEXT NOT NULL,
                  fetched_at INTEGER NOT NULL,
                  PRIMARY KEY (cache_key, query)
              ) STRICT;",
    },
    Migration {
        // Input queued for a chat's next turn (issue 17), kept across restarts: the text the
        // turn takes and the message as stored (JSON), in the order sent (rowid).
        name: "chat_queued_inputs",
        sql: "CREATE TABLE chat_queued_inputs (
                  message_id TEXT PRIMARY KEY,
                  chat_id    TEXT NOT NULL REFERENCES chats (id),
                  user_id    TEXT NOT NULL,
                  content    TEXT NOT NULL,
                  message    TEXT NOT NULL,
                  queued_at  TEXT NOT NULL
              ) STRICT;
              CREATE INDEX chat_queued_inputs_chat ON chat_queued_inputs (chat_id);",
    },
    Migration {
        // The execution a chat turn ran for (issue 17, a turn's trace): `NULL` for turns
        // started outside a chat execution and for turns stored before.
        name: "agent_turns_execution",
        sql: "ALTER TABLE agent_turns ADD COLUMN execution_id TEXT;
              CREATE INDEX agent_turns_by_execution ON agent_turns (execution_id)
                  WHERE execution_id IS NOT NULL;",
    },
    Migration {
        // Files attached to a user message (issue 17): JSON, `NULL` when there are none.
        name: "message_attachments",
        sql: "ALTER TABLE messages ADD COLUMN attachments TEXT;",
    },
    Migration {
        // External MCP tools trusted by the Souz name the gate matches (issue 39): a remote
        // tool renamed onto a trusted name is a change, not a first sight. Rows of
        // `mcp_tool_definitions` (by remote name) are adopted on first use (`mcp::client::trust`).
        name: "mcp_tool_trust",
        sql: "CREATE TABLE mcp_tool_trust (
                  server     TEXT NOT NULL,
                  name       TEXT NOT NULL,
                  remote     TEXT NOT NULL,
                  sha256     TEXT NOT NULL,
                  definition TEXT NOT NULL,
                  trusted_at TEXT NOT NULL,
                  PRIMARY KEY (server, name)
              ) STRICT;",
    },
    Migration {
        // Scheduled runs (issue 40, `schedules`): a schedule fires on a spec read in its zone;
        // each occurrence it fires is a row of `schedule_runs`, claimed by inserting it, so the
        // UNIQUE (schedule_id, fire_at) makes a fire exactly-once across processes sharing the
        // file. `handled_until` is the fire time up to which occurrences were decided (fired,
        // skipped or dropped as missed); `next_fire` caches the next one (`NULL`: none).
        name: "schedules",
        sql: "CREATE TABLE schedules (
                  id             TEXT PRIMARY KEY,
                  owner          TEXT NOT NULL,
                  name           TEXT NOT NULL,
                  spec           TEXT NOT NULL,
                  zone           TEXT NOT NULL,
                  action         TEXT NOT NULL,
                  missed         TEXT NOT NULL,
                  overlap        TEXT NOT NULL CHECK (overlap IN ('skip', 'queue_one')),
                  envelope       TEXT NOT NULL,
                  enabled        INTEGER NOT NULL CHECK (enabled IN (0, 1)),
                  chat_id        TEXT,
                  handled_until  TEXT NOT NULL,
                  next_fire      TEXT,
                  created_at     TEXT NOT NULL,
                  updated_at     TEXT NOT NULL
              ) STRICT;
              CREATE INDEX schedules_by_owner ON schedules (owner, name);

              CREATE TABLE schedule_runs (
                  id           INTEGER PRIMARY KEY AUTOINCREMENT,
                  schedule_id  TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
                  fire_at      TEXT NOT NULL,
                  claimed_by   TEXT NOT NULL,
                  state        TEXT NOT NULL CHECK (state IN ('claimed', 'running', 'parked',
                                   'ok', 'blocked', 'failed', 'skipped')),
                  started_at   TEXT,
                  ended_at     TEXT,
                  chat_id      TEXT,
                  execution_id TEXT,
                  reason       TEXT,
                  UNIQUE (schedule_id, fire_at)
              ) STRICT;
              CREATE INDEX schedule_runs_open ON schedule_runs (schedule_id, state)
                  WHERE state IN ('claimed', 'running', 'parked');",
    },
    Migration {
        // Durable parking (issue 40): an unattended execution (`unattended`: the schedule run it
        // is, JSON) that meets a call needing a person parks on a pending approval
        // (`parked_approval`, for the model's call `parked_call`) in `waiting_approval`, which is
        // active like `waiting_option` and not a crash. The approval names the run (`parked`,
        // JSON) so it outlives the process; `used_by` is the call that ran under it once
        // approved (a parked approval runs once). A run records the approval it waits on.
        name: "parked_runs",
        sql: "ALTER TABLE approvals ADD COLUMN parked TEXT;
              ALTER TABLE approvals ADD COLUMN used_by TEXT;
              ALTER TABLE executions ADD COLUMN unattended TEXT;
              ALTER TABLE executions ADD COLUMN parked_approval TEXT;
              ALTER TABLE executions ADD COLUMN parked_call TEXT;
              ALTER TABLE schedule_runs ADD COLUMN approval_id TEXT;
              DROP INDEX executions_one_active;
              CREATE UNIQUE INDEX executions_one_active ON executions (chat_id)
                  WHERE status IN ('queued', 'running', 'waiting_option', 'waiting_approval',
                                   'cancelling');
              CREATE INDEX executions_parked ON executions (parked_approval)
                  WHERE parked_approval IS NOT NULL;",
    },
    Migration {
        name: "telegram_channel",
        sql: "CREATE TABLE telegram_state (
                  id              INTEGER PRIMARY KEY CHECK (id = 1),
                  next_offset     INTEGER NOT NULL DEFAULT 0,
                  user_id         INTEGER,
                  telegram_chat   INTEGER,
                  username        TEXT,
                  linked_at       TEXT,
                  souz_chat       TEXT,
                  code_hash       TEXT,
                  code_expires_at TEXT
              ) STRICT;
              INSERT INTO telegram_state (id) VALUES (1);
              CREATE TABLE telegram_audit (
                  id               INTEGER PRIMARY KEY AUTOINCREMENT,
                  kind             TEXT NOT NULL
                                   CHECK (kind IN ('linked', 'unlinked', 'refused', 'code_rejected')),
                  telegram_user_id INTEGER,
                  created_at       TEXT NOT NULL
              ) STRICT;
              CREATE INDEX telegram_audit_by_user ON telegram_audit (telegram_user_id, kind);
              CREATE TABLE telegram_presses (
                  handle      TEXT PRIMARY KEY,
                  approval_id TEXT NOT NULL,
                  verdict     TEXT NOT NULL CHECK (verdict IN ('approve', 'deny')),
                  created_at  TEXT NOT NULL,
                  used_at     TEXT
              ) STRICT;
              CREATE INDEX telegram_presses_by_approval ON telegram_presses (approval_id);",
    },
    Migration {
        // Approval prompts sent to Telegram (issue 41): where each approval's message is
        // (`message_id` is NULL while it is being sent), the text it was sent with, and when it
        // was closed (edited to say how the approval ended, buttons removed). One per approval.
        name: "telegram_prompts",
        sql: "CREATE TABLE telegram_prompts (
                  approval_id   TEXT PRIMARY KEY,
                  telegram_chat INTEGER NOT NULL,
                  message_id    INTEGER,
                  text          TEXT NOT NULL,
                  created_at    TEXT NOT NULL,
                  closed_at     TEXT
              ) STRICT;
              CREATE INDEX telegram_prompts_open ON telegram_prompts (approval_id)
                  WHERE closed_at IS NULL;",
    },
    Migration {
        // The history of file changes (issue 45): a change per file tool call, its paths'
        // before and after, and the content-addressed blobs that restore them.
        name: "file_history",
        sql: "CREATE TABLE history_changes (
                  id           INTEGER PRIMARY KEY AUTOINCREMENT,
                  call_id      TEXT NOT NULL,
                  tool         TEXT NOT NULL,
                  requester    TEXT NOT NULL,
                  client       TEXT NOT NULL,
                  chat_id      TEXT,
                  execution_id TEXT,
                  summary      TEXT NOT NULL,
                  status       TEXT NOT NULL CHECK (status IN ('pending', 'done', 'undone')),
                  undoes       INTEGER,
                  undone_by    INTEGER,
                  created_at   TEXT NOT NULL,
                  finished_at  TEXT
              ) STRICT;
              CREATE INDEX history_changes_by_call ON history_changes (call_id);
              CREATE INDEX history_changes_by_execution ON history_changes (execution_id)
                  WHERE execution_id IS NOT NULL;
              CREATE INDEX history_changes_by_time ON history_changes (created_at);
              CREATE INDEX history_changes_pending ON history_changes (status)
                  WHERE status = 'pending';
              CREATE TABLE history_paths (
                  change_id      INTEGER NOT NULL REFERENCES history_changes (id) ON DELETE CASCADE,
                  position       INTEGER NOT NULL,
                  path           BLOB NOT NULL,
                  created_parent INTEGER NOT NULL,
                  before_kind    TEXT NOT NULL,
                  before_size    INTEGER,
                  before_mode    INTEGER,
                  before_hash    TEXT,
                  before_link    BLOB,
                  before_kept    INTEGER NOT NULL,
                  after_kind     TEXT,
                  after_size     INTEGER,
                  after_mode     INTEGER,
                  after_hash     TEXT,
                  after_link     BLOB,
                  after_kept     INTEGER,
                  PRIMARY KEY (change_id, position)
              ) STRICT;
              CREATE INDEX history_paths_by_before ON history_paths (before_hash);
              CREATE INDEX history_paths_by_after ON history_paths (after_hash);
              CREATE TABLE history_blobs (
                  hash       TEXT PRIMARY KEY,
                  stored     INTEGER NOT NULL,
                  created_at TEXT NOT NULL
              ) STRICT;",
    },
    Migration {
        // Telegram buttons for questions and for the suggested scope (issue 41): a button's
        // handle names its subject (an approval or a question), what it does, and the choice
        // it picks. Handles are deleted once used or once their prompt closes, so the table
        // holds only the buttons of open prompts. A prompt is an approval's or a question's.
        name: "telegram_questions",
        sql: "ALTER TABLE telegram_presses RENAME TO telegram_presses_before;
              CREATE TABLE telegram_presses (
                  handle     TEXT PRIMARY KEY,
                  subject    TEXT NOT NULL,
                  action     TEXT NOT NULL
                             CHECK (action IN ('approve', 'deny', 'approve_suggested', 'answer')),
                  choice     TEXT,
                  created_at TEXT NOT NULL
              ) STRICT;
              INSERT INTO telegram_presses (handle, subject, action, created_at)
                  SELECT handle, approval_id, verdict, created_at FROM telegram_presses_before
                  WHERE used_at IS NULL;
              DROP TABLE telegram_presses_before;
              CREATE INDEX telegram_presses_by_subject ON telegram_presses (subject);
              ALTER TABLE telegram_prompts ADD COLUMN kind TEXT NOT NULL DEFAULT 'approval'
                  CHECK (kind IN ('approval', 'question'));",
    },
    Migration {
        // Multiple-choice questions in Telegram (issue 41): a choice's button toggles it
        // (`toggle`), a Done button answers with the choices picked (`submit`); the picked
        // choices of a question's prompt are kept with it (`selected`, a JSON list of choice
        // ids, `NULL` while none is).
        name: "telegram_multiple_choice",
        sql: "ALTER TABLE telegram_presses RENAME TO telegram_presses_before;
              CREATE TABLE telegram_presses (
                  handle     TEXT PRIMARY KEY,
                  subject    TEXT NOT NULL,
                  action     TEXT NOT NULL
                             CHECK (action IN ('approve', 'deny', 'approve_suggested', 'answer',
                                               'toggle', 'submit')),
                  choice     TEXT,
                  created_at TEXT NOT NULL
              ) STRICT;
              INSERT INTO telegram_presses (handle, subject, action, choice, created_at)
                  SELECT handle, subject, action, choice, created_at FROM telegram_presses_before;
              DROP TABLE telegram_presses_before;
              CREATE INDEX telegram_presses_by_subject ON telegram_presses (subject);
              ALTER TABLE telegram_prompts ADD COLUMN selected TEXT;",
    },
    Migration {
        // A fact is embedded as its title and body, and multilingual-e5 embeds stored facts
        // with the queries' prefix (issue 49): vectors made from the earlier text (with
        // `kind=`/`scope=` lines, and `passage: ` for e5) are made again. Each becomes a
        // pending job of its model, due now (the embedding loop runs them at start); until it
        // runs, its fact is found by words only.
        name: "memory_embeddings_again",
        sql: "INSERT INTO memory_index_jobs (fact_id, owner_id, embedding_model, content_hash,
                  status, attempt_count, next_attempt_at, created_at, updated_at)
                  SELECT e.fact_id, f.owner_id, e.embedding_model, e.content_hash, 'PENDING', 0,
                         strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                         strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
                         strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
                  FROM memory_fact_embeddings e
                  JOIN memory_facts f ON f.id = e.fact_id AND f.content_hash = e.content_hash
                  WHERE f.status = 'ACTIVE'
              ON CONFLICT (fact_id, embedding_model, content_hash) DO UPDATE SET
                  status = 'PENDING', attempt_count = 0,
                  next_attempt_at = excluded.next_attempt_at, updated_at = excluded.updated_at;
              DELETE FROM memory_fact_embeddings;",
    },
    Migration {
        // A turn's start reads when its chat's previous execution was created (the window of
        // messages delivered through another channel, `chat::delivered`): by chat, not by a
        // scan of every execution of every chat.
        name: "executions_by_chat",
        sql: "CREATE INDEX executions_by_chat ON executions (chat_id, created_at);",
    },
    Migration {
        // The public client protocol (`chat::devices`): a thread's revision (the latest
        // accepted input number), and the answers to devices' requests kept by
        // `(chat_id, request_id)` with the hash of what was asked, so a resent request gets its
        // original answer and a reused key with another request is refused.
        name: "client_requests",
        sql: "ALTER TABLE executions ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;
              CREATE TABLE client_requests (
                  chat_id      TEXT NOT NULL REFERENCES chats (id),
                  request_id   TEXT NOT NULL,
                  kind         TEXT NOT NULL,
                  thread_id    TEXT,
                  payload_hash TEXT NOT NULL,
                  ack          TEXT NOT NULL,
                  created_at   TEXT NOT NULL,
                  PRIMARY KEY (chat_id, request_id)
              ) STRICT;",
    },
    Migration {
        // Review mode (issue 45): who is in it (a chat, or a client by the name its credential
        // gives), the reviews of staged file writes (a chat turn's, or a client's), and each
        // staged call with what its paths held when it was staged (JSON `base`).
        name: "file_reviews",
        sql: "CREATE TABLE review_modes (
                  scope      TEXT NOT NULL CHECK (scope IN ('chat', 'client')),
                  key        TEXT NOT NULL,
                  created_at TEXT NOT NULL,
                  PRIMARY KEY (scope, key)
              ) STRICT;
              CREATE TABLE reviews (
                  id           INTEGER PRIMARY KEY AUTOINCREMENT,
                  client       TEXT NOT NULL,
                  chat_id      TEXT,
                  execution_id TEXT,
                  status       TEXT NOT NULL CHECK (status IN ('collecting', 'open', 'closed')),
                  created_at   TEXT NOT NULL,
                  opened_at    TEXT,
                  closed_at    TEXT
              ) STRICT;
              CREATE INDEX reviews_unclosed ON reviews (status) WHERE status != 'closed';
              CREATE INDEX reviews_by_execution ON reviews (execution_id)
                  WHERE execution_id IS NOT NULL;
              CREATE TABLE review_changes (
                  id              INTEGER PRIMARY KEY AUTOINCREMENT,
                  review_id       INTEGER NOT NULL REFERENCES reviews (id) ON DELETE CASCADE,
                  call_id         TEXT NOT NULL,
                  tool            TEXT NOT NULL,
                  requester       TEXT NOT NULL,
                  arguments       TEXT NOT NULL,
                  summary         TEXT NOT NULL,
                  diff            TEXT,
                  base            TEXT NOT NULL,
                  decision        TEXT CHECK (decision IN ('applying', 'applied', 'discarded',
                                                          'failed')),
                  result          TEXT,
                  applied_call_id TEXT,
                  created_at      TEXT NOT NULL,
                  decided_at      TEXT
              ) STRICT;
              CREATE INDEX review_changes_by_review ON review_changes (review_id);",
    },
    Migration {
        // Client tools (issue 42): each call a thread made to a tool of its device — which
        // device, the arguments, until when it may answer — and how it ended. `result_hash`
        // (SHA-256 of the device's normalised `tool.result`) makes a resent result a duplicate
        // and another one a conflict. One pending call per thread (the partial unique index).
        name: "client_tool_calls",
        sql: "CREATE TABLE client_tool_calls (
                  chat_id      TEXT NOT NULL REFERENCES chats (id),
                  execution_id TEXT NOT NULL,
                  tool_call_id TEXT NOT NULL,
                  tool         TEXT NOT NULL,
                  target       TEXT NOT NULL CHECK (target IN ('client')),
                  device_id    TEXT NOT NULL,
                  arguments    TEXT NOT NULL,
                  status       TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed',
                                                               'cancelled', 'timed_out')),
                  result       TEXT,
                  result_hash  TEXT,
                  deadline_at  TEXT NOT NULL,
                  created_at   TEXT NOT NULL,
                  finished_at  TEXT,
                  PRIMARY KEY (chat_id, execution_id, tool_call_id)
              ) STRICT;
              CREATE UNIQUE INDEX client_tool_calls_one_pending ON client_tool_calls (execution_id)
                  WHERE status = 'pending';",
    },
    Migration {
        // What a client token reaches (`mcp`: `/mcp` only; `chats`: the chats it made and their
        // approvals, for `souz acp`), and which chats a `chats` client made. A chat belongs to
        // its user as before; the row here only says which client may also reach it.
        name: "client_scopes",
        sql: "ALTER TABLE client_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'mcp'
                  CHECK (scope IN ('mcp', 'chats'));
              CREATE TABLE client_chats (
                  chat_id    TEXT PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
                  client_id  TEXT NOT NULL REFERENCES client_tokens (id),
                  created_at TEXT NOT NULL
              ) STRICT;
              CREATE INDEX client_chats_by_client ON client_chats (client_id);",
    },
    Migration {
        // The device a turn was submitted from, kept with its execution so the turn's client
        // tools come back when it goes on after an answered question or a decided approval.
        name: "execution_devices",
        sql: "CREATE TABLE execution_devices (
                  execution_id TEXT PRIMARY KEY REFERENCES executions (id) ON DELETE CASCADE,
                  device_id    TEXT NOT NULL,
                  capabilities TEXT NOT NULL
              ) STRICT;",
    },
];

/// The schema version this binary produces.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Applies every pending migration in one transaction.
pub(crate) fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Re-read inside the lock: another process may have migrated in the meantime.
    let current = super::user_version(&transaction)?;
    if current > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found: current,
            known: SCHEMA_VERSION,
        });
    }
    let pending = MIGRATIONS.iter().zip(1_i64..).skip(current.max(0) as usize);
    let mut applied = 0;
    for (migration, version) in pending {
        let failed = |source| StoreError::Migration {
            version,
            name: migration.name,
            source,
        };
        transaction.execute_batch(migration.sql).map_err(failed)?;
        transaction
            .execute(
                "INSERT INTO schema_migrations (version, name) VALUES (?1, ?2)",
                rusqlite::params![version, migration.name],
            )
            .map_err(failed)?;
        transaction
            .pragma_update(None, "user_version", version)
            .map_err(failed)?;
        applied += 1;
    }
    transaction.commit()?;
    if applied > 0 {
        tracing::info!(from = current, to = SCHEMA_VERSION, "database migrated");
    }
    Ok(())
}
