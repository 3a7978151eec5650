//! What the store reports to the metrics: the jobs waiting, how long each held a connection, commit group sizes,
//! PostgreSQL's serialization retries, the WAL, and whether this node's caches are trusted.

use super::wal;

/// How busy the store thread is, for the metrics: the jobs waiting for it and how long each one took.
#[derive(Debug, Clone)]
pub struct Meters {
    /// Jobs sent and not yet started.
    pub queue_depth: prometheus_client::metrics::gauge::Gauge,
    /// Seconds each job (one transaction, or one read) held the connection.
    pub job_seconds: prometheus_client::metrics::histogram::Histogram,
    /// Jobs per commit group (1: a job ran by itself).
    pub group_jobs: prometheus_client::metrics::histogram::Histogram,
    /// PostgreSQL transactions run again after losing a serialization race.
    pub retries: prometheus_client::metrics::counter::Counter,
    /// PostgreSQL jobs that lost several serialization races and then ran alone.
    pub exclusive: prometheus_client::metrics::counter::Counter,
    /// PostgreSQL commit groups rolled back and run again job by job (a job could not share the group).
    pub group_splits: prometheus_client::metrics::counter::Counter,
    /// SQLite: the WAL's size and checkpoints.
    pub wal: wal::WalMeters,
    /// 1 while this node's caches of shared rows are trusted (always on SQLite; on PostgreSQL while the
    /// listener hears the other nodes), else 0.
    pub caches_trusted: prometheus_client::metrics::gauge::Gauge,
}

/// Store job durations: 10 µs to 2.5 s.
const JOB_BUCKETS: [f64; 17] = [
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5,
];

/// Commit group sizes: 1 to 64 (the most jobs a group takes).
const GROUP_BUCKETS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

impl Default for Meters {
    fn default() -> Self {
        Self {
            queue_depth: prometheus_client::metrics::gauge::Gauge::default(),
            job_seconds: prometheus_client::metrics::histogram::Histogram::new(JOB_BUCKETS),
            group_jobs: prometheus_client::metrics::histogram::Histogram::new(GROUP_BUCKETS),
            retries: prometheus_client::metrics::counter::Counter::default(),
            exclusive: prometheus_client::metrics::counter::Counter::default(),
            group_splits: prometheus_client::metrics::counter::Counter::default(),
            wal: wal::WalMeters::default(),
            caches_trusted: prometheus_client::metrics::gauge::Gauge::default(),
        }
    }
}
