//! Every route of the gateway, each a few lines over [`RuntimeHandle`](crate::RuntimeHandle).

pub(crate) mod app;
pub(crate) mod approvals;
pub(crate) mod audit;
pub(crate) mod chats;
pub(crate) mod clients;
pub(crate) mod config;
pub(crate) mod connect;
pub(crate) mod events;
pub(crate) mod history;
pub(crate) mod local_models;
pub(crate) mod mcp_servers;
pub(crate) mod memory;
pub(crate) mod options;
pub(crate) mod provider_keys;
pub(crate) mod provider_logins;
pub(crate) mod reviews;
pub(crate) mod schedules;
pub(crate) mod service_keys;
pub(crate) mod setup;
pub(crate) mod skills;
pub(crate) mod speech;
pub(crate) mod system;
pub(crate) mod telegram;
#[cfg(test)]
pub(crate) mod test_requests;
pub(crate) mod tools;
pub(crate) mod turns;
pub(crate) mod voice;

use super::AppState;
use super::api::ApiRouter;

/// All documented routes.
pub(crate) fn all() -> ApiRouter<AppState> {
    ApiRouter::default()
        .merge(system::routes())
        .merge(events::routes())
        .merge(approvals::routes())
        .merge(clients::routes())
        .merge(skills::routes())
        .merge(tools::routes())
        .merge(mcp_servers::routes())
        .merge(audit::routes())
        .merge(history::routes())
        .merge(reviews::routes())
        .merge(memory::routes())
        .merge(speech::routes())
        .merge(local_models::routes())
        .merge(chats::routes())
        .merge(schedules::routes())
        .merge(options::routes())
        .merge(provider_keys::routes())
        .merge(provider_logins::routes())
        .merge(service_keys::routes())
        .merge(telegram::routes())
        .merge(config::routes())
        .merge(setup::routes())
        .merge(connect::routes())
        .merge(turns::routes())
        .merge(voice::routes())
        .merge(app::routes())
}
