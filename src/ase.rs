//! The Open Payments account servicing side: wallet addresses now; incoming payments, quotes and
//! outgoing payments join here. Each submodule owns its model, its service (the only writer of its tables)
//! and its thin routes.

pub mod engine;
pub mod incoming;
pub mod outgoing;
pub mod peers;
pub mod quotes;
pub mod remote;
pub mod stream_receiver;
pub mod wallet;
