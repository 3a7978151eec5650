//! What people see of grants: the operator's views (list, show) and the interaction page's view of one
//! request.

use super::*;

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

impl Gnap {
    pub(super) async fn view(&self, g: repo::GrantRow, tokens: Vec<repo::TokenRow>) -> Result<GrantView, GnapError> {
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
