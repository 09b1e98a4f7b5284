//! Shared probe tools: [`Probe`], a tool of a given name, category and risk class that records
//! each run in a shared [`Probes`] (and, made [`Probe::blocking`], waits for a permit first),
//! and [`of_each_risk`], one probe per risk class. A probe plans `"<name> <path>"` and answers
//! `"<name> done for <path>"` (or `size` characters when asked to).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use souz_protocol::{Risk, ToolCategory};
use tokio::sync::{Notify, Semaphore};

use crate::tools::{CatalogBuilder, Plan, Planned, Tool, ToolContext, ToolError, ToolOutput};

/// Arguments of the probe tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeArgs {
    /// A path.
    path: Option<String>,
    /// Answer this many characters.
    size: Option<usize>,
}

/// What the probes share with the test.
pub struct Probes {
    /// Names of the probes that ran, in order.
    pub runs: Mutex<Vec<String>>,
    /// A blocking probe waits until a permit is added.
    pub release: Semaphore,
    /// Signalled when a blocking probe starts.
    pub waiting: Notify,
    /// How many blocking runs started.
    pub waits: AtomicUsize,
}

impl Default for Probes {
    fn default() -> Self {
        Self {
            runs: Mutex::new(Vec::new()),
            release: Semaphore::new(0),
            waiting: Notify::new(),
            waits: AtomicUsize::new(0),
        }
    }
}

impl Probes {
    /// Names of the probes that ran, in order.
    pub fn runs(&self) -> Vec<String> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A probe tool recording its runs in [`Probes`].
pub struct Probe {
    name: &'static str,
    category: ToolCategory,
    risk: Risk,
    blocking: bool,
    probes: Arc<Probes>,
}

impl Probe {
    /// A probe that runs at once.
    pub fn new(
        name: &'static str,
        category: ToolCategory,
        risk: Risk,
        probes: &Arc<Probes>,
    ) -> Self {
        Self {
            name,
            category,
            risk,
            blocking: false,
            probes: Arc::clone(probes),
        }
    }

    /// The probe waits for a permit of [`Probes::release`] (or its cancellation) before it runs.
    pub fn blocking(mut self) -> Self {
        self.blocking = true;
        self
    }
}

impl Tool for Probe {
    type Args = ProbeArgs;
    type Prepared = ();
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        "A probe tool for agent tests."
    }
    fn category(&self) -> ToolCategory {
        self.category
    }
    fn risk(&self) -> Risk {
        self.risk
    }
    async fn plan(&self, args: &ProbeArgs, _: &ToolContext) -> Result<Planned<()>, ToolError> {
        Ok(Plan::new(format!(
            "{} {}",
            self.name,
            args.path.as_deref().unwrap_or("-")
        ))
        .ready())
    }
    async fn run(
        &self,
        args: ProbeArgs,
        (): (),
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if self.blocking {
            self.probes.waits.fetch_add(1, Ordering::SeqCst);
            self.probes.waiting.notify_waiters();
            tokio::select! {
                permit = self.probes.release.acquire() => permit.map(|permit| permit.forget())
                    .map_err(|_| ToolError::Cancelled)?,
                () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            }
        }
        self.probes
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(self.name.to_owned());
        Ok(match args.size {
            Some(size) => ToolOutput::text("n".repeat(size)),
            None => ToolOutput::text(format!(
                "{} done for {}",
                self.name,
                args.path.as_deref().unwrap_or("-")
            )),
        })
    }
}

/// The names [`of_each_risk`] gives its probes, by risk class.
pub const RISK_PROBES: [(&str, Risk); 5] = [
    ("ReadProbe", Risk::ReadOnly),
    ("WriteProbe", Risk::Write),
    ("DeleteProbe", Risk::Delete),
    ("NetworkProbe", Risk::Network),
    ("ExecProbe", Risk::Exec),
];

/// Adds one probe of each risk class ([`RISK_PROBES`]) to `catalog`.
pub fn of_each_risk(catalog: &mut CatalogBuilder, probes: &Arc<Probes>) {
    for (name, risk) in RISK_PROBES {
        catalog
            .add(Probe::new(name, ToolCategory::Souz, risk, probes))
            .expect("probe names are unique");
    }
}
