//! Calls of unattended runs (a schedule's), which park instead of waiting.
//!
//! A call made in [`CallMode::Unattended`] that the policy would ask about is stored as a
//! pending approval naming its run ([`souz_protocol::ParkedRun`]) and ends at once with status
//! `parked`: nothing ran, and nothing in this process waits. The approval outlives the call,
//! the process and a kill -9; when a person approves it, the run makes the call again in
//! [`CallMode::Approved`], and the gate lets it run only if:
//! - the approval is approved, parked, and not used yet (it is marked used by this call in the
//!   same check: a parked approval runs one call, once);
//! - it is for the same tool and requester, with the same arguments;
//! - planned again now, the call shows the same summary and diff the person saw (a file that
//!   changed since is a conflict: nothing runs).
//!
//! Otherwise the call fails and nothing runs. Everything else about a parked or approved call
//! (its row, audit, events) is as for any call.

use serde::{Deserialize, Serialize};
use souz_protocol::schedules::ScheduleEnvelope;
use souz_protocol::{Action, ApprovalStatus, ArgumentMatch, DecisionSource, Effect, ParkedRun};
use souz_protocol::{Requester, ToolGroup};

use super::Gate;
use super::record::Record;
use crate::approvals::GrantRule;
use crate::tools::Plan;

/// A run nobody watches: which one (named on the approvals it parks on), and what the person
/// let it do unasked when they made its schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unattended {
    /// The run.
    pub run: ParkedRun,
    /// What it may do without asking.
    pub envelope: ScheduleEnvelope,
}

impl Unattended {
    /// The envelope as grants bound to `requester` (the run's chat), each named after the
    /// schedule in the audit (`schedule:<id>`):
    /// - every listed tool, inside each listed folder and on each listed host — or for every
    ///   call when the envelope lists neither;
    /// - with folders but no tools, creating and editing files inside those folders (the
    ///   `file_writes` group: protected paths still ask).
    ///
    /// The policy applies them like any grant: deny rules, protected paths, unconfined
    /// commands and the network default of commands still win.
    pub(crate) fn grants(&self, requester: &Requester) -> Vec<GrantRule> {
        let envelope = &self.envelope;
        let id = format!("schedule:{}", self.run.schedule_id);
        let rule = |tool: &str, argument_match: ArgumentMatch| GrantRule {
            id: id.clone(),
            effect: Effect::Allow,
            tool: tool.to_owned(),
            requester: Some(requester.clone()),
            argument_match,
            expires_at: None,
        };
        let mut matches = Vec::new();
        for folder in envelope
            .folders
            .iter()
            .map(|f| f.trim())
            .filter(|f| !f.is_empty())
        {
            matches.push(ArgumentMatch {
                path_prefix: Some(folder.to_owned()),
                ..ArgumentMatch::default()
            });
        }
        for host in envelope
            .hosts
            .iter()
            .map(|h| h.trim())
            .filter(|h| !h.is_empty())
        {
            matches.push(ArgumentMatch {
                domain: Some(host.to_owned()),
                ..ArgumentMatch::default()
            });
        }
        let tools: Vec<&str> = envelope
            .tools
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        if tools.is_empty() {
            return matches
                .into_iter()
                .filter(|matched| matched.path_prefix.is_some())
                .map(|matched| rule(ToolGroup::FileWrites.marker(), matched))
                .collect();
        }
        if matches.is_empty() {
            return tools
                .into_iter()
                .map(|tool| rule(tool, ArgumentMatch::default()))
                .collect();
        }
        tools
            .into_iter()
            .flat_map(|tool| matches.iter().map(move |matched| (tool, matched.clone())))
            .map(|(tool, matched)| rule(tool, matched))
            .collect()
    }
}

/// How a call meets a person.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CallMode {
    /// Someone is there: a call that needs a person waits for them.
    #[default]
    Attended,
    /// Nobody is watching (a schedule's run): inside its envelope a call goes on unasked; a
    /// call that needs a person parks.
    Unattended(Box<Unattended>),
    /// The call a person approved while it was parked, made again to run.
    Approved {
        /// The parked approval.
        approval_id: String,
    },
    /// A staged call the person applied from its review, made again to run (see
    /// [`crate::history::review`]).
    Reviewed {
        /// The review.
        review_id: i64,
        /// The staged change.
        change_id: i64,
        /// Applied although its paths changed since it was staged.
        force: bool,
    },
}

