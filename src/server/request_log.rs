//! Middleware that logs every request for the operator: method, path, status, latency, the signing client
//! and the signature verdict (noted by the signature checks through [`Notes`]). It never alters what the
//! handler sees or what the client receives.
//!
//! Watching is free: consoles are told what was served a few times a second, coalesced
//! ([`DomainEvent::RequestsServed`], published by [`publish_updates`]), and pull a page of the ring or one
//! request's exchange when they show it. Headers and bodies are kept only while someone watches the log — a
//! console follows the event stream, a page of the ring was read in the last [`WATCH`], or a reader of
//! `GET /admin/events?live=true` listens — and then as the raw pieces (shared, not copied), masked and
//! formatted only when someone opens the request. Only a `live=true` reader gets an `HttpRequest` event per
//! request, its exchange and signature report built for it.
//!
//! What it keeps of a body depends on the route that reads it ([`BodyRule`]), never on how the bytes look:
//! the interaction page's forms only as their own extractor reads them, secrets masked ([`forms`]); the
//! GNAP and workshop routes, which carry tokens and keys, only as JSON with its secrets masked; a body such a
//! route cannot read is withheld.
//!
//! It keeps the last requests in a bounded ring ([`RequestLog`], `server.request_log_size`) for
//! `GET /admin/requests`: cheap raw pieces only (a signed request's method, target, headers and body are
//! reference-counted or cloned once); the signature debugger's report is built from them when asked for.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, Method, Uri},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde_json::Value;

pub mod forms;

use super::{
    AppState,
    error::{ApiError, OperatorDetail},
};
use crate::{
    events::{
        DomainEvent, EventBus, Exchange,
        requests::{REFUSED_PER_UPDATE, RequestDetail, RequestSummary, SignatureReport},
    },
    httpsig::{self, KeyOutcome, Policy},
};

/// How long reading a page of the log keeps exchanges captured: a console's Requests pane reads one at least
/// every two seconds while in view.
pub const WATCH: Duration = Duration::from_secs(5);

/// How often what was served is told ([`DomainEvent::RequestsServed`]), at most.
pub const UPDATE_EVERY: Duration = Duration::from_millis(100);

/// What the signature checks learned about a request: the client, the verdict and, for the operator only,
/// why the client's keys could not be had.
#[derive(Debug, Clone, Default)]
pub struct Notes(Arc<Mutex<NotesInner>>);

#[derive(Debug, Default)]
struct NotesInner {
    client: Option<String>,
    verdict: Option<String>,
    detail: Option<String>,
    signed: Option<Arc<SignedPieces>>,
    key: Option<KeyOutcome>,
}

/// A signed request as the signature checks saw it: enough to explain its signature later.
#[derive(Debug, Clone)]
pub struct SignedPieces {
    pub method: Method,
    pub target_uri: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The server clock the policy was checked against (unix seconds).
    pub now_unix: i64,
    pub policy: Policy,
}

impl SignedPieces {
    /// The signature debugger's report, checked with `key` (what the verifier found), its credential masked.
    pub fn report(&self, key: &KeyOutcome) -> SignatureReport {
        let req = httpsig::Request {
            method: &self.method,
            target_uri: &self.target_uri,
            headers: &self.headers,
            body: &self.body,
        };
        httpsig::explain(&req, self.now_unix, &self.policy, key).masked()
    }
}

impl Notes {
    pub fn client(&self, client: &str) {
        if let Ok(mut n) = self.0.lock() {
            n.client = Some(client.to_owned());
        }
    }

    pub fn verdict(&self, verdict: impl Into<String>) {
        if let Ok(mut n) = self.0.lock() {
            n.verdict = Some(verdict.into());
        }
    }

    /// Operator-only detail, shown after the verdict.
    pub fn detail(&self, detail: impl Into<String>) {
        if let Ok(mut n) = self.0.lock() {
            n.detail = Some(detail.into());
        }
    }

    /// The signed request as the signature checks saw it.
    pub fn signed(&self, pieces: SignedPieces) {
        if let Ok(mut n) = self.0.lock() {
            n.signed = Some(Arc::new(pieces));
        }
    }

    /// The key the signature was checked with, or why there was none.
    pub fn key(&self, key: KeyOutcome) {
        if let Ok(mut n) = self.0.lock() {
            n.key = Some(key);
        }
    }

