//! Access tokens: issuing them with a grant, rotation and revocation by the client, and the introspection
//! the resource server calls in-process (cached briefly; a revoked grant is forgotten at once).

use super::*;

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

impl Gnap {
    /// A new token row and its value.
    pub(super) fn new_token(
        &self,
        grant_id: &str,
        rotated_from: Option<String>,
        now: OffsetDateTime,
    ) -> Result<(repo::TokenRow, String), GnapError> {
        let value = secret()?;
        let row = repo::TokenRow {
            id: ids::new_id(),
            grant_id: grant_id.into(),
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

    pub(super) fn token_response(
        &self,
        t: &repo::TokenRow,
        value: &str,
        access: Vec<AccessItem>,
    ) -> AccessTokenResponse {
        AccessTokenResponse {
            value: value.to_owned(),
            manage: self.manage_uri(&t.manage_id),
            expires_in: t.expires_in,
            access,
        }
    }

    /// Finds a token by its management id (`POST`/`DELETE /auth/token/{id}`) and, when the request presents
    /// a token (`Authorization: GNAP …`), checks it is that one. The management id alone is enough, as at the
    /// reference ASE: the caller then checks the request's signature against the grant's client key.
    pub async fn token_for_manage(
        &self,
        manage_id: &str,
        presented: Option<&str>,
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
        if let Some(presented) = presented
            && !bool::from(t.value_hash.as_bytes().ct_eq(ids::sha256_hex(presented).as_bytes()))
        {
            return Err(GnapError::unauthorized_client(
                "the access token does not match the managed token",
            ));
        }
        Ok((t, g))
    }

    /// `POST /auth/token/{id}`: a new value and management URL with the same access; the old ones die.
    pub async fn rotate(&self, token_id: &str, cause: Cause) -> Result<RotateResponse, GnapError> {
        let id = token_id.to_owned();
        let now = self.now();
        let this = self.clone();
        let (t, value, access, grant_id, recorded) = self
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
                if !repo::revoke_token(&tx, &t.id, now)? {
                    return Err(GnapError::unauthorized_client("invalid access token"));
                }
                notify::tell_forget(&tx, &Forget::Grant(g.id.to_string()))?;
                let (new, value) = this.new_token(&g.id, Some(t.id.clone()), now)?;
                repo::insert_token(&tx, &new)?;
                let mut rotated = token_detail(&new);
                rotated["fromTokenId"] = t.id.clone().into();
                rotated["fromHint"] = format!("{}…", t.value_hint).into();
                step(&tx, &g.id, now, StepKind::TokenRotated, &cause, &rotated)?;
                let access = access_of(&g)?;
                let event = DomainEvent::TokenRotated {
                    grant_id: g.id.clone().into(),
                };
                let recorded = outbox::append(&tx, now, event)?;
                tx.commit()?;
                Ok::<_, GnapError>((new, value, access, g.id, recorded))
            })
            .await?;
        self.invalidate_grant(&grant_id);
        self.inner.bus.publish_recorded([recorded]);
        Ok(RotateResponse {
            access_token: self.token_response(&t, &value, access),
        })
    }

    /// `DELETE /auth/token/{id}`: idempotent (only the first revocation is a step of the grant's timeline).
    pub async fn revoke_token(&self, token_id: &str, cause: Cause) -> Result<(), GnapError> {
        let id = token_id.to_owned();
        let now = self.now();
        let (recorded, grant_id) = self
            .inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                let (t, _) = repo::token_with_grant(&tx, &id)?.ok_or_else(|| GnapError::not_found("unknown token"))?;
                let recorded = if repo::revoke_token(&tx, &t.id, now)? {
                    notify::tell_forget(&tx, &Forget::Grant(t.grant_id.to_string()))?;
                    step(&tx, &t.grant_id, now, StepKind::TokenRevoked, &cause, &token_detail(&t))?;
                    let event = DomainEvent::TokenRevoked {
                        grant_id: t.grant_id.clone().into(),
                    };
                    Some(outbox::append(&tx, now, event)?)
                } else {
                    None
                };
                tx.commit()?;
                Ok::<_, GnapError>((recorded, t.grant_id))
            })
            .await?;
        self.invalidate_grant(&grant_id);
        self.inner.bus.publish_recorded(recorded);
        Ok(())
    }

    pub(super) fn invalidate_grant(&self, grant_id: &str) {
        if let Ok(mut cache) = self.inner.token_cache.lock() {
            cache.forget(Some(grant_id));
        }
    }

    /// The token check for the resource server: `None` unless the token is live (known, not revoked, not
    /// expired, its grant issued and not revoked). Cached briefly; revocation and rotation clear the cache.
    pub async fn introspect(&self, value: &str) -> Result<Option<Arc<TokenInfo>>, GnapError> {
        let hash = ids::sha256_hex(value);
        let now = self.now();
        let trusted = self.inner.store.coherence().trusted();
        let generation = match self.inner.token_cache.lock() {
            Ok(cache) if trusted => {
                if let Some((info, at)) = cache.live.get(&hash)
                    && at.elapsed() < TOKEN_CACHE_TTL
                {
                    return Ok((info.expires_at > now).then(|| info.clone()));
                }
                Some(cache.generation)
            }
            _ => None,
        };
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
        let info = Arc::new(TokenInfo {
            grant_id: g.id.clone().into(),
            token_id: t.id.clone(),
            client: client_of(&g)?,
            access: access_of(&g)?,
            expires_at: t.created_at + Duration::seconds(t.expires_in),
            owner_approved: g.interactive,
        });
        // kept only while the coherence trusts caches (and a read that began before a revocation, here or told
        // by another node, does not put the token back)
        if self.inner.store.coherence().trusted()
            && let Ok(mut cache) = self.inner.token_cache.lock()
            && Some(cache.generation) == generation
        {
            if cache.live.len() > 10_000 {
                cache.live.retain(|_, (_, at)| at.elapsed() < TOKEN_CACHE_TTL);
            }
            cache.live.insert(hash, (info.clone(), Instant::now()));
        }
        Ok((info.expires_at > now).then_some(info))
    }
}

/// Live tokens by hash, as last read, with when they were read; `generation` is bumped by every
/// invalidation, so that a read which began before a revocation never puts the token back. Kept while the
/// store's coherence trusts caches: on PostgreSQL, a node that revokes or rotates tells every node to forget
/// the grant's tokens (in the revocation's transaction).
#[derive(Default)]
pub(super) struct TokenCache {
    live: HashMap<String, (Arc<TokenInfo>, Instant)>,
    generation: u64,
}

impl TokenCache {
    /// Forgets the tokens of grant `id` (every token: `None`).
    pub(super) fn forget(&mut self, grant: Option<&str>) {
        self.generation += 1;
        match grant {
            Some(id) => self.live.retain(|_, (info, _)| info.grant_id != id),
            None => self.live.clear(),
        }
    }
}
