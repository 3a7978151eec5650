//! How a PostgreSQL node runs store jobs: the jobs waiting together in one `SERIALIZABLE` transaction (a
//! commit group, [`run_group`]), split into a transaction each when one of them cannot share it; a job again
//! after losing a serialization race, alone after losing a few ([`RUN_LOCK`]); queued behind the jobs that
//! write the same hot row when it names one (`Store::call_queued`); each delivered once its transaction
//! committed.

use std::{
    sync::{Mutex, mpsc},
    thread,
    time::Duration,
};

use super::{Connection, Error, Job, Meters, Msg, take_jobs};

/// The queue of jobs that write the row `key` names: 32 bits of its FNV-1a hash (the same on every node).
pub(super) fn queue_of(key: &str) -> i32 {
    let h = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    i32::from_ne_bytes(((h >> 32) as u32 ^ h as u32).to_ne_bytes())
}

/// Times a PostgreSQL job runs alongside others before it runs alone.
const OPTIMISTIC_ATTEMPTS: u32 = 3;
/// Times a job that runs alone may still lose a race (only to a client that is not opdesk) before it gives up.
const EXCLUSIVE_ATTEMPTS: u32 = 3;
/// The session advisory lock around every PostgreSQL job of every node: held shared while jobs run side by
/// side, exclusive by a job that lost [`OPTIMISTIC_ATTEMPTS`] serialization races. PostgreSQL queues new
/// shared requests behind a waiting exclusive one, so that job soon runs alone and cannot lose again.
const RUN_LOCK: i64 = 0x6f70_6465_736b_0003;

/// Most jobs committed together in one PostgreSQL transaction: enough to spread a transaction's fixed costs
/// (its round trips, its commit record and flush, its serialization bookkeeping) over several jobs, few
/// enough that a group that must run again job by job loses little.
const MAX_GROUP: usize = 16;

/// A connection thread's loop: takes the jobs waiting in `rx` (up to [`MAX_GROUP`]) and runs them as one
/// commit group, then those that must run alone (`Store::call_alone`) each in a transaction of its own, until
/// the store closes.
pub(super) fn serve(mut conn: Connection, url: &str, rx: &Mutex<mpsc::Receiver<Msg>>, m: &Meters) {
    loop {
        let taken = match rx.lock() {
            Ok(rx) => take_jobs(&rx, MAX_GROUP),
            Err(_) => None,
        };
        let Some((jobs, closing)) = taken else { break };
        m.queue_depth.dec_by(jobs.len() as i64);
        let (alone, group): (Vec<Job>, Vec<Job>) = jobs.into_iter().partition(|j| j.alone());
        run_group(&mut conn, url, group, m);
        one_by_one(&mut conn, url, alone, m);
        if closing {
            break;
        }
    }
    if let Err(e) = conn.close() {
        tracing::debug!(error = %e, "closing a PostgreSQL connection");
    }
}

