//! The interaction page at `/auth/interact/{id}/{nonce}`: the resource owner's browser lands here from the
//! client. It describes the request in plain words. When the grant's wallet has an owner passphrase and
//! `[consent] decide` lets the owner decide, the page asks the owner to sign in (a password field in a plain
//! HTML form), then shows Approve and Reject; otherwise it waits (reloading itself) while the operator decides
//! in the console, the admin API or the CLI. Once decided it sends the browser on to the client's finish URI
//! (303, with `hash` and `interact_ref`, or `result=grant_rejected`). No JavaScript; a Content-Security-Policy
//! that allows nothing but the page's own style (by its hash); the session is an HttpOnly, SameSite=Strict
//! cookie scoped to this page's path; every form carries the session's CSRF token; client text is escaped.

use axum::{
    Extension, Form,
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Redirect, Response},
};

use crate::{
    gnap::{
        describe::Fact,
        error::Fault,
        service::{COOKIE, InteractionOutcome, InteractionView, OwnerStep, Refusal},
        timeline::{Actor, Cause},
    },
    server::{
        AppState,
        request_log::{RequestId, forms::ConsentForm},
    },
    states::GrantState,
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

/// The page's one style sheet; the Content-Security-Policy allows it by its hash and nothing else.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;\
line-height:1.5}.status{padding:.75rem 1rem;border-left:4px solid #888;background:#f4f4f4}\
.notice{padding:.75rem 1rem;border-left:4px solid #b00;background:#fbeaea}\
form{margin:1rem 0}input{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}\
button{font-size:1rem;padding:.5rem 1.25rem;margin:.5rem .5rem 0 0}\
dl.facts{margin:1rem 0}dl.facts dt{font-weight:600;margin-top:.75rem}dl.facts dd{margin:0;overflow-wrap:anywhere}\
small{display:block;color:#555;font-size:.8rem;overflow-wrap:anywhere}details{margin:1rem 0;color:#333}\
details li{overflow-wrap:anywhere}";

/// The policy of a page whose one style sheet is `style` (`default-src 'none'` with the style's hash: no
/// scripts, frames, images or fonts; forms post to the page itself). The workshop's pages use it too.
pub fn policy_for(style: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(style.as_bytes()));
    format!("default-src 'none'; style-src 'sha256-{hash}'; base-uri 'none'; frame-ancestors 'none'")
}

/// What approving means ([`Fact`]s) as a definition list, each URL small under its words.
fn facts(summary: &[Fact]) -> String {
    if summary.is_empty() {
        return String::new();
    }
    let items: String = summary
        .iter()
        .map(|f| {
            let url = f
                .url
                .as_deref()
                .map(|u| format!("<small>{}</small>", escape(u)))
                .unwrap_or_default();
            format!("<dt>{}</dt><dd>{}{url}</dd>", escape(&f.label), escape(&f.text))
        })
        .collect();
    format!("<dl class=\"facts\">{items}</dl>")
}

/// A whole page: `title`, what approving means (`summary`), the grant in words (`lines`, the first a heading
/// sentence; folded under the summary when there is one), a notice, the main part (`body`, HTML already
/// escaped), and a reload every two seconds while the operator decides (`refresh`).
fn render(title: &str, summary: &[Fact], lines: &[String], notice: Option<&str>, body: &str, refresh: bool) -> String {
    let items: String = lines
        .iter()
        .skip(1)
        .map(|l| format!("<li>{}</li>", escape(l.trim_start_matches("  - "))))
        .collect();
    let head = lines.first().map(|l| escape(l)).unwrap_or_default();
    let detail = match (summary.is_empty(), lines.is_empty()) {
        (_, true) => String::new(),
        (true, false) => format!("<p>{head}</p><ul>{items}</ul>"),
        (false, false) => {
            format!("<details><summary>The request in detail</summary><p>{head}</p><ul>{items}</ul></details>")
        }
    };
    let notice = notice
        .map(|n| format!("<p class=\"notice\" role=\"alert\">{}</p>", escape(n)))
        .unwrap_or_default();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{}<title>{}</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head>\
         <body><h1>{}</h1>{}{detail}{notice}{body}</body></html>",
        if refresh {
            "<meta http-equiv=\"refresh\" content=\"2\">"
        } else {
            ""
        },
        escape(title),
        escape(title),
        facts(summary),
    )
}

fn status_line(text: &str) -> String {
    format!("<p class=\"status\">{}</p>", escape(text))
}

/// The sign-in form: the owner's passphrase.
fn sign_in_form(wallet: &str, csrf: &str) -> String {
    format!(
        "<form method=\"post\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <p><label for=\"passphrase\">To decide, sign in as the owner of <strong>{}</strong> with your \
         passphrase:</label></p>\
         <input type=\"password\" id=\"passphrase\" name=\"passphrase\" autocomplete=\"current-password\" \
         required autofocus><button type=\"submit\">Sign in</button></form>",
        escape(csrf),
        escape(wallet)
    )
}

/// The decision: Approve or Reject.
fn decision_form(wallet: &str, csrf: &str) -> String {
    format!(
        "<p>Signed in as the owner of <strong>{}</strong>. Do you allow this?</p>\
         <form method=\"post\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
         <button type=\"submit\" name=\"decision\" value=\"reject\">Reject</button></form>",
        escape(wallet),
        escape(csrf)
    )
}

/// The page's security headers: nothing cached, no referrer, no framing, the CSP.
fn guarded(res: Response) -> Response {
    guard(res, STYLE)
}

/// A page's security headers when its one style sheet is `style`: nothing cached, no referrer, no framing,
/// the CSP of [`policy_for`].
pub fn guard(mut res: Response, style: &str) -> Response {
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&policy_for(style)) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    res
}

