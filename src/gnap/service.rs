//! The GNAP service: the only writer of `grants` and `access_tokens`. Every operation is one `BEGIN IMMEDIATE`
//! transaction with state transitions guarded in SQL, so a token is issued exactly once however many continues
//! race, and events are published only after commit. Token values live only in responses; the store keeps
//! their SHA-256.

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
    model::{
        AccessItem, AccessTokenResponse, Client, ConsentPolicy, Continue, ContinueToken, GrantRequest, GrantResponse,
        InteractResponse, RotateResponse, Subject,
    },
};
use crate::{
    clock::{SharedClock, format_ts, parse_ts},
    events::{DomainEvent, EventBus},
    httpsig::{interaction_hash_std, jwk::Jwk},
    ids,
    settings::GnapSettings,
    states::GrantState,
    store::{self, Store, grants as repo},
    wallet::{Wallet, Wallets},
};

/// How long a token check is cached for the resource server (revocation and rotation clear it at once).
const TOKEN_CACHE_TTL: StdDuration = StdDuration::from_secs(5);

/// What the resource server learns from a valid access token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub grant_id: String,
    pub token_id: String,
    pub client: Client,
    pub access: Vec<AccessItem>,
    pub expires_at: OffsetDateTime,
    /// The grant was interactive: the resource owner approved this access (or `auto_approve` did).
    pub owner_approved: bool,
}

/// A token as operators see it (never the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    /// The first characters of the value.
    pub hint: String,
    pub manage: String,
    pub created_at: String,
    pub expires_at: String,
    pub revoked_at: Option<String>,
}

/// A grant as operators see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    pub id: String,
    /// Any [`GrantState`], `expired` for a pending grant whose interaction window passed.
    pub state: GrantState,
    pub client: String,
    pub client_name: Option<String>,
    pub access: Vec<AccessItem>,
    pub subject: Option<Subject>,
    pub interactive: bool,
    pub finish_uri: Option<String>,
    pub decision_reason: Option<String>,
    pub created_at: String,
    pub interaction_expires_at: Option<String>,
    /// The request in plain words, one line per item.
    pub description: Vec<String>,
    pub tokens: Vec<TokenView>,
}

/// What the interaction page should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InteractionOutcome {
    /// Waiting for the operator; show the description and keep waiting.
    Pending {
        expires_at: String,
    },
    /// Decided and the client gave a finish URI: send the browser there.
    Redirect(String),
    /// Decided, no finish URI (a polling client): tell the person.
    Approved,
    Rejected {
        reason: Option<String>,
    },
    Expired,
    Cancelled,
}

/// The interaction page's view of a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteractionView {
    pub grant_id: String,
    pub client: String,
    pub client_name: Option<String>,
    pub description: Vec<String>,
    pub outcome: InteractionOutcome,
}

