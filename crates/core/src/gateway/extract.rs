//! Extractors whose rejections are [`ApiError`]s, so malformed input gets the error envelope.

use axum::extract::{FromRequest, FromRequestParts};

use super::error::ApiError;

/// `axum::Json` with the error envelope on rejection.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `axum::extract::Query` with the error envelope on rejection.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);