/// The session cookie for page `path`: HttpOnly, SameSite=Strict, only this page's path, `Secure` over TLS.
fn cookie(state: &AppState, path: &str, token: &str) -> Option<HeaderValue> {
    let secure = if state.settings.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    HeaderValue::from_str(&format!(
        "{COOKIE}={token}; Path={path}; HttpOnly; SameSite=Strict; Max-Age=900{secure}"
    ))
    .ok()
}

/// The session token the browser sent, if any.
fn session_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_owned())
}

const TITLE: &str = "Payment access request";

/// How a decided grant came out, in words.
fn decided_words(state: GrantState) -> &'static str {
    match state {
        GrantState::Finalized => GrantState::Approved.as_str(),
        GrantState::Expired => "it expired",
        GrantState::Revoked => "approved, then revoked",
        GrantState::Pending => "not yet",
        s => s.as_str(),
    }
}

fn unknown() -> Response {
    let body = status_line("This link is not valid. Return to the application you came from.");
    guarded(
        (
            StatusCode::NOT_FOUND,
            Html(render("Unknown request", &[], &[], None, &body, false)),
        )
            .into_response(),
    )
}

/// The page for `view` with the owner's part `step`, answered with `status` and `notice`.
fn page(view: InteractionView, step: &OwnerStep, status: StatusCode, notice: Option<&str>) -> Response {
    let html = |body: String, refresh: bool| {
        (
            status,
            Html(render(TITLE, &view.summary, &view.description, notice, &body, refresh)),
        )
            .into_response()
    };
    let res = match (&view.outcome, step) {
        (InteractionOutcome::Redirect(url), _) => Redirect::to(url).into_response(),
        (InteractionOutcome::Pending { .. }, OwnerStep::SignIn { wallet, csrf }) => {
            html(sign_in_form(wallet, csrf), false)
        }
        (InteractionOutcome::Pending { .. }, OwnerStep::Decide { wallet, csrf }) => {
            html(decision_form(wallet, csrf), false)
        }
        (InteractionOutcome::Pending { expires_at }, OwnerStep::None) => html(
            status_line(&format!(
                "Waiting for the account holder to approve or reject this request in opdesk (grant {}). \
                 This page updates by itself; the request expires at {}.",
                view.grant_id,
                crate::clock::format_ts(*expires_at)
            )),
            true,
        ),
        (InteractionOutcome::Approved, _) => html(status_line("Approved. You can return to the application."), false),
        (InteractionOutcome::Rejected { reason }, _) => html(
            status_line(&match reason {
                Some(r) => format!("Rejected: {r}"),
                None => "Rejected.".to_owned(),
            }),
            false,
        ),
        (InteractionOutcome::Expired, _) => html(status_line("This request expired before a decision."), false),
        (InteractionOutcome::Cancelled, _) => html(status_line("This request was cancelled."), false),
        (InteractionOutcome::AlreadyDecided(state), _) => html(
            status_line(&format!(
                "This request was already decided ({}). Nothing more happens here: return to the application \
                 you came from.",
                decided_words(*state)
            )),
            false,
        ),
    };
    guarded(res)
}

/// `GET`: the page as it is for this browser (a session opened for it when the owner may decide).
pub async fn page_handler(
    state: &AppState,
    id: &str,
    nonce: &str,
    headers: &HeaderMap,
    request_id: Option<String>,
) -> Response {
    show(state, id, nonce, headers, request_id, StatusCode::OK, None).await
}

