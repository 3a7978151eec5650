//! Extractors shared by the routers. [`Json`] is axum's JSON extractor with its rejections rendered as the
//! `invalid_request` envelope (400 for syntax, shape and content-type problems; 413 for oversize bodies).

use axum::{
    extract::{FromRequest, Request, rejection::JsonRejection},
    http::StatusCode,
};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body whose rejections use the error envelope.
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(json_rejection(&rejection)),
        }
    }
}

fn json_rejection(r: &JsonRejection) -> ApiError {
    let status = r.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(status, "payload_too_large", "request body is too large");
    }
    let detail = match r {
        JsonRejection::JsonDataError(e) => e.body_text(),
        JsonRejection::JsonSyntaxError(e) => e.body_text(),
        JsonRejection::MissingJsonContentType(_) => "expected Content-Type: application/json".into(),
        other => other.body_text(),
    };
    ApiError::bad_request("invalid_request", detail)
}
