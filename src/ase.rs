//! The Open Payments account servicing side: wallet addresses now; incoming payments, quotes and
//! outgoing payments join here. Each submodule owns its model, its service (the only writer of its tables)
//! and its thin routes. The ILP parts that need the store or these services live here too, above the
//! wire-only `ilp`: the peers ([`peers`]) and the STREAM receiver service ([`stream_receiver`]).

pub mod engine;
pub mod exchange;
pub mod incoming;
pub mod liquidity;
pub mod metadata;
pub mod outgoing;
pub mod peers;
pub mod quotes;
pub mod remote;
pub mod spsp;
pub mod stream_receiver;
pub mod traffic;