    /// The verdict's class for the metrics: `ok`, `refused`, or `None` when no signature was checked.
    pub fn verdict_class(&self) -> Option<&'static str> {
        let n = self.0.lock().ok()?;
        n.verdict.as_deref().map(|v| if v == "ok" { "ok" } else { "refused" })
    }

    /// The client, the verdict (with the detail, if any), and the signed request with its key.
    fn take(&self) -> Taken {
        let n = self.0.lock().map(|mut n| std::mem::take(&mut *n)).unwrap_or_default();
        let verdict = match (n.verdict, n.detail) {
            (Some(v), Some(d)) => Some(format!("{v} ({d})")),
            (v, _) => v,
        };
        Taken {
            client: n.client,
            verdict,
            signed: n.signed.map(|pieces| (pieces, n.key.unwrap_or(KeyOutcome::NotChecked))),
        }
    }
}

struct Taken {
    client: Option<String>,
    verdict: Option<String>,
    signed: Option<(Arc<SignedPieces>, KeyOutcome)>,
}

/// One request in the ring.
#[derive(Debug, Clone)]
struct Entry {
    summary: RequestSummary,
    signed: Option<(Arc<SignedPieces>, KeyOutcome)>,
    exchange: Option<Arc<Captured>>,
}

/// A request's headers and bodies as they came and went, masked and formatted only when someone opens it.
#[derive(Debug)]
struct Captured {
    rule: BodyRule,
    target: Uri,
    request_headers: HeaderMap,
    request_body: Kept,
    response_headers: HeaderMap,
    response_body: Bytes,
    detail: Option<String>,
}

/// A request body as captured: its bytes, or (the interaction page's form, which only its extractor may
/// read) the text already masked.
#[derive(Debug)]
enum Kept {
    Raw(Bytes),
    Text(String),
}

impl Captured {
    /// The exchange as the log shows it: headers and bodies with their secrets masked.
    fn exchange(&self) -> Exchange {
        Exchange {
            target: self.target.to_string(),
            request_headers: headers(&self.request_headers),
            request_body: match &self.request_body {
                Kept::Raw(b) => self.rule.request_text(b),
                Kept::Text(t) => t.clone(),
            },
            response_headers: headers(&self.response_headers),
            response_body: self.rule.response(&self.response_body),
            detail: self.detail.clone(),
            signature_report: None,
        }
    }
}

/// The last requests served (not the admin API's own), newest first, at most `capacity` of them, and what was
/// served since consoles were last told.
#[derive(Debug)]
pub struct RequestLog {
    capacity: usize,
    inner: Mutex<Inner>,
    /// Until when (milliseconds after `epoch`) someone watches the log: exchanges are captured till then.
    watched_until: AtomicU64,
    epoch: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    entries: VecDeque<Entry>,
    /// Requests served in all.
    total: u64,
    /// Since the last update: arrivals per second, and the refused requests (the newest kept).
    arrivals: Vec<(i64, u32)>,
    refused: VecDeque<RequestSummary>,
}

