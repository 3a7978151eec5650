//! ILP traffic per peer, in memory and in this server process only (like what is in flight): packets the
//! peer brought us at `POST /ilp` and packets we sent through it, how many of each were fulfilled or
//! rejected, and the last reject (code, message, when, and which way). Counters start at zero with the
//! process; the console computes packets per second from two readings. Nothing here touches the store.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use serde::{Deserialize, Serialize};

use crate::ilp::{
    Packet,
    sender::{BoxFuture, Transport},
};

/// How many packets went one way through a peer, and how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Packets {
    pub total: u64,
    pub fulfilled: u64,
    pub rejected: u64,
}

/// The last reject through a peer: its code, its message (as the rejecting node wrote it), when, and
/// whether it answered a packet we sent (`out`) or one the peer brought us (`in`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastReject {
    pub code: String,
    pub message: String,
    pub at: String,
    pub direction: String,
}

/// One peer's traffic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerTraffic {
    pub packets_in: Packets,
    pub packets_out: Packets,
    pub last_reject: Option<LastReject>,
}

/// What a packet came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Fulfilled,
    /// Rejected with this code and message.
    Rejected(String, String),
    /// No reply (the transport failed, or the reply was not a packet): counted, neither fulfilled nor rejected.
    None,
}

impl Outcome {
    /// The outcome an OER reply says.
    pub fn of_reply(bytes: &[u8]) -> Self {
        match Packet::decode(bytes) {
            Ok(Packet::Fulfill(_)) => Self::Fulfilled,
            Ok(Packet::Reject(r)) => Self::Rejected(r.code.as_str().to_owned(), r.message),
            _ => Self::None,
        }
    }
}

/// The traffic of every peer of one server, and the packet counters the metrics show. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Traffic(Arc<Mutex<HashMap<String, PeerTraffic>>>, crate::metrics::Packets);

impl Traffic {
    /// The packet counters, by direction and result, of all peers together.
    pub fn meters(&self) -> &crate::metrics::Packets {
        &self.1
    }

    /// Counts one packet through `peer` (`out`: we sent it) that came to `outcome` at `at`.
    pub fn count(&self, peer: &str, out: bool, outcome: Outcome, at: String) {
        let result = match &outcome {
            Outcome::Fulfilled => "fulfilled",
            Outcome::Rejected(code, _) => match code.as_bytes().first() {
                Some(b'F') => "reject_F",
                Some(b'T') => "reject_T",
                _ => "reject_R",
            },
            Outcome::None => "no_reply",
        };
        let direction = if out { "out" } else { "in" };
        self.1
            .0
            .get_or_create(&crate::metrics::PacketLabels { direction, result })
            .inc();
        if let Outcome::Rejected(code, _) = &outcome {
            let code = crate::metrics::reject_code_label(code);
            self.1
                .1
                .get_or_create(&crate::metrics::RejectLabels { direction, code })
                .inc();
        }
        let mut m = match self.0.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let t = m.entry(peer.to_owned()).or_default();
        let p = if out { &mut t.packets_out } else { &mut t.packets_in };
        p.total += 1;
        match outcome {
            Outcome::Fulfilled => p.fulfilled += 1,
            Outcome::Rejected(code, message) => {
                p.rejected += 1;
                t.last_reject = Some(LastReject {
                    code,
                    message,
                    at,
                    direction: direction.to_owned(),
                });
            }
            Outcome::None => {}
        }
    }

    /// Each peer's last rejected packet (either way), as (peer, reject).
    pub fn last_rejects(&self) -> Vec<(String, LastReject)> {
        let m = match self.0.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        m.iter()
            .filter_map(|(peer, t)| t.last_reject.clone().map(|r| (peer.clone(), r)))
            .collect()
    }

    /// The traffic through `peer` so far (zero when none).
    pub fn of(&self, peer: &str) -> PeerTraffic {
        match self.0.lock() {
            Ok(m) => m.get(peer).cloned().unwrap_or_default(),
            Err(poisoned) => poisoned.into_inner().get(peer).cloned().unwrap_or_default(),
        }
    }
}

/// A transport that counts what goes through it as packets sent through `peer`.
pub struct Counted {
    pub inner: Arc<dyn Transport>,
    pub traffic: Traffic,
    pub peer: String,
    pub clock: crate::clock::SharedClock,
}

impl Transport for Counted {
    fn send(&self, prepare: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        Box::pin(async move {
            let reply = self.inner.send(prepare).await;
            let outcome = match &reply {
                Ok(bytes) => Outcome::of_reply(bytes),
                Err(_) => Outcome::None,
            };
            let at = crate::clock::format_ts(self.clock.now());
            self.traffic.count(&self.peer, true, outcome, at);
            reply
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_way_and_keeps_the_last_reject() {
        let t = Traffic::default();
        t.count("p", true, Outcome::Fulfilled, "t1".into());
        t.count(
            "p",
            true,
            Outcome::Rejected("T04".into(), "no room".into()),
            "t2".into(),
        );
        t.count("p", false, Outcome::Fulfilled, "t3".into());
        t.count("p", false, Outcome::None, "t4".into());
        let p = t.of("p");
        assert_eq!(
            (p.packets_out, p.packets_in),
            (
                Packets {
                    total: 2,
                    fulfilled: 1,
                    rejected: 1
                },
                Packets {
                    total: 2,
                    fulfilled: 1,
                    rejected: 0
                }
            )
        );
        assert_eq!(
            p.last_reject,
            Some(LastReject {
                code: "T04".into(),
                message: "no room".into(),
                at: "t2".into(),
                direction: "out".into()
            })
        );
        assert_eq!(t.of("other"), PeerTraffic::default());
        let n = |direction, result| {
            t.meters()
                .0
                .get(&crate::metrics::PacketLabels { direction, result })
                .map(|c| c.get())
        };
        assert_eq!(
            (
                n("out", "fulfilled"),
                n("out", "reject_T"),
                n("in", "no_reply"),
                n("in", "reject_F")
            ),
            (Some(1), Some(1), Some(1), None)
        );
    }
}
