//! [`TestGate`]: the gate stack without the rest of the runtime: SQLite, the event bus, the
//! approvals, the sandbox and the gate over a catalog of the test's own tools, on a
//! [`TestHome`]. It owns the home, so the database outlives the gate.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::TestHome;
use crate::approvals::Approvals;
use crate::bus::EventBus;
use crate::config::Config;
use crate::sandbox::Sandbox;
use crate::store::Store;
use crate::tools::Catalog;
use crate::tools::gate::{Gate, GateParts};

/// Room for events on the bus of a [`TestGate`].
const EVENT_CAPACITY: usize = 4096;

/// A gate wired to its own store, bus and approvals.
pub struct TestGate {
    /// The gate over the test's catalog.
    pub gate: Gate,
    /// The database of the home.
    pub store: Store,
    /// The event bus the gate and approvals publish on.
    pub events: EventBus,
    /// The configuration the stack was built from.
    pub config: Config,
    /// The tracker of the gate's detached tasks.
    pub tasks: TaskTracker,
    /// The gate's shutdown signal.
    pub shutdown: CancellationToken,
    // Declared last: dropped after the store.
    home: TestHome,
}

impl TestGate {
    /// Builds the stack from `config` (whose paths are in `home`) over `catalog`.
    pub async fn start(home: TestHome, config: Config, catalog: Catalog) -> Self {
        config.paths.ensure_home().expect("the Souz home");
        let store = Store::open(config.paths.database())
            .await
            .expect("the test database");
        let events = EventBus::new(store.clone(), EVENT_CAPACITY);
        let approvals = Approvals::open(store.clone(), events.clone(), config.clone())
            .await
            .expect("the approvals");
        let sandbox =
            Arc::new(Sandbox::new(&config.sandbox, &config.paths).expect("the test sandbox"));
        let tasks = TaskTracker::new();
        let shutdown = CancellationToken::new();
        let gate = Gate::new(GateParts {
            catalog,
            sandbox,
            approvals,
            events: events.clone(),
            store: store.clone(),
            tasks: tasks.clone(),
            shutdown: shutdown.clone(),
        });
        Self {
            gate,
            store,
            events,
            config,
            tasks,
            shutdown,
            home,
        }
    }

    /// The catalog of Souz's built-in tools (files, documents, data, ...).
    pub fn builtin_catalog() -> Catalog {
        crate::tools::builtin::catalog().expect("the built-in catalog")
    }

    /// The temporary home.
    pub fn home(&self) -> &TestHome {
        &self.home
    }
}
