//! Every route of the gateway, each a few lines over [`RuntimeHandle`](crate::RuntimeHandle).

pub mod app;
pub mod approvals;
pub mod audit;
pub mod chats;
pub mod clients;
pub mod config;
pub mod events;
pub mod options;
pub mod provider_keys;
pub mod system;
pub mod tools;
pub mod turns;

use super::AppState;
use super::api::ApiRouter;

/// All documented routes.
pub fn all() -> ApiRouter<AppState> {
    ApiRouter::default()
        .merge(system::routes())
        .merge(events::routes())
        .merge(approvals::routes())
        .merge(clients::routes())
        .merge(tools::routes())
        .merge(audit::routes())
        .merge(chats::routes())
        .merge(options::routes())
        .merge(provider_keys::routes())
        .merge(config::routes())
        .merge(turns::routes())
        .merge(app::routes())
}