impl RequestLog {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner {
                entries: VecDeque::with_capacity(capacity.min(1024)),
                ..Inner::default()
            }),
            watched_until: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether someone read a page of the log in the last [`WATCH`].
    fn watched(&self) -> bool {
        self.watched_until.load(Ordering::Relaxed) > self.now_ms()
    }

    /// What was served since the last update, if anything (and forgets it).
    fn update(&self) -> Option<DomainEvent> {
        let mut inner = self.inner.lock().ok()?;
        if inner.arrivals.is_empty() {
            return None;
        }
        let arrivals = std::mem::take(&mut inner.arrivals);
        let mut refused: Vec<RequestSummary> = std::mem::take(&mut inner.refused).into();
        refused.sort_by_key(|r| std::cmp::Reverse(r.received_at));
        Some(DomainEvent::RequestsServed {
            total: inner.total,
            arrivals,
            refused,
        })
    }

    fn push(&self, entry: Entry) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.total += 1;
        let second = entry.summary.received_at.unix_timestamp();
        match inner.arrivals.iter_mut().rev().find(|(s, _)| *s == second) {
            Some((_, n)) => *n = n.saturating_add(1),
            None => {
                let at = inner.arrivals.partition_point(|(s, _)| *s < second);
                inner.arrivals.insert(at, (second, 1));
            }
        }
        if entry.summary.status >= 400 {
            if inner.refused.len() >= REFUSED_PER_UPDATE {
                inner.refused.pop_front();
            }
            inner.refused.push_back(entry.summary.clone());
        }
        if self.capacity == 0 {
            return;
        }
        {
            let e = &mut inner.entries;
            if e.len() >= self.capacity {
                e.pop_back();
            }
            // newest first by arrival: a request that finished before one that arrived earlier goes after it
            let at = e
                .iter()
                .position(|x| x.summary.received_at < entry.summary.received_at)
                .unwrap_or(e.len());
            e.insert(at, entry);
        }
    }

    /// Up to `limit` requests, newest first, after the one with id `cursor` (from the newest without one),
    /// and the cursor of the next page. Someone watches: exchanges are captured for the next [`WATCH`].
    pub fn list(&self, cursor: Option<&str>, limit: usize) -> (Vec<RequestSummary>, Option<String>) {
        let until = self
            .now_ms()
            .saturating_add(u64::try_from(WATCH.as_millis()).unwrap_or(u64::MAX));
        self.watched_until.fetch_max(until, Ordering::Relaxed);
        let Ok(inner) = self.inner.lock() else {
            return (Vec::new(), None);
        };
        let e = &inner.entries;
        let start = match cursor {
            // Ids are time-ordered: a cursor that fell off the ring continues with what is older.
            Some(c) => e.iter().position(|x| x.summary.id.as_str() < c).unwrap_or(e.len()),
            None => 0,
        };
        let limit = limit.max(1);
        let items: Vec<RequestSummary> = e.iter().skip(start).take(limit).map(|x| x.summary.clone()).collect();
        let next = (start + items.len() < e.len())
            .then(|| items.last().map(|x| x.id.clone()))
            .flatten();
        (items, next)
    }

    /// A request's detail, its exchange and signature report built now.
    pub fn detail(&self, id: &str) -> Option<RequestDetail> {
        let entry = self
            .inner
            .lock()
            .ok()?
            .entries
            .iter()
            .find(|x| x.summary.id == id)
            .cloned()?;
        Some(RequestDetail {
            report: entry.signed.as_ref().map(|(pieces, key)| pieces.report(key)),
            summary: entry.summary,
            exchange: entry.exchange.map(|x| x.exchange()),
        })
    }
}

impl crate::control::RequestRing for RequestLog {
    fn page(&self, cursor: Option<&str>, limit: usize) -> (Vec<RequestSummary>, Option<String>) {
        self.list(cursor, limit)
    }

    fn detail(&self, id: &str) -> Option<RequestDetail> {
        RequestLog::detail(self, id)
    }
}

/// Tells `bus` what `log` served, every [`UPDATE_EVERY`] while requests are served, until `stop` or until
/// the log is gone.
pub async fn publish_updates(log: Weak<RequestLog>, bus: EventBus, stop: tokio_util::sync::CancellationToken) {
    let mut every = tokio::time::interval(UPDATE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let Some(log) = log.upgrade() else { return };
        if let Some(update) = log.update() {
            bus.publish(update);
        }
    }
}

/// Which request this is: its id (time-ordered, unique across restarts) and when it arrived. The middleware
/// puts it in the request's extensions before any handler runs, so a service can record which HTTP exchange
/// caused a step (a grant's timeline links to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId {
    pub id: String,
    /// Arrival time, microseconds, strictly increasing in arrival order.
    pub received_at: time::OffsetDateTime,
}

/// The last arrival time handed out, in microseconds since the epoch.
static LAST_ARRIVAL_US: AtomicI64 = AtomicI64::new(0);

/// Now, in microseconds, but later than every arrival before it: two requests that arrive within the same
/// microsecond (or while the wall clock steps back) still get distinct, ordered times.
fn arrival() -> time::OffsetDateTime {
    let now = time::OffsetDateTime::now_utc();
    let now_us = i64::try_from(now.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX);
    let prev = LAST_ARRIVAL_US
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| Some(now_us.max(last + 1)))
        .unwrap_or(now_us);
    let us = now_us.max(prev + 1);
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1_000).unwrap_or(now)
}

impl RequestId {
    fn arrived() -> Self {
        Self {
            id: crate::ids::new_id(),
            received_at: arrival(),
        }
    }
}

