//! The GNAP service: the only writer of `grants` and `access_tokens`. Every operation is one `BEGIN IMMEDIATE`
//! transaction with state transitions guarded in SQL, so a token is issued exactly once however many continues
//! race, and events are published only after commit. Token values live only in responses; the store keeps
//! their SHA-256. Grant requests, continuation and the owner's decision are here; `tokens` holds rotation,
//! revocation and introspection, `views` what the operator and the interaction page see.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration as StdDuration, Instant},
};
use subtle::ConstantTimeEq as _;

use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use super::{
    GnapError, describe,
    error::Fault,
    model::{
        AccessItem, AccessTokenResponse, Client, ConsentPolicy, Continue, ContinueToken, GrantRequest, GrantResponse,
        InteractResponse, RotateResponse, Subject,
    },
    timeline::{Actor, Cause, StepKind},
};
use crate::{
    clock::SharedClock,
    events::{DomainEvent, EventBus},
    httpsig::{interaction_hash_std, jwk::Jwk},
    ids,
    settings::{ConsentSettings, GnapSettings},
    states::GrantState,
    store::{
        self, Store, grants as repo,
        notify::{self, Forget},
        outbox,
    },
    wallet::{Wallet, Wallets},
};

/// How long a token check is cached for the resource server (revocation and rotation clear it at once).
mod consent;
mod tokens;
mod views;

use tokens::TokenCache;

pub use consent::{COOKIE, OwnerPage, OwnerStep, Refusal};
pub use tokens::TokenInfo;
pub use views::{GrantView, InteractionOutcome, InteractionView, PublicNames, TokenView};

const TOKEN_CACHE_TTL: StdDuration = StdDuration::from_secs(5);

/// Refused continues are recorded while a grant has fewer steps than this (identical ones repeat one step).
const MAX_REFUSAL_STEPS: i64 = 200;

struct Inner {
    names: Option<PublicNames>,
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    wallets: Wallets,
    settings: GnapSettings,
    consent: ConsentSettings,
    public_url: String,
    token_cache: Arc<Mutex<TokenCache>>,
}

/// The authorization server service. Cheap to clone.
#[derive(Clone)]
pub struct Gnap {
    inner: Arc<Inner>,
}

/// A token value: 256 random bits.
fn secret() -> Result<String, GnapError> {
    ids::random_secret(32).map_err(|e| GnapError::internal(&e))
}

/// An identifier or nonce: 128 random bits.
fn nonce() -> Result<String, GnapError> {
    ids::random_secret(16).map_err(|e| GnapError::internal(&e))
}

fn client_to_row(c: &Client) -> Result<(Option<String>, Option<String>), GnapError> {
    match c {
        Client::Wallet(u) => Ok((Some(u.clone()), None)),
        Client::Jwk(j) => Ok((
            None,
            Some(serde_json::to_string(j).map_err(|e| GnapError::internal(&e))?),
        )),
    }
}

/// The client of a stored grant.
pub fn client_of(g: &repo::GrantRow) -> Result<Client, GnapError> {
    match (&g.client, &g.client_jwk) {
        (Some(u), _) => Ok(Client::Wallet(u.clone())),
        (None, Some(j)) => serde_json::from_str::<Jwk>(j)
            .map(Client::Jwk)
            .map_err(|e| GnapError::internal(&e)),
        (None, None) => Err(GnapError::fault("grant without client")),
    }
}

fn client_label(c: &Client) -> String {
    match c {
        Client::Wallet(u) => u.clone(),
        Client::Jwk(j) => format!("key {}", j.kid),
    }
}

fn access_of(g: &repo::GrantRow) -> Result<Vec<AccessItem>, GnapError> {
    serde_json::from_str(&g.access).map_err(|e| GnapError::internal(&e))
}

