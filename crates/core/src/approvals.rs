//! The approval gate's decisions: the pure [`policy`], durable pending approvals and the
//! first-decision-wins protocol, grants, the audit log and its redaction.
//!
//! Invariants (fail closed): nothing runs without an explicit yes or a rule or grant that says
//! yes. No answer in time, a restart, a dropped waiter, a malformed decision: deny. The first
//! decision wins atomically (a conditional update under the single writer connection); a later
//! one gets a conflict.

pub mod policy;
pub mod shell;

pub use policy::{CallFacts, Decision, GrantRule, Policy};
