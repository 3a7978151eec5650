//! Frame time of the console's Incoming pane with 1,000 and with 100,000 incoming payments in the store:
//! each frame loads the first page through the control task's keyset query (what a resync does) or just
//! redraws (what a tick does), and renders to a 120×40 `TestBackend`. Prints p50/p99 and the process's
//! resident memory, which must not grow with the row count.

use std::time::{Duration, Instant};

use opdesk::{
    app::AppCore,
    settings::Settings,
    store::payments::{self, IncomingRow},
    tui::{
        self,
        app::{Effect, Load, Msg},
        pane::Pane,
    },
};
use ratatui::{Terminal, backend::TestBackend};

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

fn pct(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[allow(clippy::print_stdout)]
fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    for rows in [1_000usize, 100_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        let settings = Settings::for_data_dir(dir.path(), "127.0.0.1:0".parse().expect("addr")).expect("settings");
        let core = rt.block_on(AppCore::open(settings)).expect("open");
        let state = core.state.clone();
        let bob = rt.block_on(state.wallets.get("bob")).expect("bob");
        rt.block_on(core.store.call(move |c| {
            let tx = opdesk::store::immediate(c)?;
            for i in 0..rows {
                let now = opdesk::clock::format_ts(time::OffsetDateTime::now_utc());
                payments::insert_incoming(
                    &tx,
                    &IncomingRow {
                        id: opdesk::ids::new_id(),
                        wallet_id: bob.id.clone(),
                        wallet_name: bob.name.clone(),
                        account_id: bob.account_id.clone(),
                        asset_code: "USD".into(),
                        asset_scale: 2,
                        client: None,
                        incoming_amount: Some(10_000),
                        received_amount: i64::try_from(i % 10_000).unwrap_or(0),
                        completed: false,
                        expires_at: Some("2099-01-01T00:00:00.000Z".into()),
                        metadata: None,
                        created_at: now.clone(),
                        updated_at: now,
                    },
                )?;
            }
            tx.commit()?;
            Ok::<_, opdesk::store::Error>(())
        }))
        .expect("seed rows");
        let (mut app, theme) = tui::build(
            tui::desk::embedded_info(&state),
            state.clock.now(),
            &tui::Options::default(),
        );
        app.pane = Pane::Incoming;
        app.size = (120, 40);
        let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
        let load = Effect::Load(Load {
            pane: Pane::Incoming,
            failed_only: false,
            cursor: None,
            q: None,
        });
        let mut reload = Vec::new();
        let mut redraw = Vec::new();
        for i in 0..300 {
            let started = Instant::now();
            let reply = rt
                .block_on(tui::control::run_effect(&state.services, load.clone()))
                .expect("reply");
            app.update(Msg::Reply(reply));
            terminal.draw(|f| tui::render::draw(&app, &theme, f)).expect("draw");
            let t = started.elapsed();
            if i >= 20 {
                reload.push(t);
            }
            let started = Instant::now();
            app.update(Msg::Tick(state.clock.now()));
            terminal.draw(|f| tui::render::draw(&app, &theme, f)).expect("draw");
            if i >= 20 {
                redraw.push(started.elapsed());
            }
        }
        println!(
            "incoming pane, {rows:>7} rows in the store: resync+frame p50 {:?} p99 {:?} | redraw p50 {:?} p99 {:?} | RSS {} MiB",
            pct(reload.clone(), 0.5),
            pct(reload, 0.99),
            pct(redraw.clone(), 0.5),
            pct(redraw, 0.99),
            rss_kib() / 1024
        );
        core.close();
    }
}