/// Appends a step to grant `grant_id`'s timeline, in the caller's transaction.
fn step(
    conn: &crate::store::Connection,
    grant_id: &str,
    at: OffsetDateTime,
    kind: StepKind,
    cause: &Cause,
    detail: &serde_json::Value,
) -> Result<(), GnapError> {
    let detail = detail.to_string();
    repo::insert_step(conn, grant_id, new_step(at, kind, cause, &detail))?;
    Ok(())
}

/// Like [`step`], but a repeat of the last step when that is of the same kind (polls, page reloads).
fn repeat_step(
    conn: &crate::store::Connection,
    grant_id: &str,
    at: OffsetDateTime,
    kind: StepKind,
    cause: &Cause,
    detail: &serde_json::Value,
) -> Result<(), GnapError> {
    let detail = detail.to_string();
    repo::repeat_step(conn, grant_id, new_step(at, kind, cause, &detail))?;
    Ok(())
}

fn new_step<'a>(at: OffsetDateTime, kind: StepKind, cause: &'a Cause, detail: &'a str) -> repo::NewStep<'a> {
    repo::NewStep {
        at,
        kind: kind.as_str(),
        actor: cause.actor.as_str(),
        request_id: cause.request_id.as_deref(),
        detail,
    }
}

/// Rejects a pending grant whose interaction window passed, noticed by `cause` (a poll or a decision), and
/// records the expiry on its timeline.
fn expire(
    conn: &crate::store::Connection,
    g: &repo::GrantRow,
    now: OffsetDateTime,
    cause: &Cause,
) -> Result<(), GnapError> {
    repo::decide(
        conn,
        &g.id,
        GrantState::Rejected,
        None,
        Some("interaction expired"),
        now,
    )?;
    let noticed = serde_json::json!({"noticedBy": cause.actor, "state": GrantState::Rejected});
    step(conn, &g.id, now, StepKind::Expired, cause, &noticed)?;
    Ok(())
}

/// What a token step says about the token (never its value).
fn token_detail(t: &repo::TokenRow) -> serde_json::Value {
    serde_json::json!({"tokenId": t.id, "hint": format!("{}…", t.value_hint), "expiresIn": t.expires_in})
}