/// Runs `jobs` in one `SERIALIZABLE` transaction — after waiting for the rows its queued jobs write
/// (`Store::call_queued`: the packets through one peer run many to a transaction) — each job's first write
/// transaction being part of it
/// (no savepoint: a savepoint costs PostgreSQL two round trips), and delivers every result once it
/// committed. When a job cannot share the transaction — a statement of it failed (which aborts a
/// PostgreSQL transaction), its write transaction ended uncommitted, it lost a serialization race — or the
/// commit fails on a live connection, the group rolls back and every job runs again by itself
/// ([`run_serializable`]), so each one's outcome is what it would have been alone.
fn run_group(conn: &mut Connection, url: &str, mut jobs: Vec<Job>, m: &Meters) {
    if jobs.len() <= 1 {
        return one_by_one(conn, url, jobs, m);
    }
    let started = std::time::Instant::now();
    if let Err(e) = reconnect(conn, url) {
        return abort_all(jobs, &e.to_string());
    }
    // the rows the group's queued jobs write: waited for first, before the snapshot and the run lock, in
    // one order on every path (ascending), so that groups holding several never wait on each other in a circle
    let mut keys: Vec<i32> = jobs.iter().filter_map(|j| j.queue()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut unlock = format!("SELECT pg_advisory_unlock_shared({RUN_LOCK})");
    for k in &keys {
        unlock.push_str(&format!("; {}", unqueue_sql(*k)));
    }
    if !keys.is_empty() {
        let lock: Vec<String> = keys.iter().map(|k| queue_sql(*k)).collect();
        if let Err(e) = conn.execute_batch(&lock.join("; ")) {
            // some of the locks may be held: give back what this session holds, then run the jobs one by one
            let _ = conn.execute_batch("SELECT pg_advisory_unlock_all()");
            tracing::debug!(error = %e, "a commit group could not queue for its rows: its jobs run one by one");
            return one_by_one(conn, url, jobs, m);
        }
    }
    if let Err(e) = conn.begin_with(&format!("SELECT pg_advisory_lock_shared({RUN_LOCK})")) {
        let _ = conn.rollback();
        release_run_lock(conn, &unlock);
        tracing::debug!(error = %e, "a commit group could not begin: its jobs run one by one");
        return one_by_one(conn, url, jobs, m);
    }
    let mut shared = true;
    for job in &mut jobs {
        conn.next_group_job();
        job.run(conn);
        // every mark read (each clears its own)
        let (conflicted, doomed, failed) = (conn.take_conflict(), conn.take_doomed(), conn.take_failed());
        if conflicted || doomed || failed {
            shared = false;
            break;
        }
    }
    if !shared {
        if let Err(e) = conn.end_then("ROLLBACK", &unlock) {
            tracing::debug!(error = %e, "rolling back a commit group");
            release_run_lock(conn, &unlock);
        }
        conn.take_conflict();
        m.group_splits.inc();
        return one_by_one(conn, url, jobs, m);
    }
    match conn.end_then("COMMIT", &unlock) {
        Ok(()) => {
            m.group_jobs.observe(jobs.len() as f64);
            let each = started.elapsed().as_secs_f64() / jobs.len() as f64;
            for job in jobs {
                m.job_seconds.observe(each);
                job.deliver(Ok(()));
            }
        }
        Err(e) => {
            release_run_lock(conn, &unlock);
            conn.take_conflict();
            if conn.is_broken() {
                // whether the commit happened is unknown: say so to every job
                abort_all(jobs, &e.to_string());
            } else {
                m.group_splits.inc();
                one_by_one(conn, url, jobs, m);
            }
        }
    }
}

/// Tells every job of a group that its work did not (or may not have) committed.
fn abort_all(jobs: Vec<Job>, why: &str) {
    for job in jobs {
        job.deliver(Err(Error::Aborted(why.to_owned())));
    }
}

/// The statement that waits for the row queue `k` names (a session advisory lock), and the one that leaves it.
fn queue_sql(k: i32) -> String {
    format!("SELECT pg_advisory_lock({QUEUE_CLASS}, {k})")
}

fn unqueue_sql(k: i32) -> String {
    format!("SELECT pg_advisory_unlock({QUEUE_CLASS}, {k})")
}

/// Runs a split group's jobs each in a transaction of its own, in their order.
fn one_by_one(conn: &mut Connection, url: &str, jobs: Vec<Job>, m: &Meters) {
    for job in jobs {
        m.group_jobs.observe(1.0);
        run_serializable(conn, url, job, m);
    }
}

/// Opens the connection again if it was found broken.
fn reconnect(conn: &mut Connection, url: &str) -> Result<(), Error> {
    if conn.is_broken() {
        *conn = Connection::connect_postgres(url).map_err(|e| {
            tracing::warn!(error = %e, "cannot reconnect to PostgreSQL");
            Error::from(e)
        })?;
    }
    Ok(())
}

/// Runs a job on PostgreSQL in a `SERIALIZABLE` transaction of its own and delivers its result once that
/// transaction committed. A job that lost a serialization race runs again after a short random pause; after
/// [`OPTIMISTIC_ATTEMPTS`] it runs alone (see [`RUN_LOCK`]), so that under heavy contention jobs progress
/// one at a time, as on SQLite, instead of failing. A connection found broken is opened again first.
fn run_serializable(conn: &mut Connection, url: &str, mut job: Job, m: &Meters) {
    let started = std::time::Instant::now();
    if let Err(e) = reconnect(conn, url) {
        job.deliver(Err(e));
        return;
    }
    let mut attempt = 0;
    let committed = loop {
        attempt += 1;
        let alone = attempt > OPTIMISTIC_ATTEMPTS;
        if attempt == OPTIMISTIC_ATTEMPTS + 1 {
            m.exclusive.inc();
        }
        let outcome = run_once(conn, &mut job, alone);
        match outcome {
            Ok(true) => break Ok(()),
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        if attempt >= OPTIMISTIC_ATTEMPTS + EXCLUSIVE_ATTEMPTS {
            tracing::warn!(attempts = attempt, "a transaction kept losing serialization races");
            break Err(Error::Busy(
                "the transaction kept conflicting with concurrent ones".into(),
            ));
        }
        m.retries.inc();
        if !alone && attempt < OPTIMISTIC_ATTEMPTS {
            thread::sleep(backoff(attempt));
        }
    };
    m.job_seconds.observe(started.elapsed().as_secs_f64());
    job.deliver(committed);
}

/// One attempt of a job in its own `SERIALIZABLE` transaction, holding [`RUN_LOCK`] (exclusive when `alone`):
/// whether it committed (`false`: it lost a serialization race and was rolled back). The lock is released
/// whatever happens. Shared, it is taken by the transaction's first statement and given back right after its
/// end, in the same round trips; exclusive, before the transaction begins (its snapshot is then taken after
/// the wait, when no other job runs).
fn run_once(conn: &mut Connection, job: &mut Job, alone: bool) -> Result<bool, Error> {
    // a queued job waits for its row first, in a round trip of its own: before its snapshot (statements sent
    // with the `BEGIN` would be part of its transaction), and before the run lock, in every order
    let unqueue = match job.queue() {
        Some(k) => {
            conn.execute_batch(&queue_sql(k))?;
            format!("; {}", unqueue_sql(k))
        }
        None => String::new(),
    };
    let unlock = if alone {
        format!("SELECT pg_advisory_unlock({RUN_LOCK}){unqueue}")
    } else {
        format!("SELECT pg_advisory_unlock_shared({RUN_LOCK}){unqueue}")
    };
    let begun = if alone {
        conn.execute_batch(&format!("SELECT pg_advisory_lock({RUN_LOCK})"))
            .and_then(|()| conn.begin_job(""))
    } else {
        conn.begin_job(&format!("SELECT pg_advisory_lock_shared({RUN_LOCK})"))
    };
    if let Err(e) = begun {
        // whichever statement failed: nothing of the job ran; end what may have begun, give the locks back
        let _ = conn.rollback();
        release_run_lock(conn, &unlock);
        return Err(Error::from(e));
    }
    job.run(conn);
    let conflicted = conn.take_conflict();
    // a job whose write transaction ended uncommitted has its error to deliver: its work rolls back, and it
    // is done (not run again)
    let doomed = conn.take_doomed();
    let end = if conflicted || doomed { "ROLLBACK" } else { "COMMIT" };
    match conn.end_then(end, &unlock) {
        Ok(()) => Ok(!conflicted),
        Err(e) => {
            release_run_lock(conn, &unlock);
            match e.is_conflict() {
                true => {
                    conn.take_conflict();
                    Ok(false)
                }
                false if end == "ROLLBACK" => Err(Error::from(e)),
                false => Err(Error::Aborted(e.to_string())),
            }
        }
    }
}

/// Gives [`RUN_LOCK`] back with `unlock` (a warning if this session did not hold it).
/// The class (first key) of the advisory locks queued jobs wait on: `op`.
const QUEUE_CLASS: i32 = 0x6f70;

fn release_run_lock(conn: &Connection, unlock: &str) {
    if let Err(e) = conn.execute_batch(unlock) {
        // the connection is broken, which released the lock with it
        tracing::warn!(error = %e, "releasing the PostgreSQL run lock failed");
    }
}

/// A random pause before attempt `attempt + 1`: up to 1 ms after the first conflict, doubling to 32 ms.
fn backoff(attempt: u32) -> Duration {
    let cap = 1_000u64 << attempt.min(5);
    let mut b = [0u8; 8];
    let jitter = getrandom::fill(&mut b)
        .map(|()| u64::from_le_bytes(b))
        .unwrap_or(cap / 2);
    Duration::from_micros(jitter % cap)
}
