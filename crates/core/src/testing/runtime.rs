//! [`TestRuntime`]: the whole runtime (`Runtime::start_with`) on a [`TestHome`], configured by
//! a builder. The value owns both, so the home outlives the runtime; provider keys come from
//! the builder's environment only (empty unless set).

use std::collections::HashMap;
use std::sync::Arc;

use souz_testkit::FakeServer;

use super::TestHome;
use crate::config::Config;
use crate::llm::service::Environment;
use crate::runtime::{Runtime, RuntimeHandle, RuntimeOptions};
use crate::store::StoreError;

/// The OpenAI key [`TestRuntimeBuilder::with_llm`] puts in the runtime's environment.
pub const FAKE_OPENAI_KEY: &str = "sk-test-1234567890";

/// A fixed environment of `(name, value)` pairs, for what reads provider keys from one
/// (`LlmService`, the runtime); no other variable is set.
pub fn environment(pairs: &[(&str, &str)]) -> Environment {
    lookup(
        pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
    )
}

/// The environment that holds exactly `variables`.
fn lookup(variables: HashMap<String, String>) -> Environment {
    Arc::new(move |name: &str| variables.get(name).cloned())
}

type Adjust = Box<dyn FnOnce(&mut Config, &TestHome)>;

/// A running runtime on its own temporary home; dropping it drops both.
pub struct TestRuntime {
    runtime: Runtime,
    token: String,
    // Declared last: dropped after the runtime.
    home: TestHome,
}

/// How a [`TestRuntime`] is set up.
pub struct TestRuntimeBuilder {
    flat: bool,
    template: bool,
    adjust: Vec<Adjust>,
    environment: HashMap<String, String>,
}

impl TestRuntime {
    /// A builder: the default configuration on [`TestHome::paths`], an empty environment.
    pub fn builder() -> TestRuntimeBuilder {
        TestRuntimeBuilder {
            flat: false,
            template: false,
            adjust: Vec::new(),
            // No test reaches the internet: the default local embedding model is never
            // downloaded (a test that wants a download serves the files itself).
            environment: HashMap::from([(
                crate::config::env::Var::NoModelDownloads.name().to_owned(),
                "1".to_owned(),
            )]),
        }
    }

    /// A handle to the runtime.
    pub fn handle(&self) -> RuntimeHandle {
        self.runtime.handle()
    }

    /// The operator's bearer token (the `token` file of the home).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The temporary home.
    pub fn home(&self) -> &TestHome {
        &self.home
    }

    /// Shuts the runtime down (as [`Runtime::shutdown`]); the home goes afterwards.
    pub async fn shutdown(self, reason: &str) -> Result<(), StoreError> {
        self.runtime.shutdown(reason).await
    }

    /// Shuts the runtime down and hands back its home, to read what the stop left behind.
    pub async fn shutdown_keeping_home(self, reason: &str) -> Result<TestHome, StoreError> {
        self.runtime.shutdown(reason).await?;
        Ok(self.home)
    }
}

impl TestRuntimeBuilder {
    /// The folder is the Souz home and the user home at once ([`TestHome::flat_paths`]).
    pub fn flat_home(mut self) -> Self {
        self.flat = true;
        self
    }

    /// Starts from the `config.toml` template written into the home (as a first start) rather
    /// than the built-in defaults.
    pub fn from_template(mut self) -> Self {
        self.template = true;
        self
    }

    /// Changes the configuration before the start (in the order given).
    pub fn with_config(mut self, adjust: impl FnOnce(&mut Config) + 'static) -> Self {
        self.adjust.push(Box::new(move |config, _| adjust(config)));
        self
    }

    /// Changes the configuration with the home at hand (for paths inside it).
    pub fn with_config_in(mut self, adjust: impl FnOnce(&mut Config, &TestHome) + 'static) -> Self {
        self.adjust.push(Box::new(adjust));
        self
    }

    /// The OpenAI provider is the fake `server`, with [`FAKE_OPENAI_KEY`] as the environment's
    /// `OPENAI_API_KEY` (a later [`TestRuntimeBuilder::with_env`] may replace it).
    pub fn with_llm(mut self, server: &FakeServer) -> Self {
        let base_url = format!("{}/v1", server.url());
        self.environment
            .insert("OPENAI_API_KEY".to_owned(), FAKE_OPENAI_KEY.to_owned());
        self.with_config(move |config| config.llm.openai_base_url = base_url)
    }

    /// Sets an environment variable the runtime reads (provider keys).
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.environment.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Starts the runtime on a new [`TestHome`].
    pub async fn start(self) -> TestRuntime {
        self.start_in(TestHome::new()).await
    }

    /// Starts the runtime on `home` (prepared by the test, e.g. with files in the user home).
    pub async fn start_in(self, home: TestHome) -> TestRuntime {
        let paths = if self.flat {
            home.flat_paths()
        } else {
            home.paths()
        };
        let mut config = if self.template {
            TestHome::template_config(paths)
        } else {
            Config::defaults(paths)
        };
        for adjust in self.adjust {
            adjust(&mut config, &home);
        }
        let options = RuntimeOptions {
            environment: Some(lookup(self.environment)),
            ..RuntimeOptions::default()
        };
        let runtime = Runtime::start_with(config, options)
            .await
            .expect("the test runtime starts");
        let token = runtime.handle().operator_token().to_owned();
        TestRuntime {
            runtime,
            token,
            home,
        }
    }
}