struct Inner {
    store: Store,
    bus: EventBus,
    clock: SharedClock,
    wallets: Wallets,
    settings: GnapSettings,
    public_url: String,
    token_cache: Mutex<HashMap<String, (TokenInfo, Instant)>>,
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

fn ts(s: &str) -> Result<OffsetDateTime, GnapError> {
    parse_ts(s).map_err(|e| GnapError::internal(&e))
}

impl Gnap {
    pub fn new(
        store: Store,
        bus: EventBus,
        clock: SharedClock,
        wallets: Wallets,
        settings: GnapSettings,
        public_url: &str,
    ) -> Self {
        if settings.auto_approve {
            tracing::warn!(
                "gnap.auto_approve is ON: every interactive grant is approved without the resource owner. \
                 Use this only for demos and tests."
            );
        }
        Self {
            inner: Arc::new(Inner {
                store,
                bus,
                clock,
                wallets,
                settings,
                public_url: public_url.trim_end_matches('/').to_owned(),
                token_cache: Mutex::new(HashMap::new()),
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

    async fn client_name(&self, c: &Client) -> Option<String> {
        match c {
            Client::Wallet(u) => self.local_wallet(u).await.ok().flatten().and_then(|w| w.public_name),
            Client::Jwk(_) => None,
        }
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

    /// `POST /auth`: a signed grant request from `client`, already verified by the caller.
    pub async fn request(&self, req: GrantRequest, client: Client) -> Result<GrantResponse, GnapError> {
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
        let now_s = format_ts(now);
        let continue_token = secret()?;
        let auto = interactive && self.inner.settings.auto_approve;
        let (client_url, client_jwk) = client_to_row(&client)?;
        let row = repo::GrantRow {
            id: ids::new_id(),
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
            last_continued_at: now_s.clone(),
            decision_reason: auto.then(|| "auto_approve is on".to_owned()),
            created_at: now_s.clone(),
            updated_at: now_s.clone(),
        };
        let new_token = if interactive {
            None
        } else {
            Some(self.new_token(&row.id, None, &now_s)?)
        };
        let (stored, token) = (row.clone(), new_token.clone());
        self.inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                repo::insert_grant(&tx, &stored)?;
                if let Some((t, _)) = &token {
                    repo::insert_token(&tx, t)?;
                }
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await?;
        let label = client_label(&client);
        let continue_ = Continue {
            access_token: ContinueToken { value: continue_token },
            uri: self.continue_uri(&row.continue_id),
            wait: interactive.then_some(row.wait_secs),
        };
        if let Some((t, value)) = new_token {
            self.inner.bus.publish(DomainEvent::TokenIssued {
                grant_id: row.id.clone(),
            });
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
            self.inner
                .bus
                .publish(DomainEvent::GrantApproved { id: row.id.clone() });
        } else {
            tracing::info!(grant = %row.id, client = %label, "grant waits for the resource owner");
            self.inner.bus.publish(DomainEvent::GrantPending {
                id: row.id.clone(),
                client: label,
            });
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

    /// A new token row and its value.
    fn new_token(
        &self,
        grant_id: &str,
        rotated_from: Option<String>,
        now: &str,
    ) -> Result<(repo::TokenRow, String), GnapError> {
        let value = secret()?;
        let row = repo::TokenRow {
            id: ids::new_id(),
            grant_id: grant_id.to_owned(),
            value_hash: ids::sha256_hex(&value),
            value_hint: value.chars().take(6).collect(),
            manage_id: nonce()?,
            expires_in: i64::from(self.inner.settings.access_token_expires_in_secs),
            created_at: now.to_owned(),
            revoked_at: None,
            rotated_from,
        };
        Ok((row, value))
    }

    fn token_response(&self, t: &repo::TokenRow, value: &str, access: Vec<AccessItem>) -> AccessTokenResponse {
        AccessTokenResponse {
            value: value.to_owned(),
            manage: self.manage_uri(&t.manage_id),
            expires_in: t.expires_in,
            access,
        }
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
    ) -> Result<GrantResponse, GnapError> {
        let now = self.now();
        let now_s = format_ts(now);
        let id = grant_id.to_owned();
        let interaction_ttl = i64::from(self.inner.settings.interaction_expires_in_secs);
        let this = self.clone();
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
                    let last = ts(&g.last_continued_at)?;
                    if now < last + Duration::seconds(g.wait_secs) {
                        return Err(GnapError::too_fast(g.wait_secs));
                    }
                    repo::touch_continued(&tx, &g.id, &now_s)?;
                    if g.state.can_decide() {
                        if now >= ts(&g.created_at)? + Duration::seconds(interaction_ttl) {
                            repo::decide(
                                &tx,
                                &g.id,
                                GrantState::Rejected,
                                None,
                                Some("interaction expired"),
                                &now_s,
                            )?;
                            tx.commit()?;
                            return Err(GnapError::request_denied("the interaction expired"));
                        }
                        tx.commit()?;
                        return Ok(Err(g.wait_secs));
                    }
                }
                // approved: issue exactly once
                if !repo::transition(&tx, &g.id, &[GrantState::Approved], GrantState::Finalized, &now_s)? {
                    return Err(GnapError::request_denied("the grant is not approved"));
                }
                let access = access_of(&g)?;
                let issued = if access.is_empty() {
                    None
                } else {
                    let (t, value) = this.new_token(&g.id, None, &now_s)?;
                    repo::insert_token(&tx, &t)?;
                    Some((t, value))
                };
                tx.commit()?;
                Ok(Ok((g, access, issued)))
            })
            .await?;
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
                let access_token = issued.map(|(t, value)| self.token_response(&t, &value, access));
                if access_token.is_some() {
                    self.inner
                        .bus
                        .publish(DomainEvent::TokenIssued { grant_id: g.id.clone() });
                }
                Ok(GrantResponse {
                    interact: None,
                    access_token,
                    subject,
                    continue_: continue_of(&g.continue_id, None),
                })
            }
        }
    }

    async fn grant_row(&self, id: &str) -> Result<repo::GrantRow, GnapError> {
        let id = id.to_owned();
        self.inner
            .store
            .call(move |c| repo::grant(c, &id)?.ok_or_else(|| GnapError::not_found("unknown grant")))
            .await
    }

    /// Revokes a grant and all its tokens (client `DELETE /auth/continue/{id}` or the operator).
    pub async fn revoke_grant(&self, grant_id: &str) -> Result<(), GnapError> {
        let id = grant_id.to_owned();
        let now = format_ts(self.now());
        self.inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                if !repo::transition(&tx, &id, &GrantState::revocable(), GrantState::Revoked, &now)? {
                    return Err(match repo::grant(&tx, &id)? {
                        None => GnapError::not_found("unknown grant"),
                        Some(_) => GnapError::invalid_continuation("the grant is already revoked"),
                    });
                }
                repo::revoke_tokens_of_grant(&tx, &id, &now)?;
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await?;
        self.invalidate_grant(grant_id);
        self.inner.bus.publish(DomainEvent::GrantRevoked {
            id: grant_id.to_owned(),
        });
        Ok(())
    }

    /// Finds a token by its management id and checks the presented value is that token.
    pub async fn token_for_manage(
        &self,
        manage_id: &str,
        presented: &str,
    ) -> Result<(repo::TokenRow, repo::GrantRow), GnapError> {
        let id = manage_id.to_owned();
        let found = self
            .inner
            .store
            .call(move |c| {
                let Some(t) = repo::token_by_manage_id(c, &id)? else {
                    return Ok::<_, GnapError>(None);
                };
                let g = repo::grant(c, &t.grant_id)?.ok_or_else(|| GnapError::fault("token without grant"))?;
                Ok(Some((t, g)))
            })
            .await?;
        let (t, g) = found.ok_or_else(|| GnapError::unauthorized_client("invalid access token"))?;
        if !bool::from(t.value_hash.as_bytes().ct_eq(ids::sha256_hex(presented).as_bytes())) {
            return Err(GnapError::unauthorized_client(
                "the access token does not match the managed token",
            ));
        }
        Ok((t, g))
    }

    /// `POST /auth/token/{id}`: a new value and management URL with the same access; the old ones die.
    pub async fn rotate(&self, token_id: &str) -> Result<RotateResponse, GnapError> {
        let id = token_id.to_owned();
        let now = format_ts(self.now());
        let this = self.clone();
        let (t, value, access, grant_id) = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let t = repo::token_with_grant(&tx, &id)?;
                let (t, g) = t.ok_or_else(|| GnapError::invalid_rotation("unknown token"))?;
                // The spec's 401 for the token endpoint is `invalid_client`: the grant's tokens died with it.
                if !g.state.is_active() {
                    return Err(GnapError::unauthorized_client("the grant is no longer active"));
                }
                if !repo::revoke_token(&tx, &t.id, &now)? {
                    return Err(GnapError::unauthorized_client("invalid access token"));
                }
                let (new, value) = this.new_token(&g.id, Some(t.id.clone()), &now)?;
                repo::insert_token(&tx, &new)?;
                let access = access_of(&g)?;
                tx.commit()?;
                Ok::<_, GnapError>((new, value, access, g.id))
            })
            .await?;
        self.invalidate_grant(&grant_id);
        self.inner.bus.publish(DomainEvent::TokenRotated { grant_id });
        Ok(RotateResponse {
            access_token: self.token_response(&t, &value, access),
        })
    }

