//! First-run setup for the adapters: whether it was done (kept server-side so the app window,
//! a browser tab and the tray agree), and which local model servers answer on this machine.

use souz_protocol::{LocalServerList, LocalServerProbe, SetupState};

use super::ServiceError;
use crate::runtime::RuntimeHandle;
use crate::runtime::setup;

impl RuntimeHandle {
    /// Whether the first-run setup was finished or skipped.
    pub async fn setup_state(&self) -> Result<SetupState, ServiceError> {
        Ok(self.store().read(setup::load).await?)
    }

    /// Marks the setup done (`true`, keeping the first time) or to be shown again (`false`).
    pub async fn set_setup_completed(&self, completed: bool) -> Result<SetupState, ServiceError> {
        self.store()
            .write(move |transaction| setup::store(transaction, completed))
            .await?;
        self.setup_state().await
    }

    /// The local OpenAI-compatible servers (Ollama, LM Studio, llama.cpp) that answer at their
    /// `[llm]` endpoints on this computer or a local network, with their models.
    pub async fn local_servers(&self) -> Result<LocalServerList, ServiceError> {
        let config = self.config_editor().current().await;
        Ok(LocalServerList {
            items: setup::probe_local_servers(&config.llm).await,
        })
    }

    /// What answers at the model server address a person typed: its models and the kind of
    /// server, or why it offers none (the answer says it; nothing here fails).
    pub async fn probe_local_server(&self, base_url: &str) -> LocalServerProbe {
        setup::probe_typed_server(base_url).await
    }
}
