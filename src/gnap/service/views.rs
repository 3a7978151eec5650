//! What people see of grants: the operator's views (list, show) and the interaction page's view of one
//! request.

use super::*;
use crate::gnap::timeline::GrantStep;

/// Reads the `publicName` of a wallet address on another ASE (the consent words' name for a client there), or
/// `None` when it has none or cannot be read.
pub type PublicNames = Arc<dyn Fn(String) -> crate::httpsig::keys::BoxFuture<Option<String>> + Send + Sync>;

/// A token as operators see it (never the value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    /// The first characters of the value.
    pub hint: String,
    pub manage: String,
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
    #[serde(with = "crate::clock::wire")]
    pub expires_at: time::OffsetDateTime,
    #[serde(default, with = "crate::clock::wire::option")]
    pub revoked_at: Option<time::OffsetDateTime>,
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
    #[serde(with = "crate::clock::wire")]
    pub created_at: time::OffsetDateTime,
    #[serde(default, with = "crate::clock::wire::option")]
    pub interaction_expires_at: Option<time::OffsetDateTime>,
    /// The request in plain words, one line per item.
    pub description: Vec<String>,
    /// What approving it means, as the owner's page says it (in the view of one grant, and of each pending one
    /// in the operator's list: the console's Grants pane shows it in the detail).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<describe::Fact>,
    pub tokens: Vec<TokenView>,
    /// The grant's life step by step (only in the view of one grant, not in lists).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<GrantStep>,
}

/// What the interaction page should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InteractionOutcome {
    /// Waiting for the operator; show the description and keep waiting.
    Pending {
        expires_at: time::OffsetDateTime,
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
    /// Decided, and the browser was already sent on to the client: the link says so instead of sending it
    /// there again with the same `interact_ref`.
    AlreadyDecided(GrantState),
}

/// The interaction page's view of a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteractionView {
    pub grant_id: String,
    pub client: String,
    pub client_name: Option<String>,
    pub description: Vec<String>,
    /// What approving it means, in the words the console and the CLI use too.
    pub summary: Vec<describe::Fact>,
    pub outcome: InteractionOutcome,
}

