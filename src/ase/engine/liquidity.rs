//! The engine's side of peer liquidity (`ase::liquidity`): a remote packet claims room through its peer
//! before it is sent, and releases it once its outcome is committed or it was not sent. A packet with no room
//! makes the payment wait — still `sending`, no attempt counted — with the reason on the payment.

use time::Duration;

use super::Engine;
use crate::ase::liquidity::{ClaimId, Claimed, RECHECK_MS, WAIT_REASON};
use crate::{
    events::DomainEvent,
    store::payments::{self as repo, OutgoingRow},
};

/// Whether a payment's next packets may go through its peer now.
pub(super) enum Room {
    /// They may, with their claim (none for a packet without money, or without a liquidity service).
    Go(Option<ClaimId>),
    /// Not now: the payment was set to wait for liquidity, or the store could not be read (handled like any
    /// step failure). Its connection is kept.
    Wait,
    /// Never: the payment stopped sending (an operator cancelled it). Its connection ends.
    Stop,
}

impl Engine {
    /// Whether a packet of `source` may go through `peer` now (see [`Room`] and [`crate::ase::liquidity`]).
    pub(super) async fn claim_room(&self, p: &OutgoingRow, peer: &crate::ase::peers::Peer, source: u64) -> Room {
        let Some(liquidity) = &self.liquidity else {
            return Room::Go(None);
        };
        if source == 0 {
            return Room::Go(None);
        }
        match liquidity.claim(peer, source, &p.id).await {
            Ok(Claimed::Room(claim)) => {
                if p.failure_reason.as_deref() == Some(WAIT_REASON) {
                    let (id, now) = (p.id.clone(), self.clock.now());
                    let ended = self.store.call(move |c| repo::end_wait(c, &id, WAIT_REASON, now)).await;
                    match ended {
                        Ok(_) => {
                            tracing::info!(payment = %p.id, peer = %peer.name, "the peer has liquidity again: the payment resumes")
                        }
                        Err(e) => {
                            tracing::warn!(payment = %p.id, error = %e, "cannot clear a payment's wait for liquidity")
                        }
                    }
                }
                Room::Go(Some(claim))
            }
            Ok(Claimed::NoRoom(why)) => {
                self.wait_for_liquidity(p, &why).await;
                Room::Wait
            }
            Ok(Claimed::Stopped) => {
                tracing::info!(payment = %p.id, "the payment stopped sending before its next packet left");
                Room::Stop
            }
            Err(e) if e.is_full() => {
                self.pause_for_space(&e);
                Room::Wait
            }
            Err(e) => {
                self.transient(&p.id, "internal", &e.to_string()).await;
                Room::Wait
            }
        }
    }

    /// A packet whose claim is `claim` is no longer in flight (it was not fulfilled).
    pub(super) async fn release_room(&self, claim: Option<ClaimId>) {
        if let (Some(l), Some(claim)) = (&self.liquidity, claim) {
            l.release(claim).await;
        }
    }

    async fn wait_for_liquidity(&self, p: &OutgoingRow, why: &str) {
        let now = self.clock.now();
        let (id, message) = (p.id.clone(), why.to_owned());
        let next = now + Duration::milliseconds(RECHECK_MS);
        let waited = self
            .store
            .call(move |c| repo::wait(c, &id, next, WAIT_REASON, &message, now))
            .await;
        match waited {
            Ok(_) if p.failure_reason.as_deref() != Some(WAIT_REASON) => {
                tracing::warn!(payment = %p.id, "{why}");
                self.bus.publish(DomainEvent::OutgoingPaymentProgress {
                    id: p.id.clone().into(),
                    sent: p.sent_amount,
                });
            }
            Ok(_) => tracing::debug!(payment = %p.id, "{why}"),
            Err(e) if e.is_full() => self.pause_for_space(&e),
            Err(e) => tracing::error!(payment = %p.id, error = %e, "cannot record a wait for liquidity"),
        }
    }
}