/// What a parked call answers: nothing ran, the run waits.
pub(super) fn parked_text(approval_id: &str) -> String {
    format!(
        "This call needs the person's approval and nobody is watching this run, so it is parked \
         (approval {approval_id}). Nothing ran. Stop here: the run goes on with its result once \
         the person decides."
    )
}

impl Gate {
    /// Lets an approved parked call run, or says why it may not (nothing ran).
    pub(super) async fn admit_approved(
        &self,
        record: &mut Record,
        approval_id: &str,
        plan: &Plan,
    ) -> Result<(), String> {
        let approvals = &self.inner.approvals;
        let approval = approvals
            .get(approval_id)
            .await
            .map_err(|error| format!("The approval this call ran under is unreadable: {error}"))?;
        if approval.status != ApprovalStatus::Approved || approval.parked.is_none() {
            return Err(format!(
                "Approval {approval_id} is {}, not an approved parked call; nothing ran.",
                approval.status.as_str()
            ));
        }
        if approval.tool != record.request.tool
            || approval.requester != record.request.requester
            || approval.arguments != record.request.arguments
        {
            return Err(format!(
                "This call is not the one approved as {approval_id}; nothing ran."
            ));
        }
        if approval.summary != plan.summary || approval.diff != plan.diff {
            return Err(
                "What this call would do changed since the person approved it (a file changed \
                 meanwhile?); nothing ran. Ask again if it is still needed."
                    .to_owned(),
            );
        }
        let used = approvals
            .use_parked(approval_id, &record.call_id)
            .await
            .map_err(|error| format!("Souz could not record the approval's use: {error}"))?;
        if !used {
            return Err(format!(
                "The call approved as {approval_id} ran already; nothing ran again."
            ));
        }
        record.approval_id = Some(approval_id.to_owned());
        record.decision = Some(Action::Allow);
        record.decided_by = DecisionSource::Person {
            approval_id: approval_id.to_owned(),
            via: approval
                .decision
                .map(|decision| decision.via)
                .unwrap_or_default(),
        };
        record.side_effects = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unattended(tools: &[&str], folders: &[&str], hosts: &[&str]) -> Unattended {
        let owned = |items: &[&str]| items.iter().map(|item| (*item).to_owned()).collect();
        Unattended {
            run: ParkedRun {
                schedule_id: "s1".into(),
                schedule_name: "Inbox".into(),
                run_id: 7,
            },
            envelope: ScheduleEnvelope {
                tools: owned(tools),
                folders: owned(folders),
                hosts: owned(hosts),
            },
        }
    }

    fn shape(grants: &[GrantRule]) -> Vec<(String, Option<String>, Option<String>)> {
        grants
            .iter()
            .map(|grant| {
                (
                    grant.tool.clone(),
                    grant.argument_match.path_prefix.clone(),
                    grant.argument_match.domain.clone(),
                )
            })
            .collect()
    }

    #[test]
    fn an_envelope_becomes_grants_bound_to_the_run_and_named_after_its_schedule() {
        let chat = Requester::Chat {
            chat_id: "c1".into(),
        };
        let empty = unattended(&[], &[], &[]).grants(&chat);
        assert!(empty.is_empty(), "the default envelope allows nothing more");

        let tools = unattended(&["ReadFile", " "], &[], &[]).grants(&chat);
        assert_eq!(shape(&tools), vec![("ReadFile".into(), None, None)]);
        assert_eq!(tools[0].id, "schedule:s1");
        assert_eq!(tools[0].requester.as_ref(), Some(&chat));
        assert_eq!(tools[0].effect, Effect::Allow);

        let folders = unattended(&[], &["~/notes"], &["example.org"]).grants(&chat);
        assert_eq!(
            shape(&folders),
            vec![("@file_writes".into(), Some("~/notes".into()), None)],
            "folders alone: creating and editing files there; hosts need a tool"
        );

        let both = unattended(&["NewFile", "WebFetch"], &["~/a"], &["example.org"]).grants(&chat);
        assert_eq!(
            shape(&both),
            vec![
                ("NewFile".into(), Some("~/a".into()), None),
                ("NewFile".into(), None, Some("example.org".into())),
                ("WebFetch".into(), Some("~/a".into()), None),
                ("WebFetch".into(), None, Some("example.org".into())),
            ]
        );
    }
}