    /// `DELETE /auth/token/{id}`: idempotent.
    pub async fn revoke_token(&self, token_id: &str) -> Result<(), GnapError> {
        let id = token_id.to_owned();
        let now = format_ts(self.now());
        let (changed, grant_id) = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let (t, _) = repo::token_with_grant(&tx, &id)?.ok_or_else(|| GnapError::not_found("unknown token"))?;
                let changed = repo::revoke_token(&tx, &t.id, &now)?;
                tx.commit()?;
                Ok::<_, GnapError>((changed, t.grant_id))
            })
            .await?;
        self.invalidate_grant(&grant_id);
        if changed {
            self.inner.bus.publish(DomainEvent::TokenRevoked { grant_id });
        }
        Ok(())
    }

    fn invalidate_grant(&self, grant_id: &str) {
        if let Ok(mut cache) = self.inner.token_cache.lock() {
            cache.retain(|_, (info, _)| info.grant_id != grant_id);
        }
    }

    /// The token check for the resource server: `None` unless the token is live (known, not revoked, not
    /// expired, its grant issued and not revoked). Cached briefly; revocation and rotation clear the cache.
    pub async fn introspect(&self, value: &str) -> Result<Option<TokenInfo>, GnapError> {
        let hash = ids::sha256_hex(value);
        let now = self.now();
        if let Ok(cache) = self.inner.token_cache.lock()
            && let Some((info, at)) = cache.get(&hash)
            && at.elapsed() < TOKEN_CACHE_TTL
        {
            return Ok((info.expires_at > now).then(|| info.clone()));
        }
        let h = hash.clone();
        let found = self
            .inner
            .store
            .call(move |c| {
                let Some(t) = repo::token_by_hash(c, &h)? else {
                    return Ok::<_, GnapError>(None);
                };
                let g = repo::grant(c, &t.grant_id)?;
                Ok(g.map(|g| (t, g)))
            })
            .await?;
        let Some((t, g)) = found else { return Ok(None) };
        if t.revoked_at.is_some() || !g.state.is_active() {
            return Ok(None);
        }
        let info = TokenInfo {
            grant_id: g.id.clone(),
            token_id: t.id.clone(),
            client: client_of(&g)?,
            access: access_of(&g)?,
            expires_at: ts(&t.created_at)? + Duration::seconds(t.expires_in),
            owner_approved: g.interactive,
        };
        if let Ok(mut cache) = self.inner.token_cache.lock() {
            if cache.len() > 10_000 {
                cache.retain(|_, (_, at)| at.elapsed() < TOKEN_CACHE_TTL);
            }
            cache.insert(hash, (info.clone(), Instant::now()));
        }
        Ok((info.expires_at > now).then_some(info))
    }

    /// The resource owner approves a pending grant (console, admin API, CLI — never the client).
    pub async fn approve(&self, grant_id: &str) -> Result<GrantView, GnapError> {
        self.decide(grant_id, true, None).await
    }

    /// The resource owner rejects a pending grant, optionally saying why.
    pub async fn reject(&self, grant_id: &str, reason: Option<String>) -> Result<GrantView, GnapError> {
        if reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > 500 || r.chars().any(char::is_control))
        {
            return Err(GnapError::invalid_request(
                "the reason must be at most 500 printable characters",
            ));
        }
        self.decide(grant_id, false, reason).await
    }

    async fn decide(&self, grant_id: &str, approve: bool, reason: Option<String>) -> Result<GrantView, GnapError> {
        let id = grant_id.to_owned();
        let now = self.now();
        let now_s = format_ts(now);
        let ttl = i64::from(self.inner.settings.interaction_expires_in_secs);
        let interact_ref = if approve { Some(nonce()?) } else { None };
        let r = reason.clone();
        self.inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let g = repo::grant(&tx, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                if !g.state.can_decide() {
                    return Err(GnapError::conflict(format!("the grant is {}, not pending", g.state)));
                }
                if now >= ts(&g.created_at)? + Duration::seconds(ttl) {
                    repo::decide(
                        &tx,
                        &id,
                        GrantState::Rejected,
                        None,
                        Some("interaction expired"),
                        &now_s,
                    )?;
                    tx.commit()?;
                    return Err(GnapError::conflict("the interaction expired"));
                }
                let to = if approve {
                    GrantState::Approved
                } else {
                    GrantState::Rejected
                };
                if !repo::decide(&tx, &id, to, interact_ref.as_deref(), r.as_deref(), &now_s)? {
                    return Err(GnapError::conflict("the grant is no longer pending"));
                }
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await?;
        self.inner.bus.publish(if approve {
            DomainEvent::GrantApproved {
                id: grant_id.to_owned(),
            }
        } else {
            DomainEvent::GrantRejected {
                id: grant_id.to_owned(),
                reason,
            }
        });
        self.show(grant_id).await
    }

    async fn view(&self, g: repo::GrantRow, tokens: Vec<repo::TokenRow>) -> Result<GrantView, GnapError> {
        let client = client_of(&g)?;
        let access = access_of(&g)?;
        let subject: Option<Subject> = g
            .subject
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| GnapError::internal(&e))?;
        let created = ts(&g.created_at)?;
        let expires = created + Duration::seconds(i64::from(self.inner.settings.interaction_expires_in_secs));
        let state = g.state.shown(self.now() >= expires);
        let client_name = self.client_name(&client).await;
        let description = describe::grant(
            &client_label(&client),
            client_name.as_deref(),
            &access,
            subject.as_ref(),
            g.interactive,
        );
        Ok(GrantView {
            id: g.id,
            state,
            client: client_label(&client),
            client_name,
            access,
            subject,
            interactive: g.interactive,
            finish_uri: g.finish_uri,
            decision_reason: g.decision_reason,
            created_at: g.created_at,
            interaction_expires_at: g.interactive.then(|| format_ts(expires)),
            description,
            tokens: tokens
                .into_iter()
                .map(|t| {
                    let expires_at = ts(&t.created_at).map(|c| format_ts(c + Duration::seconds(t.expires_in)));
                    TokenView {
                        manage: self.manage_uri(&t.manage_id),
                        id: t.id,
                        hint: format!("{}…", t.value_hint),
                        created_at: t.created_at,
                        expires_at: expires_at.unwrap_or_default(),
                        revoked_at: t.revoked_at,
                    }
                })
                .collect(),
        })
    }

    /// One grant with its tokens.
    pub async fn show(&self, grant_id: &str) -> Result<GrantView, GnapError> {
        let id = grant_id.to_owned();
        let (g, tokens) = self
            .inner
            .store
            .call(move |c| {
                let g = repo::grant(c, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                let tokens = repo::tokens_of_grant(c, &g.id)?;
                Ok::<_, GnapError>((g, tokens))
            })
            .await?;
        self.view(g, tokens).await
    }

    /// Grants newest first; `state` filters (`expired` selects pending grants past their window).
    pub async fn list(&self, state: Option<GrantState>, limit: u32) -> Result<Vec<GrantView>, GnapError> {
        let db_state = state.map(GrantState::stored);
        let rows = self
            .inner
            .store
            .call(move |c| {
                let gs = repo::grants(c, db_state, limit)?;
                let mut out = Vec::with_capacity(gs.len());
                for g in gs {
                    let t = repo::tokens_of_grant(c, &g.id)?;
                    out.push((g, t));
                }
                Ok::<_, GnapError>(out)
            })
            .await?;
        let mut views = Vec::with_capacity(rows.len());
        for (g, t) in rows {
            let v = self.view(g, t).await?;
            if state.is_none_or(|s| s == v.state) {
                views.push(v);
            }
        }
        Ok(views)
    }

    /// What the interaction page at `/auth/interact/{id}/{nonce}` shows or where it sends the browser.
    pub async fn interaction(&self, interact_id: &str, nonce: &str) -> Result<InteractionView, GnapError> {
        let id = interact_id.to_owned();
        let g = self
            .inner
            .store
            .call(move |c| Ok::<_, GnapError>(repo::grant_by_interact_id(c, &id)?))
            .await?;
        let g = g
            .filter(|g| {
                g.interact_nonce
                    .as_deref()
                    .is_some_and(|n| bool::from(n.as_bytes().ct_eq(nonce.as_bytes())))
            })
            .ok_or_else(|| GnapError::not_found("unknown interaction"))?;
        let view = self.view(g.clone(), Vec::new()).await?;
        let redirect = |params: &[(&str, &str)]| -> Result<Option<String>, GnapError> {
            let Some(f) = &g.finish_uri else {
                return Ok(None);
            };
            let mut u = url::Url::parse(f).map_err(|e| GnapError::internal(&e))?;
            {
                let mut q = u.query_pairs_mut();
                for (k, v) in params {
                    q.append_pair(k, v);
                }
            }
            Ok(Some(u.to_string()))
        };
        let outcome = match view.state {
            GrantState::Pending => InteractionOutcome::Pending {
                expires_at: view.interaction_expires_at.clone().unwrap_or_default(),
            },
            GrantState::Approved | GrantState::Finalized => {
                let r = g.interact_ref.clone().unwrap_or_default();
                let hash = interaction_hash_std(
                    g.client_nonce.as_deref().unwrap_or(""),
                    g.as_finish_nonce.as_deref().unwrap_or(""),
                    &r,
                    &g.grant_endpoint,
                );
                match redirect(&[("hash", &hash), ("interact_ref", &r)])? {
                    Some(u) => InteractionOutcome::Redirect(u),
                    None => InteractionOutcome::Approved,
                }
            }
            GrantState::Rejected => match redirect(&[("result", "grant_rejected")])? {
                Some(u) => InteractionOutcome::Redirect(u),
                None => InteractionOutcome::Rejected {
                    reason: g.decision_reason.clone(),
                },
            },
            GrantState::Expired => match redirect(&[("result", "grant_invalid")])? {
                Some(u) => InteractionOutcome::Redirect(u),
                None => InteractionOutcome::Expired,
            },
            GrantState::Revoked => match redirect(&[("result", "grant_invalid")])? {
                Some(u) => InteractionOutcome::Redirect(u),
                None => InteractionOutcome::Cancelled,
            },
        };
        Ok(InteractionView {
            grant_id: view.id,
            client: view.client,
            client_name: view.client_name,
            description: view.description,
            outcome,
        })
    }
}
