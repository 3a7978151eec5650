//! The account holder's consent on the interaction page (`[consent] decide`): which wallet's owner may decide a
//! grant, the page's sessions — a browser bound to one grant, with the CSRF token its forms echo, signed in once
//! the owner's passphrase checked out — failed sign-ins counted per grant and per wallet (in the store, so they
//! hold across restarts and nodes), and the owner's decision. Passphrases are checked off the async runtime.

use subtle::ConstantTimeEq as _;
use time::Duration;

use super::{Gnap, InteractionOutcome, InteractionView, access_of, repo};
use crate::{
    gnap::{
        GnapError,
        model::AccessItem,
        timeline::{Actor, Cause, StepKind},
    },
    ids, passphrase,
    settings::Decider,
    states::GrantState,
    store::{self, consent},
};

/// How long a page's session lives: time to sign in and decide.
const SESSION: Duration = Duration::minutes(15);

/// The cookie that carries a page's session.
pub const COOKIE: &str = "opdesk_consent";

/// The wallet whose owner may decide a grant on the page.
#[derive(Debug, Clone)]
pub(super) struct Owner {
    wallet_id: String,
    pub(super) name: String,
}

/// What the owner's part of the interaction page is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerStep {
    /// Not the owner's to decide (the operator's, or already decided): the page as it always was.
    None,
    /// The owner of `wallet` may decide: sign in first.
    SignIn { wallet: String, csrf: String },
    /// Signed in as the owner of `wallet`: approve or reject.
    Decide { wallet: String, csrf: String },
}

/// The interaction page for one visit: the grant and its outcome, the owner's part, and the session token to
/// set as the cookie when this visit opened one.
#[derive(Debug, Clone)]
pub struct OwnerPage {
    pub view: InteractionView,
    pub step: OwnerStep,
    pub set_cookie: Option<String>,
}

/// Why a sign-in or a decision was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The passphrase did not match.
    WrongPassphrase,
    /// Too many failed sign-ins on this grant or for this wallet lately: no passphrase is checked.
    TooMany,
    /// No session of this grant, or the form's CSRF token is not the session's (a stale or forged form).
    BadForm,
    /// The session is not signed in.
    NotSignedIn,
}

impl Refusal {
    /// In words, for the page.
    pub fn words(self) -> &'static str {
        match self {
            Self::WrongPassphrase => "That passphrase is not right.",
            Self::TooMany => "Too many failed sign-ins. Wait a while, then try again.",
            Self::BadForm => "This form has expired. Load the page again.",
            Self::NotSignedIn => "Sign in first.",
        }
    }
}

/// A new session token and its SHA-256 (what the store keeps).
fn new_token() -> Result<(String, String), GnapError> {
    let t = ids::random_secret(32).map_err(|e| GnapError::internal(&e))?;
    let h = ids::sha256_hex(&t);
    Ok((t, h))
}

fn new_csrf() -> Result<String, GnapError> {
    ids::random_secret(24).map_err(|e| GnapError::internal(&e))
}

/// The passphrase checks that may run at once in this process (every desk of a workshop shares it). A check of
/// a chosen passphrase takes ~13 ms of a core and 19 MiB (a generated one far less); a class signing in at the same instant waits here for its
/// turn instead of taking every core from the requests being served.
fn hashing_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        tokio::sync::Semaphore::new(slots_for(cores))
    })
}

