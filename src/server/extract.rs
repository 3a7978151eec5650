//! JSON in and out of the routers. [`Json`] extracts like axum's, with its rejections rendered as the
//! `invalid_request` envelope (400 for syntax, shape and content-type problems; 413 for oversize bodies), and
//! answers with the value serialized into one buffer that becomes the body as it is.

use axum::{
    extract::{FromRequest, Request, rejection::JsonRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::{Serialize, de::DeserializeOwned};

use super::error::ApiError;

/// A JSON request body whose rejections use the error envelope, or a JSON response.
pub struct Json<T>(pub T);

/// The response buffer's first size: most resources fit; a list page grows it a few times.
const RESPONSE_CAPACITY: usize = 1024;

impl<T: Serialize> IntoResponse for Json<T> {
    /// axum's own writes token by token through a `BytesMut` writer that starts at 128 bytes: a list page
    /// of twenty payments spent ~5 % of its CPU there. A `Vec` grown a few times and handed over is cheaper.
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(RESPONSE_CAPACITY);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                body,
            )
                .into_response(),
            Err(e) => ApiError::internal(&e).into_response(),
        }
    }
}

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