/// Header values shown masked: only the first characters of credentials.
fn headers(h: &HeaderMap) -> Vec<(String, String)> {
    h.iter()
        .map(|(k, v)| {
            let v = v.to_str().unwrap_or("(binary)");
            let masked = match k.as_str() {
                "location" => masked_location(v),
                name => masked_header(name, v).unwrap_or_else(|| v.to_owned()),
            };
            (k.as_str().to_owned(), masked)
        })
        .collect()
}

/// A credential header's value as the log shows it (`name` in lower case): the first characters of a token
/// or a signature, nothing of a cookie; `None` for a header that carries no credential.
fn masked_header(name: &str, v: &str) -> Option<String> {
    Some(match name {
        "authorization" => match v.split_once(' ') {
            Some((scheme, token)) => format!("{scheme} {}…", token.chars().take(6).collect::<String>()),
            None => "…".to_owned(),
        },
        "signature" => format!("{}…", v.chars().take(12).collect::<String>()),
        "cookie" | "set-cookie" => "…".to_owned(),
        _ => return None,
    })
}

/// What a masked secret reads as (here and in the CLI's incoming-payment output).
pub const MASKED: &str = "…(masked)";

/// What the log shows for a body its route takes secrets in and could not read.
pub const WITHHELD: &str = "(body withheld: this route takes secrets and could not read it)";

/// A redirect's target with its `interact_ref` masked (the interaction page's finish redirect).
fn masked_location(v: &str) -> String {
    let Some((head, query)) = v.split_once('?') else {
        return v.to_owned();
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let pairs = url::form_urlencoded::parse(query.as_bytes()).map(|(k, val)| {
        let val = if k == "interact_ref" { MASKED.into() } else { val };
        (k, val)
    });
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    match fragment {
        Some(f) => format!("{head}?{query}#{f}"),
        None => format!("{head}?{query}"),
    }
}

/// What the log may keep of a request's body, by the route that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyRule {
    /// The interaction page: its form as [`forms::ConsentForm`] reads it, secrets masked, else withheld; its
    /// HTML with the CSRF token masked.
    ConsentForm,
    /// GNAP and the workshop's signing helper (tokens, `interact_ref`, private keys): JSON with its secrets
    /// masked, else withheld.
    Secrets,
    /// The Open Payments resources: JSON with its secrets masked, other text as it came (cut at 2000
    /// characters).
    Open,
}

impl BodyRule {
    fn of(path: &str) -> Self {
        if path.starts_with("/auth/interact/") {
            Self::ConsentForm
        } else if path == "/auth" || path.starts_with("/auth/") || path.starts_with("/workshop/") {
            Self::Secrets
        } else {
            Self::Open
        }
    }

    /// The request body as the log keeps it.
    async fn request(self, parts: &axum::http::request::Parts, bytes: &Bytes) -> String {
        if bytes.is_empty() {
            return String::new();
        }
        match self {
            Self::ConsentForm => forms::ConsentForm::logged(parts, bytes)
                .await
                .unwrap_or_else(|| WITHHELD.to_owned()),
            Self::Secrets | Self::Open => self.request_text(bytes),
        }
    }

    /// The request body as the log keeps it, for the routes whose body needs no extractor to read.
    fn request_text(self, bytes: &Bytes) -> String {
        match self {
            _ if bytes.is_empty() => String::new(),
            Self::ConsentForm => WITHHELD.to_owned(),
            Self::Secrets => masked_json(bytes)
                .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
                .unwrap_or_else(|| WITHHELD.to_owned()),
            Self::Open => body_text(bytes),
        }
    }

    /// The response body as the log keeps it.
    fn response(self, bytes: &Bytes) -> String {
        match self {
            Self::ConsentForm => forms::masked_page(&body_text(bytes)),
            Self::Secrets | Self::Open => body_text(bytes),
        }
    }
}

