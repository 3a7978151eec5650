//! Peer liquidity and settlements: deposit or withdraw a peer's liquidity, record a settlement with it
//! (idempotent per transfer id). The rules live in `ase::liquidity`.

use super::{
    Error, Services,
    dto::{LiquidityMove, NewSettlement, PeerMoved},
    peers::{peer, peer_view},
};
use crate::ledger::Movement;

/// Deposits or withdraws liquidity of the peer `name` (exactly one of `deposit` and `withdraw`).
pub async fn move_peer_liquidity(s: &Services, name: &str, m: LiquidityMove) -> Result<PeerMoved, Error> {
    let (movement, value) = match (m.deposit, m.withdraw) {
        (Some(v), None) => (Movement::Deposit, v),
        (None, Some(v)) => (Movement::Withdrawal, v),
        _ => {
            return Err(Error::invalid(
                "invalid_request",
                "give exactly one of deposit and withdraw",
            ));
        }
    };
    if value.is_zero() {
        return Err(Error::invalid("invalid_amount", "the amount must be more than zero"));
    }
    let p = peer(s, name)?;
    let (transfer, _) = s.liquidity.move_liquidity(&p, movement, value, m.transfer_id).await?;
    Ok(PeerMoved {
        transfer,
        peer: peer_view(s, &p).await?,
    })
}

/// Records a settlement with the peer `name`.
pub async fn settle_peer(s: &Services, name: &str, body: NewSettlement) -> Result<PeerMoved, Error> {
    if body.amount.is_zero() {
        return Err(Error::invalid("invalid_amount", "the amount must be more than zero"));
    }
    let p = peer(s, name)?;
    let (transfer, _) = s.liquidity.settle(&p, body.direction, body.amount, body.id).await?;
    Ok(PeerMoved {
        transfer,
        peer: peer_view(s, &p).await?,
    })
}
