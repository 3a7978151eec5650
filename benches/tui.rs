//! Frame time of the console with 1,000, 100,000 and 1,000,000 incoming payments in the store (and as many
//! outgoing payments, one in a hundred failed): each "resync + frame" loads the first page of the Incoming pane
//! through the control task's keyset query (what a resync does) and renders it to a 120×40 `TestBackend`; a
//! "redraw" is a tick and a frame. The Overview load (its counters, balances and activity: what every tick
//! reloads while payments move) and the Outgoing pane's failed-only page are timed on their own. Prints
//! p50/p99 and the process's resident memory, which must not grow with the row count.
//!
//! `cargo bench --bench tui` (all sizes) or `cargo bench --bench tui -- 1000000` (the sizes named).

use std::time::{Duration, Instant};

use opdesk::{
    app::AppCore,
    settings::Settings,
    states::OutgoingState,
    tui::{
        self,
        app::{App, Effect, Msg},
        pane::Pane,
        panes::Panes,
    },
};
use ratatui::{Terminal, backend::TestBackend};

/// The allocator the `opdesk` binary runs with, so that the bench measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn pct(v: &[Duration], p: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn summary(v: &[Duration]) -> String {
    format!("p50 {:>9.3?} p99 {:>9.3?}", pct(v, 0.5), pct(v, 0.99))
}

/// `rows` incoming payments of `wallet` (all open) and `rows` outgoing payments (one in a hundred failed, the
/// rest completed), each table filled by one `INSERT … SELECT` over a recursive counter in one transaction.
fn fill(c: &mut opdesk::store::Connection, wallet: &str, rows: usize) -> Result<(), opdesk::store::Error> {
    let now = opdesk::clock::format_ts(time::OffsetDateTime::now_utc());
    let rows = i64::try_from(rows).unwrap_or(i64::MAX);
    // in transactions of 50,000 rows of each table, as a store fills over time: one statement of a million
    // rows would hold a million rows' pages in its statement journal (in memory: `temp_store`)
    for start in (0..rows).step_by(50_000) {
        let end = (start + 50_000).min(rows);
        let tx = opdesk::store::immediate(c)?;
        tx.execute(
            "WITH RECURSIVE n(i) AS (SELECT ?4 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
             INSERT INTO incoming_payments (id, wallet_id, incoming_amount, received_amount, completed, \
             expires_at, created_at, updated_at) \
             SELECT printf('01900000-0000-7000-8000-%012x', i), ?2, 10000, i % 10000, 0, \
             '2099-01-01T00:00:00.000Z', ?3, ?3 FROM n",
            opdesk::store::db::params![end, wallet, now, start],
        )?;
        tx.execute(
            "WITH RECURSIVE n(i) AS (SELECT ?6 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
             INSERT INTO outgoing_payments (id, wallet_id, receiver, debit_amount, receive_amount, \
             receive_asset_code, receive_asset_scale, sent_amount, delivered_amount, state, failure_reason, \
             failure_message, created_at, updated_at) \
             SELECT printf('01900000-0000-7000-9000-%012x', i), ?2, 'http://127.0.0.1/incoming-payments/x', 100, \
             100, 'USD', 2, 100, 100, CASE WHEN i % 100 = 0 THEN ?4 ELSE ?5 END, \
             CASE WHEN i % 100 = 0 THEN 'receiver_expired' END, CASE WHEN i % 100 = 0 THEN 'expired' END, ?3, ?3 \
             FROM n",
            opdesk::store::db::params![
                end,
                wallet,
                now,
                OutgoingState::Failed.as_str(),
                OutgoingState::Completed.as_str(),
                start
            ],
        )?;
        tx.commit()?;
    }
    // the fill is setup, not the console's work: copy its WAL into the database now, so that the checkpoint
    // thread does not spend the measured seconds on it
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

#[allow(clippy::print_stdout)]
fn main() {
    let wanted: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes: Vec<usize> = [1_000usize, 100_000, 1_000_000]
        .into_iter()
        .filter(|n| wanted.is_empty() || wanted.contains(n))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for rows in sizes {
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = Settings::for_data_dir(dir.path(), "127.0.0.1:0".parse().expect("addr")).expect("settings");
        let core = rt.block_on(AppCore::open(settings)).expect("open");
        let state = core.state.clone();
        let bob = rt.block_on(state.wallets.get("bob")).expect("bob");
        let filled = Instant::now();
        let wallet = bob.id.clone();
        rt.block_on(core.store.call(move |c| fill(c, &wallet, rows)))
            .expect("seed rows");
        let filled = filled.elapsed();
        let (mut app, theme) = tui::build(
            tui::desk::embedded_info(&state),
            state.clock.now(),
            &tui::Options::default(),
        );
        app.pane = Pane::Incoming;
        app.size = (120, 40);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
        let load = |pane: Pane, failed_only: bool| {
            let mut panes = Panes::default();
            panes.outgoing.failed_only = failed_only;
            panes.first_page(pane, None).expect("a load")
        };
        let run = |app: &mut App, e: Effect| {
            let reply = rt
                .block_on(tui::control::run_effect(&state.services, e))
                .expect("reply");
            app.update(Msg::Reply(reply));
        };
        let (mut reload, mut redraw, mut overview, mut outgoing) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 0..300 {
            let started = Instant::now();
            run(&mut app, load(Pane::Incoming, false));
            terminal.draw(|f| tui::render::draw(&app, &theme, f)).expect("draw");
            let t = started.elapsed();
            let started = Instant::now();
            app.update(Msg::Tick(state.clock.now()));
            terminal.draw(|f| tui::render::draw(&app, &theme, f)).expect("draw");
            let r = started.elapsed();
            let started = Instant::now();
            run(&mut app, load(Pane::Overview, false));
            let o = started.elapsed();
            let started = Instant::now();
            run(&mut app, load(Pane::Outgoing, true));
            let g = started.elapsed();
            if i >= 20 {
                reload.push(t);
                redraw.push(r);
                overview.push(o);
                outgoing.push(g);
            }
        }
        println!(
            "{rows:>9} rows (filled in {:.1?}): incoming resync+frame {} | redraw {} | overview load {} | \
             outgoing failed page {} | RSS {} MiB",
            filled,
            summary(&reload),
            summary(&redraw),
            summary(&overview),
            summary(&outgoing),
            rss_kib() / 1024
        );
        core.close();
    }
}