/// Masks secrets inside JSON: access and continuation token values, shared secrets, private keys, owner
/// passphrases, and the credentials of a request's `headers` carried in a body.
fn mask(v: &mut Value, parent: &str) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                match (k.as_str(), &*child) {
                    ("value", Value::String(s)) if parent == "access_token" => {
                        *child = Value::String(format!("{}…", s.chars().take(6).collect::<String>()));
                    }
                    (
                        "sharedSecret" | "privateKeyPem" | "base64Key" | "interact_ref" | "passphrase" | "generated",
                        Value::String(_),
                    ) => {
                        *child = Value::String(MASKED.into());
                    }
                    // a request's headers inside a body (the workshop's signing helper gets the one it signs)
                    (name, Value::String(v)) if parent.eq_ignore_ascii_case("headers") => {
                        if let Some(masked) = masked_header(&name.to_ascii_lowercase(), v) {
                            *child = Value::String(masked);
                        }
                    }
                    _ => mask(child, k),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask(i, parent)),
        _ => {}
    }
}

/// A JSON body with its secrets masked as the request log shows them; `None` when it is not JSON.
pub fn masked_json(bytes: &[u8]) -> Option<Value> {
    let mut v = serde_json::from_slice::<Value>(bytes).ok()?;
    mask(&mut v, "");
    Some(v)
}

fn body_text(bytes: &Bytes) -> String {
    if bytes.is_empty() {
        return String::new();
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut v) => {
            mask(&mut v, "");
            serde_json::to_string_pretty(&v).unwrap_or_default()
        }
        Err(_) if is_form(bytes) => masked_form(bytes),
        Err(_) => {
            let text = String::from_utf8_lossy(bytes);
            let mut t: String = text.chars().take(2000).collect();
            if text.chars().count() > 2000 {
                t.push('…');
            }
            t
        }
    }
}

/// Whether `bytes` read as an HTML form's fields (`a=1&b=2`).
fn is_form(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes.contains(&b'=')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"=&%+-_.~*".contains(b))
}