async fn show(
    state: &AppState,
    id: &str,
    nonce: &str,
    headers: &HeaderMap,
    request_id: Option<String>,
    status: StatusCode,
    notice: Option<&str>,
) -> Response {
    let cause = Cause::new(Actor::Browser, request_id);
    let token = session_token(headers);
    match state.gnap.owner_page(id, nonce, token.as_deref(), cause).await {
        Ok(p) => {
            let mut res = page(p.view, &p.step, status, notice);
            let path = format!("/auth/interact/{id}/{nonce}");
            if let Some(c) = p.set_cookie.and_then(|t| cookie(state, &path, &t)) {
                res.headers_mut().insert(header::SET_COOKIE, c);
            }
            res
        }
        Err(e) if e.fault == Fault::Unknown => unknown(),
        Err(e) => e.into_response(),
    }
}

pub async fn get_page(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path((id, nonce)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    page_handler(&state, &id, &nonce, &headers, rid.map(|Extension(r)| r.id)).await
}

/// `POST`: the owner signs in (then sees the page again, signed in: post, redirect, get) or decides (then
/// goes on to the client, 303).
pub async fn post_page(
    State(state): State<AppState>,
    rid: Option<Extension<RequestId>>,
    Path((id, nonce)): Path<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<ConsentForm>,
) -> Response {
    let request_id = rid.map(|Extension(r)| r.id);
    let token = session_token(&headers);
    let refused = |r: Refusal| match r {
        Refusal::WrongPassphrase | Refusal::NotSignedIn => StatusCode::UNAUTHORIZED,
        Refusal::TooMany => StatusCode::TOO_MANY_REQUESTS,
        Refusal::BadForm => StatusCode::FORBIDDEN,
    };
    let outcome = match (&form.decision, &form.passphrase) {
        (Some(d), _) => {
            let approve = match d.as_str() {
                "approve" => true,
                "reject" => false,
                _ => return guarded((StatusCode::BAD_REQUEST, "decision is approve or reject").into_response()),
            };
            let cause = Cause::new(Actor::Browser, request_id.clone());
            match state
                .gnap
                .owner_decide(&id, &nonce, token.as_deref(), &form.csrf, approve, cause)
                .await
            {
                Ok(Ok(view)) => return page(view, &OwnerStep::None, StatusCode::OK, None),
                Ok(Err(r)) => Err(r),
                Err(e) => Ok(Err(e)),
            }
        }
        (None, Some(p)) => match state
            .gnap
            .owner_sign_in(&id, &nonce, token.as_deref(), &form.csrf, p)
            .await
        {
            Ok(Ok(new)) => Ok(Ok(new)),
            Ok(Err(r)) => Err(r),
            Err(e) => Ok(Err(e)),
        },
        (None, None) => Err(Refusal::BadForm),
    };
    match outcome {
        Ok(Ok(new_token)) => {
            let path = format!("/auth/interact/{id}/{nonce}");
            let mut res = guarded(Redirect::to(&path).into_response());
            if let Some(c) = cookie(&state, &path, &new_token) {
                res.headers_mut().insert(header::SET_COOKIE, c);
            }
            res
        }
        Ok(Err(e)) if e.fault == Fault::Unknown => unknown(),
        Ok(Err(e)) => e.into_response(),
        Err(r) => show(&state, &id, &nonce, &headers, request_id, refused(r), Some(r.words())).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<script>\"&'"), "&lt;script&gt;&quot;&amp;&#39;");
    }

    #[test]
    fn forms_escape_what_they_show_and_carry_the_csrf_token() {
        let f = sign_in_form("<b>alice</b>", "t\"ok");
        assert!(
            f.contains("&lt;b&gt;alice&lt;/b&gt;") && f.contains("value=\"t&quot;ok\""),
            "{f}"
        );
        assert!(f.contains("type=\"password\" id=\"passphrase\" name=\"passphrase\""));
        let d = decision_form("alice", "tok");
        assert!(d.contains("name=\"decision\" value=\"approve\"") && d.contains("name=\"decision\" value=\"reject\""));
        assert!(d.contains("name=\"csrf\" value=\"tok\""));
    }

    #[test]
    fn the_policy_allows_the_style_by_its_hash_only() {
        let p = policy_for(STYLE);
        assert!(p.starts_with("default-src 'none'; style-src 'sha256-"), "{p}");
        assert!(!p.contains("unsafe"), "{p}");
    }

    #[test]
    fn the_session_cookie_is_read_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_static("a=1; opdesk_consent=tok; b=2"));
        assert_eq!(session_token(&h).as_deref(), Some("tok"));
        assert_eq!(session_token(&HeaderMap::new()), None);
    }
}
