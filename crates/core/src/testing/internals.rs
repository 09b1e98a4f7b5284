//! [`RuntimeInternals`]: the services behind the runtime's facade, for tests and benchmarks of
//! other crates that set up or measure below it (filling the database directly, running an
//! agent turn without a chat). Adapters use the facade; inside `souz-core` the same accessors
//! are `pub(crate)` methods of [`RuntimeHandle`].

use crate::agent::Agents;
use crate::chat::Chats;
use crate::llm::service::LlmService;
use crate::runtime::RuntimeHandle;
use crate::store::Store;
use crate::tools::gate::Gate;

/// The runtime's services, below the facade.
pub trait RuntimeInternals {
    /// The database.
    fn store(&self) -> &Store;
    /// The approval gate every tool call passes.
    fn gate(&self) -> &Gate;
    /// Chats, messages and agent turns.
    fn chats(&self) -> &Chats;
    /// Souz's own agents.
    fn agents(&self) -> &Agents;
    /// Language models: provider keys, the model registry, clients.
    fn llm(&self) -> &LlmService;
}

impl RuntimeInternals for RuntimeHandle {
    fn store(&self) -> &Store {
        RuntimeHandle::store(self)
    }

    fn gate(&self) -> &Gate {
        RuntimeHandle::gate(self)
    }

    fn chats(&self) -> &Chats {
        RuntimeHandle::chats(self)
    }

    fn agents(&self) -> &Agents {
        RuntimeHandle::agents(self)
    }

    fn llm(&self) -> &LlmService {
        RuntimeHandle::llm(self)
    }
}