impl Gnap {
    /// Reads the public names of client wallets on other ASEs with `names` (at each interactive request).
    pub fn with_public_names(mut self, names: PublicNames) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.names = Some(names);
        }
        self
    }

    /// The client's public name: its wallet's here, else the one read at its request (`remote`).
    pub(super) async fn client_name(&self, c: &Client, remote: Option<&str>) -> Option<String> {
        match c {
            Client::Wallet(u) => match self.local_wallet(u).await.ok().flatten() {
                Some(w) => w.public_name,
                None => remote.map(str::to_owned),
            },
            Client::Jwk(_) => None,
        }
    }

    /// The public name of an interactive grant's client wallet on another ASE, read once at its request.
    pub(super) async fn remote_client_name(&self, c: &Client, interactive: bool) -> Result<Option<String>, GnapError> {
        let (Client::Wallet(u), true, Some(names)) = (c, interactive, &self.inner.names) else {
            return Ok(None);
        };
        if self.local_wallet(u).await?.is_some() {
            return Ok(None);
        }
        Ok(names(u.clone()).await)
    }

    pub(super) async fn view(&self, g: repo::GrantRow, tokens: Vec<repo::TokenRow>) -> Result<GrantView, GnapError> {
        let client = client_of(&g)?;
        let access = access_of(&g)?;
        let subject: Option<Subject> = g
            .subject
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| GnapError::internal(&e))?;
        let created = g.created_at;
        let expires = created + Duration::seconds(i64::from(self.inner.settings.interaction_expires_in_secs));
        let state = g.state.shown(self.now() >= expires);
        let client_name = self.client_name(&client, g.client_public_name.as_deref()).await;
        let description = describe::grant(
            &client_label(&client),
            client_name.as_deref(),
            &access,
            subject.as_ref(),
            g.interactive,
        );
        Ok(GrantView {
            id: g.id.into(),
            state,
            client: client_label(&client),
            client_name,
            access,
            subject,
            interactive: g.interactive,
            finish_uri: g.finish_uri,
            decision_reason: g.decision_reason,
            created_at: g.created_at,
            interaction_expires_at: g.interactive.then_some(expires),
            description,
            summary: Vec::new(),
            tokens: tokens
                .into_iter()
                .map(|t| {
                    let expires_at = t.created_at + Duration::seconds(t.expires_in);
                    TokenView {
                        manage: self.manage_uri(&t.manage_id),
                        id: t.id,
                        hint: format!("{}…", t.value_hint),
                        created_at: t.created_at,
                        expires_at,
                        revoked_at: t.revoked_at,
                    }
                })
                .collect(),
            timeline: Vec::new(),
        })
    }

    /// What approving grant `view` means ([`describe::consent`]): for a payment, the quote its limits name
    /// (the newest of its wallet to its receiver debiting its limit) says what the payee receives.
    async fn summary(&self, g: &repo::GrantRow, view: &GrantView) -> Result<Vec<describe::Fact>, GnapError> {
        let mut quoted = None;
        for item in &view.access {
            let AccessItem::OutgoingPayment { identifier, limits, .. } = item else {
                continue;
            };
            let Some(w) = self.local_wallet(identifier).await? else {
                continue;
            };
            let receiver = limits.as_ref().and_then(|l| l.receiver.clone());
            let debit = limits
                .as_ref()
                .and_then(|l| l.debit_amount.as_ref())
                .and_then(|d| i64::try_from(d.value.get()).ok());
            let wallet_id = w.id.to_string();
            let q = self
                .inner
                .store
                .call(move |c| {
                    Ok::<_, GnapError>(crate::store::consent::quote_for(
                        c,
                        &wallet_id,
                        receiver.as_deref(),
                        debit,
                    )?)
                })
                .await?;
            let amount = |v: i64, code: &str, scale: u8| -> Option<crate::money::Amount> {
                let value = crate::money::Value::new(u64::try_from(v).ok()?).ok()?;
                Some(crate::money::Amount {
                    value,
                    asset_code: code.to_owned(),
                    asset_scale: scale,
                })
            };
            quoted = q.and_then(|q| {
                Some(describe::Quoted {
                    debit: amount(q.debit_amount, &w.asset_code, w.asset_scale)?,
                    receive: amount(q.receive_amount, &q.receive_asset_code, q.receive_asset_scale)?,
                    payee: q.payee_public_name.or(q.payee_name),
                    receiver: q.receiver,
                })
            });
        }
        let deadline = match (view.state, view.interaction_expires_at) {
            (GrantState::Pending, Some(by)) => describe::Deadline::Open { by, now: self.now() },
            (GrantState::Rejected, _) if view.decision_reason.as_deref() == Some("interaction expired") => {
                describe::Deadline::Closed(GrantState::Expired)
            }
            (state, _) => describe::Deadline::Closed(state),
        };
        let owner = match view.state {
            GrantState::Pending => self.owner_of(g).await?.map(|o| o.name),
            _ => None,
        };
        Ok(describe::consent(&describe::Request {
            client: &view.client,
            client_name: view.client_name.as_deref(),
            access: &view.access,
            quote: quoted.as_ref(),
            deadline,
            owner: owner.as_deref(),
        }))
    }

    /// The stored steps of a grant as operators see them, then what happened without a step: an interaction
    /// window that passed unnoticed, a live token that outlived its lifetime.
    fn timeline(&self, view: &GrantView, steps: Vec<repo::StepRow>) -> Vec<GrantStep> {
        let mut out: Vec<GrantStep> = steps
            .into_iter()
            .filter_map(|r| {
                let kind = r.kind.parse().ok()?;
                let actor = r.actor.parse().ok()?;
                let repeated = r.count > 1;
                Some(GrantStep {
                    seq: r.seq,
                    at: r.at,
                    count: r.count,
                    last_at: repeated.then_some(r.last_at),
                    kind,
                    actor,
                    request_id: r.request_id,
                    last_request_id: if repeated { r.last_request_id } else { None },
                    detail: serde_json::from_str(&r.detail).unwrap_or(serde_json::Value::Null),
                })
            })
            .collect();
        let derived = |at: OffsetDateTime, kind: StepKind, detail: serde_json::Value| GrantStep {
            seq: 0,
            at,
            count: 1,
            last_at: None,
            kind,
            actor: Actor::Server,
            request_id: None,
            last_request_id: None,
            detail,
        };
        if view.state == GrantState::Expired && !out.iter().any(|s| s.kind == StepKind::Expired) {
            let at = view.interaction_expires_at.unwrap_or(view.created_at);
            out.push(derived(at, StepKind::Expired, serde_json::json!({"derived": true})));
        }
        let now = self.now();
        for t in view.tokens.iter().filter(|t| t.revoked_at.is_none()) {
            if t.expires_at <= now {
                let detail = serde_json::json!({"tokenId": t.id, "hint": t.hint, "derived": true});
                out.push(derived(t.expires_at, StepKind::TokenExpired, detail));
            }
        }
        out
    }

    /// One grant with its tokens and its timeline.
    pub async fn show(&self, grant_id: &str) -> Result<GrantView, GnapError> {
        let id = grant_id.to_owned();
        let (g, tokens, steps) = self
            .inner
            .store
            .call(move |c| {
                let g = repo::grant(c, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                let tokens = repo::tokens_of_grant(c, &g.id)?;
                let steps = repo::steps_of_grant(c, &g.id)?;
                Ok::<_, GnapError>((g, tokens, steps))
            })
            .await?;
        let row = g.clone();
        let mut view = self.view(g, tokens).await?;
        view.timeline = self.timeline(&view, steps);
        view.summary = self.summary(&row, &view).await?;
        Ok(view)
    }

    /// `views` with what approving each pending one means ([`GrantView::summary`]): the consent queue as the
    /// console's Grants pane lists it shows the interaction page's words in each grant's detail.
    pub async fn with_summaries(&self, mut views: Vec<GrantView>) -> Result<Vec<GrantView>, GnapError> {
        for v in views.iter_mut().filter(|v| v.state == GrantState::Pending) {
            let id = v.id.clone();
            let row = self
                .inner
                .store
                .call(move |c| Ok::<_, GnapError>(repo::grant(c, &id)?))
                .await?;
            if let Some(row) = row {
                v.summary = self.summary(&row, v).await?;
            }
        }
        Ok(views)
    }

    /// Grants newest first; `state` filters (`expired` selects pending grants past their window).
    pub async fn list(
        &self,
        state: Option<GrantState>,
        open_only: bool,
        limit: u32,
    ) -> Result<Vec<GrantView>, GnapError> {
        let db_state = state.map(GrantState::stored);
        let rows = self
            .inner
            .store
            .call(move |c| {
                let gs = repo::grants(c, db_state, open_only, limit)?;
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
            if state.is_none_or(|s| s == v.state) && !(open_only && v.state.is_closed()) {
                views.push(v);
            }
        }
        Ok(views)
    }

    /// What the interaction page at `/auth/interact/{id}/{nonce}` shows or where it sends the browser.
    /// Each time the page is served is a step of the grant's timeline (reloads repeat it), by `cause`.
    pub async fn interaction(
        &self,
        interact_id: &str,
        nonce: &str,
        cause: Cause,
    ) -> Result<InteractionView, GnapError> {
        let g = self.page_grant(interact_id, nonce).await?;
        let mut view = self.view(g.clone(), Vec::new()).await?;
        view.summary = self.summary(&g, &view).await?;
        let gid = g.id.clone();
        let sent_on = self
            .inner
            .store
            .call(move |c| {
                let steps = repo::steps_of_grant(c, &gid)?;
                Ok::<_, GnapError>(steps.iter().any(|s| s.kind == StepKind::FinishRedirect.as_str()))
            })
            .await?;
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
        let mut finished = None;
        let outcome = match view.state {
            state if sent_on && state != GrantState::Pending => InteractionOutcome::AlreadyDecided(state),
            GrantState::Pending => InteractionOutcome::Pending {
                expires_at: view.interaction_expires_at.unwrap_or(view.created_at),
            },
            GrantState::Approved | GrantState::Finalized => {
                let r = g.interact_ref.clone().unwrap_or_default();
                let (client_nonce, server_nonce) = (
                    g.client_nonce.as_deref().unwrap_or(""),
                    g.as_finish_nonce.as_deref().unwrap_or(""),
                );
                let hash = interaction_hash_std(client_nonce, server_nonce, &r, &g.grant_endpoint);
                match redirect(&[("hash", &hash), ("interact_ref", &r)])? {
                    Some(u) => {
                        finished = Some(serde_json::json!({
                            "interactRef": r,
                            "hash": hash,
                            "hashMethod": "sha-256",
                            "hashInputs": {
                                "clientNonce": client_nonce,
                                "serverNonce": server_nonce,
                                "interactRef": r,
                                "grantEndpoint": g.grant_endpoint,
                            },
                            "uri": u,
                        }));
                        InteractionOutcome::Redirect(u)
                    }
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
        let (kind, detail) = match (&outcome, finished) {
            (_, Some(hashed)) => (StepKind::FinishRedirect, hashed),
            (InteractionOutcome::Redirect(u), None) => {
                let result = url::Url::parse(u).ok().and_then(|u| {
                    u.query_pairs()
                        .find(|(k, _)| k == "result")
                        .map(|(_, v)| v.into_owned())
                });
                (
                    StepKind::FinishRedirect,
                    serde_json::json!({"result": result, "uri": u}),
                )
            }
            (InteractionOutcome::Pending { .. }, None) => (
                StepKind::InteractionOpened,
                serde_json::json!({"showed": "waiting for the decision"}),
            ),
            (InteractionOutcome::AlreadyDecided(state), None) => (
                StepKind::InteractionOpened,
                serde_json::json!({"showed": "already decided", "state": state.as_str()}),
            ),
            (_, None) => (
                StepKind::InteractionOpened,
                serde_json::json!({"showed": view.state.as_str()}),
            ),
        };
        let grant_id = g.id.clone();
        let now = self.now();
        self.inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                repeat_step(&tx, &grant_id, now, kind, &cause, &detail)?;
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await?;
        Ok(InteractionView {
            grant_id: view.id,
            client: view.client,
            client_name: view.client_name,
            description: view.description,
            summary: view.summary,
            outcome,
        })
    }
}
