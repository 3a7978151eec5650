//! The signature debugger on the command line: `requests list|show` (the running server's recent requests,
//! with a signed request's report) and `sig explain FILE` (a raw HTTP request a developer saved, explained
//! against a JWKS URL or file, no server needed). Prints only through [`super::print`].

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    time::Duration,
};

use clap::{Args, Subcommand};
use color_eyre::eyre::Result;
use http::{HeaderMap, HeaderName, HeaderValue, Method};

use super::{
    Backend, OneLine,
    print::{Columns, Human, emit},
};
use crate::{
    control::Query,
    egress::{self, Egress},
    events::requests::{RequestDetail, RequestSummary, SignatureReport},
    httpsig::{self, Jwks, KeyOutcome, Policy},
};

#[derive(Debug, Subcommand)]
pub enum RequestsCmd {
    /// List the server's recent requests, newest first.
    List {
        /// Continue after this request id (from the previous page).
        #[arg(long)]
        cursor: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Show one request: its summary and, when signed, the signature report (components, parameters, key,
    /// digest, the signature base the server built, the verdict and every reason).
    Show { id: String },
}

#[derive(Debug, Subcommand)]
pub enum SigCmd {
    /// Print the signature base and verdict of a raw HTTP/1.1 request saved from your client (request line,
    /// headers, blank line, body). Exit 0 when it verifies (or with no --jwks), 1 when it does not.
    Explain(SigExplainArgs),
}

#[derive(Debug, Args)]
pub struct SigExplainArgs {
    /// The saved request.
    pub file: PathBuf,
    /// Check the signature with the key named by `keyid` in this JWKS (an http(s) URL or a file).
    #[arg(long, value_name = "URL|FILE")]
    pub jwks: Option<String>,
    /// The time to check `created` against (unix seconds; default now).
    #[arg(long, value_name = "UNIX")]
    pub now: Option<i64>,
    /// The scheme of `@target-uri` for an origin-form request target (`/path` plus Host).
    #[arg(long, default_value = "https", value_parser = ["https", "http"])]
    pub scheme: String,
}

/// `requests list|show`: through the running server only, since the log lives in its memory.
pub(super) async fn requests(b: &Backend, cmd: RequestsCmd, json: bool) -> Result<()> {
    if b.is_offline() {
        return Err(OneLine::new(
            "the request log lives in the running server's memory, and no server holds this data dir",
        )
        .hint("start `opdesk serve` or the console, or give --connect")
        .into());
    }
    let query = match cmd {
        RequestsCmd::List { cursor, limit } => Query::Requests { cursor, limit },
        RequestsCmd::Show { id } => Query::Request { id },
    };
    b.show(query, json).await
}

impl Human for RequestSummary {
    const COLUMNS: Columns<Self> = &[
        ("ID", |r| r.id.clone()),
        ("AT", |r| crate::clock::format_ts_micros(r.received_at)),
        ("METHOD", |r| r.method.clone()),
        ("PATH", |r| r.path.clone()),
        ("STATUS", |r| r.status.to_string()),
        ("LATENCY", |r| format!("{:.1} ms", r.latency_us as f64 / 1000.0)),
        ("CLIENT", |r| r.client.clone().unwrap_or_default()),
        ("SIG", |r| r.signature.clone().unwrap_or_default()),
    ];
}

impl Human for RequestDetail {
    fn card(&self) -> String {
        let s = &self.summary;
        let mut out = format!("request {}\n", s.id);
        let _ = writeln!(out, "  {} {} → {}", s.method, s.path, s.status);
        let _ = writeln!(out, "  at         {}", crate::clock::format_ts_micros(s.received_at));
        let _ = writeln!(out, "  latency    {:.2} ms", s.latency_us as f64 / 1000.0);
        let _ = writeln!(out, "  client     {}", s.client.as_deref().unwrap_or("(unsigned)"));
        let _ = writeln!(out, "  signature  {}", s.signature.as_deref().unwrap_or("(none)"));
        match &self.report {
            Some(r) => {
                out.push('\n');
                out.push_str(&report_text(r));
            }
            None => out.push_str("\nnot a signed request: nothing to explain\n"),
        }
        out
    }
}

/// A report for people: Components, Parameters, Key, Digest, Signature base (verbatim), Verdict.
pub(super) fn report_text(r: &SignatureReport) -> String {
    let mut out = String::new();
    if let Some(label) = &r.label {
        let _ = writeln!(out, "Components (label {label})");
        for c in &r.components {
            let _ = writeln!(out, "  \"{c}\"");
        }
    }
    if let Some(form) = &r.form {
        let _ = writeln!(out, "Form\n  {form}");
    }
    if let Some(p) = &r.params {
        out.push_str("Parameters\n");
        let _ = writeln!(out, "  keyid    {}", p.keyid.as_deref().unwrap_or("(none)"));
        if let Some(alg) = &p.alg {
            let _ = writeln!(out, "  alg      {alg}");
        }
        match (p.created, p.created_age_secs) {
            (Some(c), Some(age)) => {
                let _ = writeln!(out, "  created  {c} ({age} s before arrival)");
            }
            _ => out.push_str("  created  (none)\n"),
        }
        if let Some(e) = p.expires {
            let _ = writeln!(out, "  expires  {e}");
        }
        if let Some(n) = &p.nonce {
            let _ = writeln!(out, "  nonce    {n}");
        }
        if let Some(t) = &p.tag {
            let _ = writeln!(out, "  tag      {t}");
        }
    }
    out.push_str("Key\n");
    match &r.key {
        None => out.push_str("  not checked\n"),
        Some(k) => {
            let verified = match k.verified {
                Some(true) => "verifies",
                Some(false) => "does not verify",
                None => "no usable key",
            };
            let of = k.client.as_deref().map(|c| format!(" of {c}")).unwrap_or_default();
            let _ = writeln!(out, "  kid {}{of}: {verified}", k.kid.as_deref().unwrap_or("(none)"));
            if let Some(src) = &k.source {
                let _ = writeln!(out, "  from {src}");
            }
            if let Some(t) = &k.thumbprint {
                let _ = writeln!(out, "  thumbprint {t}");
            }
        }
    }
    if let Some(d) = &r.digest {
        out.push_str("Digest\n");
        let _ = writeln!(out, "  sent      {}", d.sent.as_deref().unwrap_or("(none)"));
        let _ = writeln!(
            out,
            "  computed  {} over {} bytes: {}",
            d.computed,
            d.body_len,
            if d.matches { "matches" } else { "differs" }
        );
    }
    if let Some(base) = &r.base {
        out.push_str("Signature base\n");
        out.push_str(base);
        out.push('\n');
    }
    let _ = writeln!(out, "Verdict: {}", r.verdict.outcome.as_str());
    for reason in &r.verdict.reasons {
        let _ = writeln!(out, "  ✗ {reason}");
    }
    out
}

/// A raw HTTP/1.1 request: request line, headers, a blank line, the body (CRLF or LF line ends).
#[derive(Debug)]
pub(super) struct RawRequest {
    pub method: Method,
    pub target_uri: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Parses `raw`; an origin-form target gets `scheme://` plus the `Host` header.
pub(super) fn parse_raw(raw: &[u8], scheme: &str) -> Result<RawRequest, String> {
    let (head, body) = split_head(raw).ok_or("no blank line after the headers")?;
    let head = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(format!("not a request line: {request_line:?}"));
    };
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| format!("not a method: {method:?}"))?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("not a header line: {line:?}"));
        };
        let name =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("not a header name: {name:?}"))?;
        let value = HeaderValue::from_str(value.trim_matches([' ', '\t']))
            .map_err(|_| format!("header {name} has a value that cannot be sent"))?;
        headers.append(name, value);
    }
    let target_uri = if target.starts_with("http://") || target.starts_with("https://") {
        target.to_owned()
    } else {
        let host = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or("an origin-form target (/path) needs a Host header")?;
        format!("{scheme}://{host}{target}")
    };
    Ok(RawRequest {
        method,
        target_uri,
        headers,
        body: body.to_vec(),
    })
}

