//! One integration-test binary: the real server on port 0 with a temp data dir, driven over real HTTP.

// The whole binary is test code: panicking on unexpected values is the point.
#![allow(clippy::unwrap_used)]

mod admin_api;
mod architecture;
mod capture_secrets;
mod classroom;
mod cli;
mod common;
mod compat;
mod console;
mod crash;
mod engine;
mod engine_props;
mod events;
mod files;
mod fuzz_checks;
mod fuzz_replay;
mod gnap_flow;
mod grant_timeline;
mod hooks;
mod ilp_receiver;
mod ilp_sender;
mod ledger_props;
mod metrics;
mod money_exact;
mod owner_consent;
mod ownership;
mod peer_liquidity;
mod rs_api;
mod security;
mod service;
mod sigdebug;
mod sources;
mod spsp;
mod states;
mod storage_full;
mod stream_pipeline;
mod thresholds;
mod tls;
mod two_nodes;
mod two_processes;
mod wallet_api;
mod workshop;
