//! The bodies the server reads as HTML forms — the interaction page's sign-in and decision ([`ConsentForm`]) —
//! and how the request log may show them: only after the very extractor the handler uses has read the body,
//! with every secret field masked; a body that extractor refuses is not kept at all.
//!
//! The route and the request log share the type, so what the log masks is what the route reads, whatever
//! the bytes look like (spaces, quotes, `%`, non-ASCII, bytes that are not URL-encoded). It knows nothing of
//! the services or of the page's markup beyond its two secret input names.

use axum::{
    Form,
    body::{Body, Bytes},
    extract::{FromRequest, Request},
    http::request::Parts,
};
use serde::Deserialize;

use super::MASKED;

/// What the interaction page's forms post: the CSRF token, and a passphrase (signing in) or a decision.
#[derive(Debug, Deserialize)]
pub struct ConsentForm {
    #[serde(default)]
    pub csrf: String,
    pub passphrase: Option<String>,
    pub decision: Option<String>,
}

/// The names of the page's secret inputs, masked wherever the log shows the page or its forms.
pub const SECRET_INPUTS: [&str; 2] = ["csrf", "passphrase"];

impl ConsentForm {
    /// The form as the request log shows it: the fields the route reads, the CSRF token and the passphrase
    /// masked, the decision as posted.
    pub fn masked(&self) -> String {
        let mut out = url::form_urlencoded::Serializer::new(String::new());
        out.append_pair("csrf", MASKED);
        if self.passphrase.is_some() {
            out.append_pair("passphrase", MASKED);
        }
        if let Some(d) = &self.decision {
            out.append_pair("decision", d);
        }
        out.finish()
    }

    /// Reads `body` (sent with `parts`' method and headers) with the handler's own extractor and answers its
    /// masked text, or `None` when the extractor refuses it.
    pub async fn logged(parts: &Parts, body: &Bytes) -> Option<String> {
        let mut req = Request::new(Body::from(body.clone()));
        *req.method_mut() = parts.method.clone();
        *req.uri_mut() = parts.uri.clone();
        *req.headers_mut() = parts.headers.clone();
        let Form(form) = Form::<Self>::from_request(req, &()).await.ok()?;
        Some(form.masked())
    }
}

/// The interaction page's HTML with the value of every secret input masked (the CSRF token rides in each of
/// its forms).
pub fn masked_page(html: &str) -> String {
    let mut out = html.to_owned();
    for name in SECRET_INPUTS {
        let marker = format!("name=\"{name}\" value=\"");
        let mut from = 0;
        while let Some(at) = out[from..].find(&marker) {
            let start = from + at + marker.len();
            let end = out[start..].find('"').map_or(out.len(), |e| start + e);
            out.replace_range(start..end, MASKED);
            from = start + MASKED.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn logged(content_type: Option<&str>, body: &[u8]) -> Option<String> {
        let mut req = Request::post("/auth/interact/g/n");
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let (parts, ()) = req.body(()).expect("request").into_parts();
        ConsentForm::logged(&parts, &Bytes::copy_from_slice(body)).await
    }

    const FORM: Option<&str> = Some("application/x-www-form-urlencoded");

    #[tokio::test]
    async fn every_encoding_of_a_passphrase_is_masked() {
        let bodies: [&[u8]; 8] = [
            b"csrf=tok-1&passphrase=bob's secret! 42 zq",
            b"csrf=tok-1&passphrase=bob%27s+secret%21+42+zq",
            b"csrf=tok-1&passphrase=\"quoted\" secret",
            b"csrf=tok-1&passphrase=100% sure %zz %",
            "csrf=tok-1&passphrase=pässwörd ✓ секрет".as_bytes(),
            b"csrf=tok-1&passphrase=\xff\xfe raw \x80 bytes",
            b"csrf=tok-1&passphrase=x&pass%phrase=typo&other=stuff",
            b"csrf=tok-1&passphrase=",
        ];
        for body in bodies {
            let shown = logged(FORM, body).await.expect("the handler reads it");
            assert_eq!(
                shown,
                "csrf=%E2%80%A6%28masked%29&passphrase=%E2%80%A6%28masked%29",
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let shown = logged(FORM, b"csrf=tok-1&decision=approve").await.expect("decision");
        assert_eq!(shown, "csrf=%E2%80%A6%28masked%29&decision=approve");
    }

    #[tokio::test]
    async fn a_body_the_handler_refuses_is_not_kept() {
        for (ct, body) in [
            (None, b"csrf=tok-1&passphrase=secret".as_slice()),
            (Some("text/plain"), b"csrf=tok-1&passphrase=secret".as_slice()),
            (
                Some("application/json"),
                br#"{"csrf":"tok-1","passphrase":"secret"}"#.as_slice(),
            ),
            (FORM, b"csrf=tok-1&passphrase=secret&decision=a&decision=b".as_slice()),
            (FORM, b"passphrase=first&passphrase=second&csrf=tok-1".as_slice()),
            (FORM, b"csrf=tok-1&csrf=tok-2&passphrase=secret".as_slice()),
        ] {
            assert_eq!(logged(ct, body).await, None, "{ct:?}");
        }
    }

    #[test]
    fn the_page_shows_no_token() {
        let html = "<form><input type=\"hidden\" name=\"csrf\" value=\"T0K3N\"><input name=\"passphrase\" \
                    value=\"pw\"></form><form><input type=\"hidden\" name=\"csrf\" value=\"T0K3N\"></form>";
        let shown = masked_page(html);
        assert!(!shown.contains("T0K3N") && !shown.contains("pw\""), "{shown}");
        assert_eq!(shown.matches(MASKED).count(), 3, "{shown}");
        assert_eq!(
            masked_page("name=\"csrf\" value=\"unterminated"),
            format!("name=\"csrf\" value=\"{MASKED}")
        );
    }
}