fn split_head(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    let crlf = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    let lf = raw.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let (i, n) = match (crlf, lf) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (a, b) => a.or(b)?,
    };
    Some((&raw[..i], &raw[i + n..]))
}

/// `sig explain FILE [--jwks URL|FILE] [--now UNIX]`: exit 0 when the signature verifies (or only the
/// base was asked for), 1 with one `error:` line when it does not.
pub async fn explain(args: SigExplainArgs, json: bool) -> Result<()> {
    let raw =
        std::fs::read(&args.file).map_err(|e| OneLine::new(format!("cannot read {}: {e}", args.file.display())))?;
    let req = parse_raw(&raw, &args.scheme)
        .map_err(|e| OneLine::new(format!("{} is not a raw HTTP request: {e}", args.file.display())))?;
    let now = args
        .now
        .unwrap_or_else(|| time::OffsetDateTime::now_utc().unix_timestamp());
    let key = match &args.jwks {
        None => KeyOutcome::NotChecked,
        Some(src) => {
            let jwks = load_jwks(src).await?;
            let kid = httpsig::parse_signature(&req.headers).ok().and_then(|s| s.keyid);
            match kid.as_deref().map(|k| (k, jwks.find(k))) {
                None => KeyOutcome::NotChecked,
                Some((_, None)) => KeyOutcome::Missing {
                    client: None,
                    source: src.clone(),
                },
                Some((kid, Some(jwk))) => match jwk.verifying_key() {
                    Ok(key) => KeyOutcome::Found {
                        client: None,
                        source: Some(src.clone()),
                        key,
                    },
                    Err(e) => KeyOutcome::Unavailable {
                        client: None,
                        reason: format!("key `{kid}` in {src} is unusable: {e}"),
                    },
                },
            }
        }
    };
    let report = httpsig::explain(
        &httpsig::Request {
            method: &req.method,
            target_uri: &req.target_uri,
            headers: &req.headers,
            body: &req.body,
        },
        now,
        &Policy::default(),
        &key,
    );
    emit(json, &report, || {
        let mut t = report_text(&report);
        if args.jwks.is_none() {
            t.push_str("  (the signature was not checked: give --jwks URL|FILE)\n");
        }
        t
    })?;
    match report.verdict.reasons.first() {
        Some(first) => Err(OneLine::new(format!("the signature is refused: {}", crate::text::sanitize(first))).into()),
        None => Ok(()),
    }
}

