//! The interaction page at `/auth/interact/{id}/{nonce}`: the resource owner's browser lands here from the
//! client. It describes the request in plain words and waits (reloading itself) while the operator decides in
//! the console, the admin API or the CLI; once decided it sends the browser on to the client's finish URI
//! (303, with `hash` and `interact_ref`, or `result=grant_rejected`). Nothing on the page approves anything.

use axum::{
    Extension,
    extract::{Path, State},
    http::{HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
};

use crate::{
    gnap::{
        error::Fault,
        service::InteractionOutcome,
        timeline::{Actor, Cause},
    },
    server::{AppState, request_log::RequestId},
};

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn render(title: &str, lines: &[String], status: &str, refresh: bool) -> String {
    let items: String = lines
        .iter()
        .skip(1)
        .map(|l| format!("<li>{}</li>", escape(l.trim_start_matches("  - "))))
        .collect();
    let head = lines.first().map(|l| escape(l)).unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{}<title>{}</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5}}\
         .status{{padding:.75rem 1rem;border-left:4px solid #888;background:#f4f4f4}}</style></head>\
         <body><h1>{}</h1><p>{head}</p><ul>{items}</ul><p class=\"status\">{}</p></body></html>",
        if refresh {
            "<meta http-equiv=\"refresh\" content=\"2\">"
        } else {
            ""
        },
        escape(title),
        escape(title),
        escape(status),
    )
}

fn no_store(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'"),
    );
    res
}

pub async fn page_handler(state: &AppState, id: &str, nonce: &str, request_id: Option<String>) -> Response {
    let cause = Cause::new(Actor::Browser, request_id);
    let view = match state.gnap.interaction(id, nonce, cause).await {
        Ok(v) => v,
        Err(e) if e.fault == Fault::Unknown => {
            let body = render(
                "Unknown request",
                &[],
                "This link is not valid. Return to the application you came from.",
                false,
            );
            return no_store((StatusCode::NOT_FOUND, Html(body)).into_response());
        }
        Err(e) => return e.into_response(),
    };
    let title = "Payment access request";
    let res = match view.outcome {
        InteractionOutcome::Redirect(url) => Redirect::to(&url).into_response(),
        InteractionOutcome::Pending { expires_at } => Html(render(
            title,
            &view.description,
            &format!(
                "Waiting for the account holder to approve or reject this request in opdesk (grant {}). \
                 This page updates by itself; the request expires at {}.",
                view.grant_id,
                crate::clock::format_ts(expires_at)
            ),
            true,
        ))
        .into_response(),
        InteractionOutcome::Approved => Html(render(
            title,
            &view.description,
            "Approved. You can return to the application.",
            false,
        ))
        .into_response(),
        InteractionOutcome::Rejected { reason } => Html(render(
            title,
            &view.description,
            &match reason {
                Some(r) => format!("Rejected: {r}"),
                None => "Rejected.".to_owned(),
            },
            false,
        ))
        .into_response(),
        InteractionOutcome::Expired => Html(render(
            title,
            &view.description,
            "This request expired before a decision.",
            false,
        ))
        .into_response(),
        InteractionOutcome::Cancelled => {
            Html(render(title, &view.description, "This request was cancelled.", false)).into_response()
        }
    };
    no_store(res)
}

pub async fn page(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path((id, nonce)): Path<(String, String)>,
) -> Response {
    page_handler(&state, &id, &nonce, rid.map(|Extension(r)| r.id)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<script>\"&'"), "&lt;script&gt;&quot;&amp;&#39;");
    }
}