/// Half the cores, at least one.
fn slots_for(cores: usize) -> usize {
    cores.div_ceil(2).max(1)
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Gnap {
    /// The wallet whose owner may decide grant `g` on the page: under `[consent] decide` other than
    /// `operator`, the one wallet of this ASE its access names, when that wallet's owner has a passphrase.
    pub(super) async fn owner_of(&self, g: &repo::GrantRow) -> Result<Option<Owner>, GnapError> {
        if self.inner.consent.decide == Decider::Operator {
            return Ok(None);
        }
        let mut urls: Vec<String> = access_of(g)?
            .into_iter()
            .filter_map(|a| match a {
                AccessItem::OutgoingPayment { identifier, .. } => Some(identifier),
                AccessItem::IncomingPayment { identifier, .. } => identifier,
                AccessItem::Quote { .. } => None,
            })
            .map(|u| crate::names::wallet_url(&u).to_owned())
            .collect();
        urls.sort();
        urls.dedup();
        let [url] = urls.as_slice() else {
            return Ok(None);
        };
        let Some(w) = self.local_wallet(url).await? else {
            return Ok(None);
        };
        let id = w.id.clone();
        let has = self
            .inner
            .store
            .call(move |c| Ok::<_, GnapError>(consent::passphrase(c, &id)?.is_some()))
            .await?;
        Ok(has.then_some(Owner {
            wallet_id: w.id.into(),
            name: w.name,
        }))
    }

    /// Whether an operator may decide grant `g`: not when `[consent] decide = "owner"` gives it to the owner.
    pub(super) async fn operator_may_decide(&self, g: &repo::GrantRow) -> Result<bool, GnapError> {
        Ok(self.inner.consent.decide != Decider::Owner || self.owner_of(g).await?.is_none())
    }

    /// The grant behind the page `/auth/interact/{interact_id}/{nonce}`.
    pub(super) async fn page_grant(&self, interact_id: &str, nonce: &str) -> Result<repo::GrantRow, GnapError> {
        let id = interact_id.to_owned();
        let g = self
            .inner
            .store
            .call(move |c| Ok::<_, GnapError>(repo::grant_by_interact_id(c, &id)?))
            .await?;
        g.filter(|g| g.interact_nonce.as_deref().is_some_and(|n| same(n, nonce)))
            .ok_or_else(|| GnapError::not_found("unknown interaction"))
    }

    /// The session `token` of grant `grant_id`, if it is one and lives.
    async fn session_of(&self, token: Option<&str>, grant_id: &str) -> Result<Option<consent::Session>, GnapError> {
        let Some(t) = token else {
            return Ok(None);
        };
        let (hash, now) = (ids::sha256_hex(t), self.now());
        let s = self
            .inner
            .store
            .call(move |c| Ok::<_, GnapError>(consent::session(c, &hash, now)?))
            .await?;
        Ok(s.filter(|s| s.grant_id == grant_id))
    }

    /// The page for a visit with session cookie `token` (if any): the grant as always, and when its owner may
    /// decide, the sign-in or the decision (opening a session when the visit has none of this grant).
    pub async fn owner_page(
        &self,
        interact_id: &str,
        nonce: &str,
        token: Option<&str>,
        cause: Cause,
    ) -> Result<OwnerPage, GnapError> {
        let view = self.interaction(interact_id, nonce, cause).await?;
        let none = |view| OwnerPage {
            view,
            step: OwnerStep::None,
            set_cookie: None,
        };
        if !matches!(view.outcome, InteractionOutcome::Pending { .. }) {
            return Ok(none(view));
        }
        let g = self.page_grant(interact_id, nonce).await?;
        let Some(owner) = self.owner_of(&g).await? else {
            return Ok(none(view));
        };
        if let Some(s) = self.session_of(token, &g.id).await? {
            let step = match s.wallet_id {
                Some(w) if w == owner.wallet_id => OwnerStep::Decide {
                    wallet: owner.name,
                    csrf: s.csrf,
                },
                _ => OwnerStep::SignIn {
                    wallet: owner.name,
                    csrf: s.csrf,
                },
            };
            return Ok(OwnerPage {
                view,
                step,
                set_cookie: None,
            });
        }
        let (token, hash) = new_token()?;
        let csrf = new_csrf()?;
        let (grant_id, c, now) = (g.id.clone(), csrf.clone(), self.now());
        self.inner
            .store
            .call(move |conn| Ok::<_, GnapError>(consent::open(conn, &hash, &grant_id, &c, now, now + SESSION)?))
            .await?;
        Ok(OwnerPage {
            view,
            step: OwnerStep::SignIn {
                wallet: owner.name,
                csrf,
            },
            set_cookie: Some(token),
        })
    }

    /// The owner signs in on the page with `passphrase`, the form carrying `csrf`: the new session token (the
    /// one the browser had never counts as signed in), or why not. Every attempt counts as a failure until the
    /// passphrase checked out, in one transaction with the limit's check, so concurrent guesses cannot slip
    /// past the limit.
    pub async fn owner_sign_in(
        &self,
        interact_id: &str,
        nonce: &str,
        token: Option<&str>,
        csrf: &str,
        passphrase: &str,
    ) -> Result<Result<String, Refusal>, GnapError> {
        let g = self.page_grant(interact_id, nonce).await?;
        if g.state != GrantState::Pending {
            return Ok(Err(Refusal::BadForm));
        }
        let Some(owner) = self.owner_of(&g).await? else {
            return Ok(Err(Refusal::BadForm));
        };
        let Some(session) = self.session_of(token, &g.id).await? else {
            return Ok(Err(Refusal::BadForm));
        };
        if !same(&session.csrf, csrf) {
            return Ok(Err(Refusal::BadForm));
        }
        let limits = self.inner.consent.clone();
        // a grant's own lockout never outlives the grant: its window is at most the grant's interaction window
        let grant_window = limits
            .failure_window_secs
            .min(self.inner.settings.interaction_expires_in_secs);
        let attempt = ids::new_id();
        let (a, grant_id, wallet_id, now) = (attempt.clone(), g.id.clone(), owner.wallet_id.clone(), self.now());
        let wallet_name = owner.name.clone();
        let checked = self
            .inner
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let since = now - Duration::seconds(i64::from(limits.failure_window_secs));
                let grant_since = now - Duration::seconds(i64::from(grant_window));
                let (on_grant, on_wallet) = consent::failures(&tx, &grant_id, &wallet_id, grant_since, since)?;
                let why = if on_grant >= limits.max_failures_per_grant {
                    Some("too many failed sign-ins on this grant")
                } else if on_wallet >= limits.max_failures_per_wallet {
                    Some("too many failed sign-ins for this wallet")
                } else {
                    None
                };
                if let Some(why) = why {
                    let detail = serde_json::json!({"why": why, "wallet": wallet_name});
                    super::repeat_step(
                        &tx,
                        &grant_id,
                        now,
                        StepKind::LockedOut,
                        &Cause::new(Actor::Browser, None),
                        &detail,
                    )?;
                    tx.commit()?;
                    return Ok::<_, GnapError>(None);
                }
                let Some(hash) = consent::passphrase(&tx, &wallet_id)? else {
                    return Ok(None);
                };
                consent::fail(&tx, &a, &wallet_id, &grant_id, now)?;
                tx.commit()?;
                Ok(Some((hash, on_grant.saturating_add(1))))
            })
            .await?;
        let Some((hash, failures)) = checked else {
            return Ok(Err(Refusal::TooMany));
        };
        let typed = passphrase.to_owned();
        let slot = hashing_slots().acquire().await.map_err(|e| GnapError::internal(&e))?;
        let ok = tokio::task::spawn_blocking(move || passphrase::verify(&typed, &hash))
            .await
            .map_err(|e| GnapError::internal(&e))?;
        drop(slot);
        if !ok {
            tracing::warn!(grant = %g.id, wallet = %owner.name, "a failed sign-in on the interaction page");
            let detail = serde_json::json!({
                "wallet": owner.name,
                "failures": failures,
                "limit": self.inner.consent.max_failures_per_grant,
            });
            let (grant_id, now) = (g.id.clone(), self.now());
            self.inner
                .store
                .call(move |c| {
                    let tx = store::immediate(c)?;
                    let cause = Cause::new(Actor::Browser, None);
                    super::repeat_step(&tx, &grant_id, now, StepKind::SignInFailed, &cause, &detail)?;
                    tx.commit()?;
                    Ok::<_, GnapError>(())
                })
                .await?;
            return Ok(Err(Refusal::WrongPassphrase));
        }
        let (new, new_hash) = new_token()?;
        let (c, wallet_id) = (new_csrf()?, owner.wallet_id);
        let old_hash = ids::sha256_hex(token.unwrap_or_default());
        self.inner
            .store
            .call(move |conn| {
                let tx = store::immediate(conn)?;
                consent::forget_failure(&tx, &attempt)?;
                consent::sign_in(&tx, &old_hash, &new_hash, &c, &wallet_id)?;
                tx.commit()?;
                Ok::<_, GnapError>(())
            })
            .await?;
        Ok(Ok(new))
    }

    /// Forgets the failed sign-ins on grant `grant_id`'s page, or (with `None`) those of the owner of the wallet
    /// `wallet_id` on every page, as `cause` asked; how many. The grant's timeline records it.
    pub async fn unlock(
        &self,
        grant_id: Option<&str>,
        wallet_id: Option<&str>,
        cause: Cause,
    ) -> Result<usize, GnapError> {
        if let Some(id) = grant_id {
            // an unknown grant is an error, not zero
            let id = id.to_owned();
            self.inner
                .store
                .call(move |c| {
                    repo::grant(c, &id)?.ok_or_else(|| GnapError::not_found("unknown grant"))?;
                    Ok::<_, GnapError>(())
                })
                .await?;
        }
        let (g, w, now) = (grant_id.map(str::to_owned), wallet_id.map(str::to_owned), self.now());
        self.inner
            .store
            .call(move |c| {
                let tx = store::immediate(c)?;
                let n = consent::unlock(&tx, g.as_deref(), w.as_deref())?;
                if let Some(g) = &g {
                    let detail = serde_json::json!({"forgotten": n});
                    super::step(&tx, g, now, StepKind::Unlocked, &cause, &detail)?;
                }
                tx.commit()?;
                Ok::<_, GnapError>(n)
            })
            .await
    }

    /// The signed-in owner decides on the page (the form carrying `csrf`); the page as it then is (its outcome
    /// sends the browser to the client's finish URI).
    pub async fn owner_decide(
        &self,
        interact_id: &str,
        nonce: &str,
        token: Option<&str>,
        csrf: &str,
        approve: bool,
        cause: Cause,
    ) -> Result<Result<InteractionView, Refusal>, GnapError> {
        let g = self.page_grant(interact_id, nonce).await?;
        let Some(session) = self.session_of(token, &g.id).await? else {
            return Ok(Err(Refusal::BadForm));
        };
        if !same(&session.csrf, csrf) {
            return Ok(Err(Refusal::BadForm));
        }
        let owner = self.owner_of(&g).await?;
        match (owner, &session.wallet_id) {
            (Some(o), Some(w)) if o.wallet_id == *w => {}
            _ => return Ok(Err(Refusal::NotSignedIn)),
        }
        let owner_cause = Cause::new(Actor::Owner, cause.request_id.clone());
        match self.decide(&g.id, approve, None, owner_cause).await {
            Ok(_) => {}
            // decided meanwhile (by the operator, or in another tab): the page says how it came out
            Err(e) if e.fault == crate::gnap::error::Fault::Conflict => {}
            Err(e) => return Err(e),
        }
        let id = g.id.clone();
        self.inner
            .store
            .call(move |c| Ok::<_, GnapError>(consent::close_grant(c, &id)?))
            .await?;
        Ok(Ok(self.interaction(interact_id, nonce, cause).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passphrase_checks_run_one_at_least_and_half_the_cores_at_most() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let slots = hashing_slots().available_permits();
        assert!(
            slots >= 1 && slots <= cores.div_ceil(2),
            "{slots} slots on {cores} cores"
        );
    }
}