/// A form's fields, the interaction page's passphrase and CSRF token masked.
fn masked_form(bytes: &[u8]) -> String {
    let pairs = url::form_urlencoded::parse(bytes).map(|(k, v)| {
        let v = if matches!(k.as_ref(), "passphrase" | "csrf") {
            MASKED.into()
        } else {
            v
        };
        (k, v)
    });
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

pub async fn emit(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let rid = RequestId::arrived();
    req.extensions_mut().insert(rid.clone());
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let notes = Notes::default();
    req.extensions_mut().insert(notes.clone());
    let operator = crate::events::is_operator_path(&path);
    // a reader of every request's event, or someone watching the log: keep the exchange
    let per_request = state.capture.load(Ordering::Relaxed) > 0;
    let watched = state.consoles.load(Ordering::Relaxed) > 0 || state.request_log.watched();
    let capture = !operator && (per_request || watched);
    let (res, captured) = if capture {
        match run_captured(&state, &path, req, next).await {
            Ok(done) => done,
            Err(refused) => return refused,
        }
    } else {
        (next.run(req).await, None)
    };
    let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let status = res.status().as_u16();
    let Taken {
        client,
        verdict: signature,
        signed,
    } = notes.take();
    tracing::debug!(%method, %path, status, latency_us, "request");
    // only readers of every request get one event each, its exchange and signature report built for them
    let event = per_request.then(|| {
        let exchange = captured.as_ref().map(|c| {
            let mut x = c.exchange();
            x.signature_report = signed.as_ref().map(|(pieces, key)| pieces.report(key));
            Box::new(x)
        });
        DomainEvent::HttpRequest {
            id: rid.id.clone(),
            received_at: rid.received_at,
            method: method.clone(),
            path: path.clone(),
            status,
            latency_us,
            client: client.clone(),
            signature: signature.clone(),
            exchange,
        }
    });
    if !operator {
        state.request_log.push(Entry {
            summary: RequestSummary {
                id: rid.id,
                received_at: rid.received_at,
                method,
                path,
                status,
                latency_us,
                client,
                signature,
            },
            signed,
            exchange: captured.map(Arc::new),
        });
    }
    if let Some(event) = event {
        state.bus.publish(event);
    }
    res
}

/// Runs the request with its body and its response's buffered, and keeps both as they came; refuses a body
/// over the limit.
async fn run_captured(
    state: &AppState,
    path: &str,
    req: Request,
    next: Next,
) -> Result<(Response, Option<Captured>), Response> {
    let (parts, body) = req.into_parts();
    let limit = state.settings.server.body_limit_bytes;
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        if path.starts_with("/auth") {
            return Err(crate::gnap::GnapError::too_large().into_response());
        }
        return Err(ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "request body is too large",
        )
        .into_response());
    };
    let rule = BodyRule::of(path);
    let request_body = match rule {
        BodyRule::ConsentForm => Kept::Text(rule.request(&parts, &bytes).await),
        BodyRule::Secrets | BodyRule::Open => Kept::Raw(bytes.clone()),
    };
    let target = parts.uri.clone();
    let request_headers = parts.headers.clone();
    let res = next.run(Request::from_parts(parts, Body::from(bytes))).await;
    let (rparts, rbody) = res.into_parts();
    let rbytes = axum::body::to_bytes(rbody, 1 << 20).await.unwrap_or_default();
    let captured = Captured {
        rule,
        target,
        request_headers,
        request_body,
        response_headers: rparts.headers.clone(),
        response_body: rbytes.clone(),
        detail: rparts.extensions.get::<OperatorDetail>().map(|d| d.0.clone()),
    };
    Ok((Response::from_parts(rparts, Body::from(rbytes)), Some(captured)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_times_are_strictly_increasing_and_close_to_the_clock() {
        let before = time::OffsetDateTime::now_utc();
        let times: Vec<_> = (0..1000).map(|_| arrival()).collect();
        let after = time::OffsetDateTime::now_utc();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        assert!(times[0] >= before - time::Duration::milliseconds(1));
        assert!(times[999] <= after + time::Duration::milliseconds(2));
        let a = RequestId::arrived();
        let b = RequestId::arrived();
        assert!(a.received_at < b.received_at && a.id < b.id);
        assert_eq!(
            crate::clock::format_ts_micros(a.received_at).len(),
            "2026-11-21T10:00:00.123456Z".len()
        );
    }

    #[test]
    fn the_ring_keeps_the_newest_and_pages_through_them() {
        let log = RequestLog::new(3);
        let entry = |i: u32| Entry {
            summary: RequestSummary {
                id: format!("id-{i}"),
                received_at: crate::clock::ts(&format!("2026-11-25T10:00:0{i}.000000Z")),
                method: "GET".into(),
                path: format!("/{i}"),
                status: 200,
                latency_us: 1,
                client: None,
                signature: None,
            },
            signed: None,
            exchange: None,
        };
        // a request that finishes after one that arrived later is listed by its arrival
        let late = RequestLog::new(3);
        for i in [1, 3, 2] {
            late.push(entry(i));
        }
        let order: Vec<String> = late.list(None, 3).0.into_iter().map(|s| s.id).collect();
        assert_eq!(order, ["id-3", "id-2", "id-1"]);
        for i in 0..5 {
            log.push(entry(i));
        }
        let ids = |v: &[RequestSummary]| v.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        let (items, next) = log.list(None, 2);
        assert_eq!(ids(&items), ["id-4", "id-3"]);
        assert_eq!(next.as_deref(), Some("id-3"));
        let (items, next) = log.list(next.as_deref(), 2);
        assert_eq!(ids(&items), ["id-2"]);
        assert_eq!(next, None);
        // A cursor that fell off the ring continues with what is older.
        assert_eq!(ids(&log.list(Some("id-0"), 5).0), Vec::<String>::new());
        assert!(log.detail("id-1").is_none());
        let d = log.detail("id-4").expect("kept");
        assert_eq!((d.summary.path.as_str(), d.report.is_none()), ("/4", true));
        let none = RequestLog::new(0);
        none.push(log.inner.lock().expect("lock").entries[0].clone());
        assert!(none.list(None, 10).0.is_empty());
    }

    #[test]
    fn form_passphrases_are_masked() {
        let shown = body_text(&Bytes::from_static(b"csrf=abc&passphrase=correct+horse"));
        assert!(!shown.contains("correct") && !shown.contains("abc"), "{shown}");
        assert!(shown.contains("passphrase=") && shown.contains("masked"), "{shown}");
        let mut v = serde_json::json!({"command": "setOwnerPassphrase", "passphrase": {"action": "set", "passphrase": "s3cret pass"}});
        mask(&mut v, "");
        assert_eq!(v["passphrase"]["passphrase"], MASKED);
    }

    /// The workshop's signing helper gets the request it signs, with that request's GNAP token.
    #[test]
    fn a_request_to_sign_keeps_no_token_nor_key() {
        let body = serde_json::json!({"keyId": "k", "base64Key": "LS0tLS1CRUdJTi…", "request": {
            "url": "http://127.0.0.1:4000/incoming-payments", "method": "POST",
            "headers": {"Authorization": "GNAP 0123456789ABCDEF", "Content-Type": "application/json",
                        "signature": "sig1=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:"}}});
        let shown = masked_json(body.to_string().as_bytes()).expect("json");
        let headers = &shown["request"]["headers"];
        assert_eq!(headers["Authorization"], "GNAP 012345…");
        assert_eq!(headers["signature"], "sig1=:AAAAAA…");
        assert_eq!(headers["Content-Type"], "application/json");
        assert_eq!(shown["base64Key"], MASKED);
        assert!(!shown.to_string().contains("6789ABCDEF"), "{shown}");
    }

    #[tokio::test]
    async fn bodies_are_kept_by_the_route_that_reads_them() {
        for (path, rule) in [
            ("/auth/interact/g/n", BodyRule::ConsentForm),
            ("/auth", BodyRule::Secrets),
            ("/auth/continue/1", BodyRule::Secrets),
            ("/auth/token/1", BodyRule::Secrets),
            ("/workshop/sign", BodyRule::Secrets),
            ("/authority", BodyRule::Open),
            ("/alice/incoming-payments", BodyRule::Open),
        ] {
            assert_eq!(BodyRule::of(path), rule, "{path}");
        }
        let (parts, ()) = axum::http::Request::post("/auth/continue/1")
            .header("content-type", "application/json")
            .body(())
            .expect("request")
            .into_parts();
        let keep = |b: &'static [u8]| {
            let parts = &parts;
            async move { BodyRule::Secrets.request(parts, &Bytes::from_static(b)).await }
        };
        // Not JSON: withheld, whatever it looks like.
        for body in [&b"interact_ref=abc"[..], b"{\"interact_ref\": \"abc\"", b"\xff abc"] {
            assert_eq!(keep(body).await, WITHHELD);
        }
        let shown = keep(br#"{"interact_ref":"abc","base64Key":"a2V5"}"#).await;
        assert!(!shown.contains("abc") && !shown.contains("a2V5"), "{shown}");
        assert_eq!(keep(b"").await, "");
        // The consent form through its route's extractor; the open routes as before.
        let (parts, ()) = axum::http::Request::post("/auth/interact/g/n")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(())
            .expect("request")
            .into_parts();
        let shown = BodyRule::ConsentForm
            .request(&parts, &Bytes::from_static(b"csrf=t&passphrase=bob's secret! 42"))
            .await;
        assert!(!shown.contains("bob") && !shown.contains("csrf=t"), "{shown}");
        let shown = BodyRule::ConsentForm
            .request(
                &parts,
                &Bytes::from_static(b"csrf=t&decision=a&decision=b&passphrase=bob"),
            )
            .await;
        assert_eq!(shown, WITHHELD);
        assert_eq!(
            BodyRule::Open.request(&parts, &Bytes::from_static(b"plain")).await,
            "plain"
        );
    }

    #[test]
    fn a_finish_redirect_keeps_no_interact_ref() {
        assert_eq!(
            masked_location("https://c.example/done?state=s&hash=h1&interact_ref=r3f#top"),
            "https://c.example/done?state=s&hash=h1&interact_ref=%E2%80%A6%28masked%29#top"
        );
        assert_eq!(masked_location("/auth/interact/g/n"), "/auth/interact/g/n");
    }

    #[test]
    fn secrets_are_masked() {
        let mut v: Value = serde_json::json!({
            "access_token": {"value": "ABCDEFGHIJKLMNOP", "manage": "http://x/token/1"},
            "continue": {"access_token": {"value": "QRSTUVWXYZ"}, "uri": "u"},
            "methods": [{"type": "ilp", "sharedSecret": "c2VjcmV0"}]
        });
        mask(&mut v, "");
        assert_eq!(v["access_token"]["value"], "ABCDEF…");
        assert_eq!(v["continue"]["access_token"]["value"], "QRSTUV…");
        assert_eq!(v["methods"][0]["sharedSecret"], "…(masked)");
        assert_eq!(v["access_token"]["manage"], "http://x/token/1");
        let mut h = HeaderMap::new();
        h.insert("authorization", "GNAP 0123456789".parse().unwrap());
        assert_eq!(
            headers(&h),
            vec![("authorization".to_owned(), "GNAP 012345…".to_owned())]
        );
    }
}