impl Gnap {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        wallets: Wallets,
        settings: GnapSettings,
        consent: ConsentSettings,
        public_url: &str,
    ) -> Self {
        if settings.auto_approve {
            tracing::warn!(
                "gnap.auto_approve is ON: every interactive grant is approved without the resource owner. \
                 Use this only for demos and tests."
            );
        }
        let token_cache: Arc<Mutex<TokenCache>> = Arc::default();
        let told = token_cache.clone();
        store.coherence().on_forget(move |what| {
            let grant = match what {
                Forget::Grant(id) => Some(id.as_str()),
                Forget::All => None,
                Forget::Wallet(_) => return,
            };
            if let Ok(mut cache) = told.lock() {
                cache.forget(grant);
            }
        });
        Self {
            inner: Arc::new(Inner {
                names: None,
                store,
                bus,
                clock,
                wallets,
                settings,
                consent,
                public_url: crate::names::base_url(public_url),
                token_cache,
            }),
        }
    }

    /// Which `-all` actions need the resource owner's consent.
    pub fn consent_policy(&self) -> ConsentPolicy {
        ConsentPolicy {
            list_all: self.inner.settings.list_all_interaction,
            read_all: self.inner.settings.read_all_interaction,
        }
    }

    /// The grant endpoint (`authServer` of every wallet): `{public}/auth`.
    pub fn grant_endpoint(&self) -> String {
        format!("{}/auth", self.inner.public_url)
    }

    fn continue_uri(&self, continue_id: &str) -> String {
        format!("{}/auth/continue/{continue_id}", self.inner.public_url)
    }

    fn manage_uri(&self, manage_id: &str) -> String {
        format!("{}/auth/token/{manage_id}", self.inner.public_url)
    }

    fn now(&self) -> OffsetDateTime {
        self.inner.clock.now()
    }

    /// The local wallet a URL names, if it names one of ours.
    pub async fn local_wallet(&self, url: &str) -> Result<Option<Wallet>, GnapError> {
        self.inner
            .wallets
            .by_url(url)
            .await
            .map_err(|e| GnapError::internal(&e))
    }

    /// Checks identifiers, limits and subjects against this ASE's wallets.
    async fn check_local(&self, req: &GrantRequest) -> Result<(), GnapError> {
        for item in req.access_token.iter().flat_map(|a| a.access.iter()) {
            let Some(id) = item.identifier() else {
                continue;
            };
            let wallet = self.local_wallet(id).await?.ok_or_else(|| {
                GnapError::invalid_request(format!("identifier {id:?} is not a wallet address of this ASE"))
            })?;
            if let AccessItem::OutgoingPayment { limits: Some(l), .. } = item
                && let Some(d) = &l.debit_amount
                && (d.asset_code != wallet.asset_code || d.asset_scale != wallet.asset_scale)
            {
                return Err(GnapError::invalid_request(format!(
                    "limits.debitAmount must be in the wallet's asset {}/{}",
                    wallet.asset_code, wallet.asset_scale
                )));
            }
        }
        for sub in req.subject.iter().flat_map(|s| s.sub_ids.iter()) {
            if self.local_wallet(&sub.id).await?.is_none() {
                return Err(GnapError::invalid_request(format!(
                    "subject {:?} is not a wallet address of this ASE",
                    sub.id
                )));
            }
        }
        Ok(())
    }

    fn check_finish_uri(&self, uri: &str) -> Result<(), GnapError> {
        let u = super::model::check_uri("interact.finish.uri", uri)?;
        if u.scheme() == "http" && !crate::egress::is_loopback_url(&u) && !self.inner.public_url.starts_with("http://")
        {
            return Err(GnapError::invalid_request("interact.finish.uri must use https"));
        }
        Ok(())
    }

    /// `POST /auth`: a signed grant request from `client`, already verified by the caller. `cause` names the
    /// HTTP request; `raw` is its body as sent (secrets masked) for the grant's timeline.
    pub async fn request(
        &self,
        req: GrantRequest,
        client: Client,
        cause: Cause,
        raw: Option<serde_json::Value>,
    ) -> Result<GrantResponse, GnapError> {
        req.validate()?;
        let policy = self.consent_policy();
        req.check_consent_identifiers(policy)?;
        let interactive = req.needs_interaction(policy);
        if interactive && matches!(client, Client::Jwk(_)) {
            return Err(GnapError::invalid_client(
                "a JWK client may only request non-interactive grants",
            ));
        }
        if interactive && req.interact.is_none() {
            return Err(GnapError::invalid_request("missing required request field 'interact'"));
        }
        self.check_local(&req).await?;
        let finish = req
            .interact
            .as_ref()
            .and_then(|i| i.finish.clone())
            .filter(|_| interactive);
        if let Some(f) = &finish {
            self.check_finish_uri(&f.uri)?;
        }
        let access: Vec<AccessItem> = req.access_token.map(|a| a.access).unwrap_or_default();
        let now = self.now();
        let continue_token = secret()?;
        let auto = interactive && self.inner.settings.auto_approve;
        let (client_url, client_jwk) = client_to_row(&client)?;
        let client_public_name = self.remote_client_name(&client, interactive).await?;
        let row = repo::GrantRow {
            id: ids::GrantId::generate(),
            state: match (interactive, auto) {
                (false, _) => GrantState::Finalized,
                (true, true) => GrantState::Approved,
                (true, false) => GrantState::Pending,
            },
            client: client_url,
            client_jwk,
            access: serde_json::to_string(&access).map_err(|e| GnapError::internal(&e))?,
            subject: req
                .subject
                .as_ref()
                .map(serde_json::to_string)
                .transpose()
                .map_err(|e| GnapError::internal(&e))?,
            interactive,
            finish_uri: finish.as_ref().map(|f| f.uri.clone()),
            client_nonce: finish.as_ref().map(|f| f.nonce.clone()),
            interact_id: if interactive { Some(nonce()?) } else { None },
            interact_nonce: if interactive { Some(nonce()?) } else { None },
            as_finish_nonce: if interactive { Some(nonce()?) } else { None },
            interact_ref: if auto { Some(nonce()?) } else { None },
            grant_endpoint: self.grant_endpoint(),
            continue_id: nonce()?,
            continue_token_hash: ids::sha256_hex(&continue_token),
            wait_secs: i64::from(self.inner.settings.wait_secs),
            last_continued_at: now,
            decision_reason: auto.then(|| "auto_approve is on".to_owned()),
            created_at: now,
            updated_at: now,
            client_public_name,
        };
        let new_token = if interactive {
            None
        } else {
            Some(self.new_token(&row.id, None, now)?)
        };
        let label = client_label(&client);
        let owner = match row.state {
            GrantState::Pending => self.owner_of(&row).await?.map(|o| o.name),
            _ => None,
        };
        let event = if new_token.is_some() {
            DomainEvent::TokenIssued {
                grant_id: row.id.clone().into(),
            }
        } else if auto {
            DomainEvent::GrantApproved {
                id: row.id.clone().into(),
                by: Some(Actor::Policy.as_str().to_owned()),
            }
        } else {
            DomainEvent::GrantPending {
                id: row.id.clone().into(),
                client: label.clone(),
                owner,
            }
        };
        let requested = serde_json::json!({
            "client": label,
            "access": access,
            "subject": req.subject,
            "interact": match (&finish, interactive) {
                (_, false) => "non-interactive".to_owned(),
                (Some(f), true) => format!("interactive, finish {} {}", f.method, f.uri),
                (None, true) => "interactive, no finish (the client polls)".to_owned(),
            },
            "finish": finish.as_ref().map(|f| serde_json::json!({"method": f.method, "uri": f.uri, "nonce": f.nonce})),
            "raw": raw,
        });
        let (stored, token) = (row.clone(), new_token.clone());
        let recorded = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                repo::insert_grant(&tx, &stored)?;
                step(
                    &tx,
                    &stored.id,
                    stored.created_at,
                    StepKind::Requested,
                    &cause,
                    &requested,
                )?;
                if let Some((t, _)) = &token {
                    repo::insert_token(&tx, t)?;
                    step(
                        &tx,
                        &stored.id,
                        stored.created_at,
                        StepKind::TokenIssued,
                        &cause,
                        &token_detail(t),
                    )?;
                }
                if auto {
                    // decided by the setting, during the request
                    let policy = Cause::new(Actor::Policy, cause.request_id.clone());
                    let decided =
                        serde_json::json!({"outcome": GrantState::Approved, "reason": stored.decision_reason});
                    step(&tx, &stored.id, stored.created_at, StepKind::Decided, &policy, &decided)?;
                }
                let recorded = outbox::append(&tx, stored.created_at, event.clone())?;
                tx.commit()?;
                Ok::<_, GnapError>(recorded)
            })
            .await?;
        self.inner.bus.publish_recorded([recorded]);
        let continue_ = Continue {
            access_token: ContinueToken { value: continue_token },
            uri: self.continue_uri(&row.continue_id),
            wait: interactive.then_some(row.wait_secs),
        };
        if let Some((t, value)) = new_token {
            tracing::info!(grant = %row.id, client = %label, "non-interactive grant issued");
            return Ok(GrantResponse {
                interact: None,
                access_token: Some(self.token_response(&t, &value, access)),
                subject: None,
                continue_,
            });
        }
        if auto {
            tracing::warn!(grant = %row.id, client = %label, "grant approved automatically (auto_approve)");
        } else {
            tracing::info!(grant = %row.id, client = %label, "grant waits for the resource owner");
        }
        let (iid, inonce) = (
            row.interact_id.unwrap_or_default(),
            row.interact_nonce.unwrap_or_default(),
        );
        Ok(GrantResponse {
            interact: Some(InteractResponse {
                redirect: format!("{}/auth/interact/{iid}/{inonce}", self.inner.public_url),
                finish: row.as_finish_nonce.unwrap_or_default(),
            }),
            access_token: None,
            subject: None,
            continue_,
        })
    }

    /// Finds the grant of a continuation and checks the presented continuation token.
    pub async fn grant_for_continue(&self, continue_id: &str, token: &str) -> Result<repo::GrantRow, GnapError> {
        let id = continue_id.to_owned();
        let g = self
            .inner
            .store
            .call(move |c| Ok::<_, GnapError>(repo::grant_by_continue_id(c, &id)?))
            .await?;
        let unknown = || GnapError::invalid_continuation("unknown continuation");
        let g = g.ok_or_else(unknown)?;
        if !bool::from(
            g.continue_token_hash
                .as_bytes()
                .ct_eq(ids::sha256_hex(token).as_bytes()),
        ) {
            return Err(unknown());
        }
        Ok(g)
    }

    /// `POST /auth/continue/{id}`, after the caller verified the client's signature.
    pub async fn continue_grant(
        &self,
        grant_id: &str,
        interact_ref: Option<String>,
        continue_token: String,
        cause: Cause,
    ) -> Result<GrantResponse, GnapError> {
        let now = self.now();
        let id = grant_id.to_owned();
        let interaction_ttl = i64::from(self.inner.settings.interaction_expires_in_secs);
        let this = self.clone();
        let refused_by = cause.clone();
        let outcome = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let g = repo::grant(&tx, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                let dead = |g: &repo::GrantRow| match g.state {
                    GrantState::Rejected => Some(GnapError::request_denied("the resource owner rejected the grant")),
                    GrantState::Revoked => Some(GnapError::request_denied("the grant was revoked")),
                    GrantState::Finalized => Some(GnapError::request_denied("the grant was already issued")),
                    _ => None,
                };
                if let Some(r) = &interact_ref {
                    if !g
                        .interact_ref
                        .as_deref()
                        .is_some_and(|mine| bool::from(mine.as_bytes().ct_eq(r.as_bytes())))
                    {
                        return Err(GnapError::unknown_interaction("unknown interaction reference"));
                    }
                    if let Some(e) = dead(&g) {
                        return Err(e);
                    }
                } else {
                    if let Some(e) = dead(&g) {
                        return Err(e);
                    }
                    if g.finish_uri.is_some() {
                        return Err(GnapError::request_denied(
                            "grant cannot be polled: continue with the interact_ref from the finish redirect",
                        ));
                    }
                    let last = g.last_continued_at;
                    if now < last + Duration::seconds(g.wait_secs) {
                        return Err(GnapError::too_fast(g.wait_secs));
                    }
                    repo::touch_continued(&tx, &g.id, now)?;
                    if g.state.can_decide() {
                        if now >= g.created_at + Duration::seconds(interaction_ttl) {
                            expire(&tx, &g, now, &cause)?;
                            tx.commit()?;
                            return Err(GnapError::request_denied("the interaction expired"));
                        }
                        let polled = serde_json::json!({"state": g.state, "wait": g.wait_secs});
                        repeat_step(&tx, &g.id, now, StepKind::Polled, &cause, &polled)?;
                        tx.commit()?;
                        return Ok(Err(g.wait_secs));
                    }
                }
                // approved: issue exactly once
                if !repo::transition(&tx, &g.id, &[GrantState::Approved], GrantState::Finalized, now)? {
                    return Err(GnapError::request_denied("the grant is not approved"));
                }
                let access = access_of(&g)?;
                let continued = serde_json::json!({
                    "interactRef": interact_ref.is_some(),
                    "state": GrantState::Finalized,
                    "tokenIssued": !access.is_empty(),
                });
                step(&tx, &g.id, now, StepKind::Continued, &cause, &continued)?;
                let issued = if access.is_empty() {
                    None
                } else {
                    let (t, value) = this.new_token(&g.id, None, now)?;
                    repo::insert_token(&tx, &t)?;
                    step(&tx, &g.id, now, StepKind::TokenIssued, &cause, &token_detail(&t))?;
                    let event = DomainEvent::TokenIssued {
                        grant_id: g.id.clone().into(),
                    };
                    Some((t, value, outbox::append(&tx, now, event)?))
                };
                tx.commit()?;
                Ok(Ok((g, access, issued)))
            })
            .await;
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                self.refused(grant_id, &e, refused_by).await;
                return Err(e);
            }
        };
        let continue_of = |g_continue_id: &str, wait: Option<i64>| Continue {
            access_token: ContinueToken {
                value: continue_token.clone(),
            },
            uri: self.continue_uri(g_continue_id),
            wait,
        };
        match outcome {
            Err(wait) => {
                let g = self.grant_row(grant_id).await?;
                Ok(GrantResponse {
                    interact: None,
                    access_token: None,
                    subject: None,
                    continue_: continue_of(&g.continue_id, Some(wait)),
                })
            }
            Ok((g, access, issued)) => {
                let subject = g
                    .subject
                    .as_deref()
                    .map(serde_json::from_str::<Subject>)
                    .transpose()
                    .map_err(|e| GnapError::internal(&e))?;
                let access_token = issued.map(|(t, value, recorded)| {
                    self.inner.bus.publish_recorded([recorded]);
                    self.token_response(&t, &value, access)
                });
                Ok(GrantResponse {
                    interact: None,
                    access_token,
                    subject,
                    continue_: continue_of(&g.continue_id, None),
                })
            }
        }
    }

    /// Records a refused continue on the grant's timeline (the same refusal again repeats the step), so the
    /// operator sees where a client stopped. The client's answer does not depend on it: a failure is logged.
    async fn refused(&self, grant_id: &str, e: &GnapError, cause: Cause) {
        if matches!(e.fault, Fault::Internal | Fault::Unavailable) {
            return;
        }
        let (id, now) = (grant_id.to_owned(), self.now());
        let detail = serde_json::json!({"error": e.code, "description": e.description});
        let written = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                // a client alternating refusals cannot grow the timeline without end
                if repo::grant(&tx, &id)?.is_some() && repo::step_count(&tx, &id)? < MAX_REFUSAL_STEPS {
                    repeat_step(&tx, &id, now, StepKind::ContinueRefused, &cause, &detail)?;
                }
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await;
        if let Err(err) = written {
            tracing::warn!(grant = grant_id, error = %err, "cannot record a refused continue");
        }
    }

    async fn grant_row(&self, id: &str) -> Result<repo::GrantRow, GnapError> {
        let id = id.to_owned();
        self.inner
            .store
            .call(move |c| repo::grant(c, &id)?.ok_or_else(|| GnapError::not_found("unknown grant")))
            .await
    }

    /// Revokes a grant and all its tokens (client `DELETE /auth/continue/{id}` or the operator, as `cause`).
    pub async fn revoke_grant(&self, grant_id: &str, cause: Cause) -> Result<(), GnapError> {
        let id = grant_id.to_owned();
        let now = self.now();
        let recorded = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                if !repo::transition(&tx, &id, &GrantState::revocable(), GrantState::Revoked, now)? {
                    return Err(match repo::grant(&tx, &id)? {
                        None => GnapError::not_found("unknown grant"),
                        Some(_) => GnapError::invalid_continuation("the grant is already revoked"),
                    });
                }
                let tokens = repo::revoke_tokens_of_grant(&tx, &id, now)?;
                notify::tell_forget(&tx, &Forget::Grant(id.clone()))?;
                step(
                    &tx,
                    &id,
                    now,
                    StepKind::GrantRevoked,
                    &cause,
                    &serde_json::json!({"tokens": tokens}),
                )?;
                let recorded = outbox::append(&tx, now, DomainEvent::GrantRevoked { id: id.clone() })?;
                tx.commit()?;
                Ok::<_, GnapError>(recorded)
            })
            .await?;
        self.invalidate_grant(grant_id);
        self.inner.bus.publish_recorded([recorded]);
        Ok(())
    }

    /// The resource owner approves a pending grant (console, admin API, CLI — never the client).
    pub async fn approve(&self, grant_id: &str, cause: Cause) -> Result<GrantView, GnapError> {
        self.operator_decides(grant_id, &cause).await?;
        self.decide(grant_id, true, None, cause).await
    }

    /// Refuses an operator's decision on a grant `[consent] decide = "owner"` gives to the account holder.
    async fn operator_decides(&self, grant_id: &str, cause: &Cause) -> Result<(), GnapError> {
        if cause.actor == Actor::Owner || self.inner.consent.decide != crate::settings::Decider::Owner {
            return Ok(());
        }
        let g = self.grant_row(grant_id).await?;
        if g.state.can_decide() && !self.operator_may_decide(&g).await? {
            return Err(GnapError::conflict(
                "the account holder decides this grant on the interaction page ([consent] decide = \"owner\")",
            ));
        }
        Ok(())
    }

    /// The resource owner rejects a pending grant, optionally saying why.
    pub async fn reject(&self, grant_id: &str, reason: Option<String>, cause: Cause) -> Result<GrantView, GnapError> {
        if reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > 500 || r.chars().any(char::is_control))
        {
            return Err(GnapError::invalid_request(
                "the reason must be at most 500 printable characters",
            ));
        }
        self.operator_decides(grant_id, &cause).await?;
        self.decide(grant_id, false, reason, cause).await
    }

    async fn decide(
        &self,
        grant_id: &str,
        approve: bool,
        reason: Option<String>,
        cause: Cause,
    ) -> Result<GrantView, GnapError> {
        let id = grant_id.to_owned();
        let now = self.now();
        let ttl = i64::from(self.inner.settings.interaction_expires_in_secs);
        let interact_ref = if approve { Some(nonce()?) } else { None };
        let recorded = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let g = repo::grant(&tx, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                if !g.state.can_decide() {
                    return Err(GnapError::conflict(format!("the grant is {}, not pending", g.state)));
                }
                if now >= g.created_at + Duration::seconds(ttl) {
                    expire(&tx, &g, now, &cause)?;
                    tx.commit()?;
                    return Err(GnapError::conflict("the interaction expired"));
                }
                let to = if approve {
                    GrantState::Approved
                } else {
                    GrantState::Rejected
                };
                if !repo::decide(&tx, &id, to, interact_ref.as_deref(), reason.as_deref(), now)? {
                    return Err(GnapError::conflict("the grant is no longer pending"));
                }
                let decided = serde_json::json!({"outcome": to, "reason": reason});
                step(&tx, &id, now, StepKind::Decided, &cause, &decided)?;
                let by = Some(cause.actor.as_str().to_owned());
                let event = if approve {
                    DomainEvent::GrantApproved { id: id.clone(), by }
                } else {
                    DomainEvent::GrantRejected {
                        id: id.clone(),
                        reason: reason.clone(),
                        by,
                    }
                };
                let recorded = outbox::append(&tx, now, event)?;
                tx.commit()?;
                Ok::<_, GnapError>(recorded)
            })
            .await?;
        self.inner.bus.publish_recorded([recorded]);
        self.show(grant_id).await
    }
}
