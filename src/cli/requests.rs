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

use super::{
    Backend, OneLine,
    print::{Columns, Human, emit},
};
use crate::{
    control::{Query, dto::RequestPage},
    egress::{self, Egress},
    events::requests::{RequestDetail, RequestSummary},
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
        RequestsCmd::List { cursor, limit } => Query::Requests(RequestPage { cursor, limit }),
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
                out.push_str(&r.text());
            }
            None => out.push_str("\nnot a signed request: nothing to explain\n"),
        }
        out
    }
}

/// `sig explain FILE [--jwks URL|FILE] [--now UNIX]`: exit 0 when the signature verifies (or only the
/// base was asked for), 1 with one `error:` line when it does not.
pub async fn explain(args: SigExplainArgs, json: bool) -> Result<()> {
    let raw =
        std::fs::read(&args.file).map_err(|e| OneLine::new(format!("cannot read {}: {e}", args.file.display())))?;
    let req = httpsig::raw::parse(&raw, &args.scheme)
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
        let mut t = report.text();
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
