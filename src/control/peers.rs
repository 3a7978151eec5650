//! ILP peers: list, show, add, change (credit limit included), remove (tokens are never shown, a generated
//! one once), and the ASE's own client wallet a sending peer needs. Views carry each peer's liquidity status.

use std::sync::Arc;

use super::{
    Error, Services,
    dto::{NewPeer, PeerView},
};
use crate::{
    ase::peers::{Peer, PeerPatch, Saved},
    money::Asset,
    wallet::{NewWallet, WalletError},
};

/// The ILP peers, from config.toml and added here (tokens never shown), with their account balances.
pub async fn list_peers(s: &Services) -> Result<Vec<PeerView>, Error> {
    let set = s.peers.current();
    let mut out = Vec::with_capacity(set.all().len());
    for p in set.all() {
        out.push(peer_view(s, p).await?);
    }
    Ok(out)
}

pub async fn show_peer(s: &Services, name: &str) -> Result<PeerView, Error> {
    let p = peer(s, name)?;
    peer_view(s, &p).await
}

/// The peer named `name` now.
pub(super) fn peer(s: &Services, name: &str) -> Result<Arc<Peer>, Error> {
    s.peers
        .current()
        .get(name)
        .ok_or_else(|| Error::NotFound(format!("no peer named {name:?}")))
}

/// A peer's view with its balances, limits and what is in flight.
pub(super) async fn peer_view(s: &Services, p: &Peer) -> Result<PeerView, Error> {
    let status = s.liquidity.status(p).await?;
    let name = p.name.clone();
    let thresholds = s.store.call(move |c| crate::thresholds::set_on(c, &name)).await?;
    Ok(PeerView::of(p, &[])
        .with_status(&status)
        .with_thresholds(&thresholds)
        .with_traffic(s.peers.traffic().of(&p.name)))
}

pub async fn create_peer(s: &Services, body: NewPeer) -> Result<PeerView, Error> {
    let (def, generate) = body.into_settings();
    let saved = s.peers.create(def, generate).await?;
    saved_view(s, saved).await
}

/// Changes a peer: its definition (admin peers only; checked and saved first, so a refused change sets no
/// limit either) and its credit limit (any peer, config ones too).
pub async fn update_peer(s: &Services, name: &str, mut patch: PeerPatch) -> Result<PeerView, Error> {
    let limit = patch.credit_limit.take();
    let saved = if patch.changes_definition() || limit.is_none() {
        Some(s.peers.update(name, patch).await?)
    } else {
        None
    };
    if let Some(limit) = limit {
        let p = peer(s, name)?;
        s.liquidity.set_credit_limit(&p, limit).await?;
    }
    match saved {
        Some(saved) => saved_view(s, saved).await,
        None => {
            let p = peer(s, name)?;
            peer_view(s, &p).await
        }
    }
}

pub async fn remove_peer(s: &Services, name: &str) -> Result<(), Error> {
    Ok(s.peers.remove(name).await?)
}

/// A saved peer's view; a peer that can send needs the ASE's client wallet (created on first need).
async fn saved_view(s: &Services, saved: Saved) -> Result<PeerView, Error> {
    if saved.peer.outgoing().is_some() {
        ensure_client_wallet(s, &saved.peer.asset).await?;
    }
    let mut view = peer_view(s, &saved.peer).await?;
    view.generated_incoming_tokens = saved.generated_tokens;
    Ok(view)
}

/// Makes sure the wallet `[ilp] client_wallet` exists (in `asset`, the first sending peer's, when it is
/// created) and publishes the ASE client key, so other ASEs can verify the ASE's signed requests.
pub async fn ensure_client_wallet(s: &Services, asset: &Asset) -> Result<(), WalletError> {
    let name = s.settings.ilp.client_wallet.clone();
    match s.wallets.get(&name).await {
        Ok(_) => {}
        Err(WalletError::NotFound(_)) => {
            s.wallets
                .create(NewWallet {
                    name: name.clone(),
                    asset: asset.clone(),
                    public_name: Some("opdesk ASE client".into()),
                    demo: false,
                })
                .await?;
            tracing::info!(wallet = %name, "created the ASE's client wallet for paying other ASEs");
        }
        Err(e) => return Err(e),
    }
    if let Some(key) = s.remote.client_jwk()
        && s.wallets.keys(&name).await?.find(&key.kid).is_none()
    {
        s.wallets.add_key(&name, key.clone()).await?;
    }
    Ok(())
}
