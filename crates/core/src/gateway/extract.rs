//! Extractors whose rejections are [`ApiError`]s, so malformed input gets the error envelope.

use axum::extract::{FromRequest, FromRequestParts};

use super::error::ApiError;

/// `axum::Json` with the error envelope on rejection.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub(crate) struct ApiJson<T>(pub T);

/// `axum::extract::Query` with the error envelope on rejection.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub(crate) struct ApiQuery<T>(pub T);

/// The path's ids (chat, execution, option ids: UUIDs), in path order. An id that is not a
/// UUID is 400 `invalid_request` ("chatId must be a valid UUID.") before anything is looked
/// up (original §1.3); ids come back in their stored form (lower-case, hyphenated).
#[derive(Debug)]
pub(crate) struct UuidPath<const N: usize>(pub [String; N]);

impl<S: Send + Sync, const N: usize> FromRequestParts<S> for UuidPath<N> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(params) =
            axum::extract::Path::<Vec<(String, String)>>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| {
                    ApiError::invalid(format!("Invalid path: {}", rejection.body_text()))
                })?;
        let mut ids = Vec::with_capacity(params.len());
        for (name, value) in params {
            match uuid::Uuid::parse_str(value.trim()) {
                Ok(id) => ids.push(id.hyphenated().to_string()),
                Err(_) => return Err(ApiError::invalid(format!("{name} must be a valid UUID."))),
            }
        }
        let found = ids.len();
        ids.try_into().map(Self).map_err(|_| {
            ApiError::internal(&format!("a route with {N} ids has {found} path parameters"))
        })
    }
}