/// A key set from a URL (fetched with the outbound client) or a file.
async fn load_jwks(src: &str) -> Result<Jwks> {
    let text = if src.starts_with("http://") || src.starts_with("https://") {
        let client = Egress::new(egress::Policy::operator(Duration::from_secs(10), egress::JSON_BODY_CAP))
            .map_err(|e| OneLine::new(format!("cannot fetch {src}: {e}")))?;
        let reply = client
            .get_json(src)
            .await
            .map_err(|e| OneLine::new(format!("cannot fetch {src}: {e}")))?;
        if reply.status != 200 {
            return Err(OneLine::new(format!("cannot fetch {src}: HTTP {}", reply.status)).into());
        }
        reply.body
    } else {
        std::fs::read(Path::new(src)).map_err(|e| OneLine::new(format!("cannot read {src}: {e}")))?
    };
    serde_json::from_slice(&text).map_err(|e| OneLine::new(format!("{src} is not a JWKS: {e}")).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_requests_parse_with_crlf_or_lf() {
        let crlf = b"POST /foo?a=1 HTTP/1.1\r\nHost: example.com\r\nX-A:  b \r\n\r\nbody\r\n";
        let r = parse_raw(crlf, "https").expect("crlf");
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.target_uri, "https://example.com/foo?a=1");
        assert_eq!(r.headers["x-a"], "b");
        assert_eq!(r.body, b"body\r\n");
        let lf = b"GET http://h:8080/x HTTP/1.1\nHost: other\n\n";
        let r = parse_raw(lf, "https").expect("lf");
        assert_eq!(r.target_uri, "http://h:8080/x");
        assert!(r.body.is_empty());
        assert!(parse_raw(b"GET /x HTTP/1.1\n\n", "https").is_err());
        assert!(parse_raw(b"GET /x HTTP/1.1\nHost: h\n", "https").is_err());
        assert!(parse_raw(b"GET /x HTTP/1.1\nbad line\n\n", "https").is_err());
    }
}
