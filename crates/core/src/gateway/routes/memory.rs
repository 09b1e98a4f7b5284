//! `/v1/memory`: long-term memory (list and filter, show, create, edit, pin, retire, delete,
//! evidence, search). Operator only: memory is the person's, whoever else holds a token.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use souz_protocol::{
    ErrorBody, MemoryEvidenceList, MemoryFact, MemoryFactList, MemoryFactPatch, MemoryModelInfo,
    MemoryQuery, MemorySearchRequest, MemorySearchResult, NewMemoryFact,
};

use crate::gateway::AppState;
use crate::gateway::api::{ApiRouter, Operation};
use crate::gateway::error::ApiError;
use crate::gateway::extract::{ApiJson, ApiQuery};
use crate::gateway::identity::Operator;
use crate::runtime::RuntimeHandle;
use crate::runtime::facade::MemoryOrigin;

pub(super) fn routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/memory")
                .summary("Remembered facts, most recently updated first, with filters and paging.")
                .tag("memory")
                .operator()
                .query::<MemoryQuery>()
                .response::<MemoryFactList>(200, "A page of facts.")
                .response::<ErrorBody>(400, "A bad filter."),
            list,
        )
        .route(
            Operation::post("/v1/memory")
                .summary("Remember a fact written by hand.")
                .description(
                    "Secrets are removed before it is stored. A fact holding the same canonical \
                     key in the scope is superseded (retired).",
                )
                .tag("memory")
                .operator()
                .request::<NewMemoryFact>()
                .response::<MemoryFact>(201, "Stored.")
                .response::<MemoryFact>(
                    200,
                    "An active fact of the scope already held this content: it is confirmed \
                     (this writing added as its evidence, a pin asked for kept) and comes back.",
                )
                .response::<ErrorBody>(400, "Empty or too long text, a bad scope or key."),
            create,
        )
        .route(
            Operation::get("/v1/memory/model")
                .summary("What searches memory by meaning, and where a local model is.")
                .description(
                    "A local model's download progress, readiness or failure, as the \
                     `memory.model.download.*` events tell it later: a page opened during a \
                     download starts from here.",
                )
                .tag("memory")
                .operator()
                .response::<MemoryModelInfo>(200, "The model and its state."),
            model,
        )
        .route(
            Operation::post("/v1/memory/search")
                .summary("Search memory with the recall `SearchMemory` uses, with scores.")
                .tag("memory")
                .operator()
                .request::<MemorySearchRequest>()
                .response::<MemorySearchResult>(200, "The facts found, best first.")
                .response::<ErrorBody>(400, "An empty query or a bad limit."),
            search,
        )
        .merge(fact_routes())
}

/// The routes of one fact.
fn fact_routes() -> ApiRouter<AppState> {
    ApiRouter::default()
        .route(
            Operation::get("/v1/memory/{id}")
                .summary("One fact.")
                .tag("memory")
                .operator()
                .response::<MemoryFact>(200, "The fact.")
                .response::<ErrorBody>(404, "No such fact."),
            show,
        )
        .route(
            Operation::patch("/v1/memory/{id}")
                .summary("Edit an active fact; a change of text, kind, key or scope re-embeds it.")
                .tag("memory")
                .operator()
                .request::<MemoryFactPatch>()
                .response::<MemoryFact>(200, "The fact as stored.")
                .response::<ErrorBody>(400, "Bad input, or the fact is retired.")
                .response::<ErrorBody>(404, "No such fact."),
            update,
        )
        .route(
            Operation::delete("/v1/memory/{id}")
                .summary("Delete a fact with its evidence; a tombstone keeps it from being captured again.")
                .tag("memory")
                .operator()
                .response::<MemoryFact>(200, "Deleted; the fact as it was.")
                .response::<ErrorBody>(404, "No such fact."),
            delete,
        )
        .route(
            Operation::post("/v1/memory/{id}/pin")
                .summary("Pin a fact: offered even without a strong match.")
                .tag("memory")
                .operator()
                .response::<MemoryFact>(200, "Pinned.")
                .response::<ErrorBody>(404, "No such fact."),
            pin,
        )
        .route(
            Operation::post("/v1/memory/{id}/unpin")
                .summary("Unpin a fact.")
                .tag("memory")
                .operator()
                .response::<MemoryFact>(200, "Unpinned.")
                .response::<ErrorBody>(404, "No such fact."),
            unpin,
        )
        .route(
            Operation::post("/v1/memory/{id}/retire")
                .summary("Retire a fact: kept for history, never recalled.")
                .tag("memory")
                .operator()
                .response::<MemoryFact>(200, "Retired.")
                .response::<ErrorBody>(404, "No such fact."),
            retire,
        )
        .route(
            Operation::get("/v1/memory/{id}/evidence")
                .summary("Where a fact came from: the message, turn, tool output or client.")
                .tag("memory")
                .operator()
                .response::<MemoryEvidenceList>(200, "Its evidence, oldest first.")
                .response::<ErrorBody>(404, "No such fact."),
            evidence,
        )
}

async fn list(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiQuery(query): ApiQuery<MemoryQuery>,
) -> Result<axum::Json<MemoryFactList>, ApiError> {
    Ok(axum::Json(handle.list_memory(query).await?))
}

async fn create(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(new): ApiJson<NewMemoryFact>,
) -> Result<(StatusCode, axum::Json<MemoryFact>), ApiError> {
    let (fact, created) = handle.create_memory_fact(new, MemoryOrigin::MANUAL).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(fact)))
}

async fn model(_: Operator, State(handle): State<RuntimeHandle>) -> axum::Json<MemoryModelInfo> {
    axum::Json(handle.memory_model())
}

async fn search(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    ApiJson(request): ApiJson<MemorySearchRequest>,
) -> Result<axum::Json<MemorySearchResult>, ApiError> {
    Ok(axum::Json(handle.search_memory(request).await?))
}

async fn show(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.show_memory_fact(&id).await?))
}

async fn update(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<MemoryFactPatch>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.update_memory_fact(&id, patch).await?))
}

async fn delete(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.delete_memory_fact(&id).await?))
}

async fn pin(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.set_memory_pinned(&id, true).await?))
}

async fn unpin(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.set_memory_pinned(&id, false).await?))
}

async fn retire(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryFact>, ApiError> {
    Ok(axum::Json(handle.retire_memory_fact(&id).await?))
}

async fn evidence(
    _: Operator,
    State(handle): State<RuntimeHandle>,
    Path(id): Path<String>,
) -> Result<axum::Json<MemoryEvidenceList>, ApiError> {
    Ok(axum::Json(handle.memory_evidence(&id).await?))
}
