//! The console: a full-screen ratatui operator desk over an ASE — embedded in this process or attached to
//! a running server, through one interface ([`desk::Desk`]). One inbox (terminal input, the desk's feed of
//! domain events and connection changes, command replies, a slow tick) feeds `App::update`; everything
//! queued is drained before a frame, and frames are drawn only when something changed: at most every 16 ms
//! after a key, a click or a reply, at most ten times a second for what the server streams — while such a
//! frame waits, the stream waits too (in its buffer), so a flood of events costs a few wakeups a second. Commands run on a control task that calls the same operations as the admin API, so the UI never
//! waits. The terminal is restored on quit, on error and on panic; logs go to a file (and the Log pane),
//! never over the screen.

pub mod action;
pub mod app;
pub mod control;
pub mod desk;
pub mod desks;
pub mod effect;
pub mod key;
pub mod keymap;
pub mod pane;
pub mod panes;
pub mod render;
#[cfg(test)]
mod snapshots;
pub mod theme;
pub mod widgets;

use std::{collections::BTreeMap, io::stdout, time::Duration};

use color_eyre::eyre::{Result, WrapErr};
use futures_util::StreamExt;
use ratatui::crossterm::{
    event::{
        DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event as TermEvent,
        EventStream, KeyEventKind, MouseButton, MouseEventKind,
    },
    execute,
};
use time::OffsetDateTime;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use app::{App, Effect, Msg, ServerInfo};
use desk::{Desk, Feed};
use keymap::Keymap;
use pane::Pane;
use theme::Theme;

/// Options of the console.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub readonly: bool,
    pub no_color: bool,
    pub keys: BTreeMap<String, String>,
    pub theme: BTreeMap<String, String>,
    /// A class is watched: the console opens on the Classroom, which is a tab.
    pub classroom: bool,
}

/// The view model for the server `info` at `now`, with keymap and theme from `opts` (warnings go to the
/// flash line).
pub fn build(info: ServerInfo, now: OffsetDateTime, opts: &Options) -> (App, Theme) {
    let (keymap, mut warnings) = Keymap::with_overrides(&opts.keys);
    let (theme, theme_warnings) = Theme::load(opts.no_color, &opts.theme);
    warnings.extend(theme_warnings);
    let mut app = App::new(info, keymap, opts.readonly, now);
    if opts.classroom {
        app.classroom = true;
        app.pane = Pane::Classroom;
    }
    if !warnings.is_empty() {
        app.flash(app::Level::Warn, warnings.join("; "));
    }
    (app, theme)
}

/// The console's message for what the feed says.
fn from_feed(f: Feed) -> Option<Msg> {
    Some(match f {
        Feed::Event(e) => Msg::Event(e),
        Feed::Resync => Msg::Lagged,
        Feed::Down(why) => Msg::Disconnected(why),
        Feed::Up(info) => Msg::Connected(info),
        Feed::Elsewhere(desk, e) => Msg::Elsewhere(desk, e),
    })
}

/// Runs the console until the person quits or `shutdown` is cancelled. `logs` feeds the Log pane.
/// How soon a frame follows a key, a click or a command's reply.
const KEY_FRAME: Duration = Duration::from_millis(16);
/// How soon a frame follows what the server streams (events, log lines, the tick).
const FEED_FRAME: Duration = Duration::from_millis(100);

pub async fn run<D: Desk>(
    desk: D,
    opts: Options,
    mut logs: mpsc::Receiver<String>,
    shutdown: CancellationToken,
) -> Result<()> {
    let info = desk.info().await.wrap_err("cannot ask the server what it is")?;
    let (mut app, theme) = build(info, desk.now(), &opts);
    app.desks = desk.desks();
    let mut feed = desk.feed();
    let mut terminal = ratatui::init();
    let _ = execute!(stdout(), EnableMouseCapture, EnableBracketedPaste);
    let result = async {
        let size = terminal.size().wrap_err("terminal size")?;
        app.size = (size.width, size.height);
        let (effects_tx, effects_rx) = mpsc::unbounded_channel::<Effect>();
        let (replies_tx, mut replies) = mpsc::unbounded_channel();
        tokio::spawn(control::serve(desk.clone(), effects_rx, replies_tx));
        let mut input = EventStream::new();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        for e in app.start() {
            let _ = effects_tx.send(e);
        }
        let (mut dirty, mut urgent) = (true, true);
        let mut last_draw = tokio::time::Instant::now() - FEED_FRAME;
        loop {
            let frame = if urgent { KEY_FRAME } else { FEED_FRAME };
            if dirty && last_draw.elapsed() >= frame {
                terminal.draw(|f| render::draw(&app, &theme, f)).wrap_err("drawing")?;
                last_draw = tokio::time::Instant::now();
                (dirty, urgent) = (false, false);
            }
            let deadline = last_draw + frame;
            // a frame of streamed events waits to be drawn: the stream waits with it
            let take_stream = !dirty;
            let msg = tokio::select! {
                _ = shutdown.cancelled() => break,
                Some(Ok(ev)) = input.next() => match ev {
                    TermEvent::Key(k) if k.kind == KeyEventKind::Press => Some(Msg::Key(k)),
                    TermEvent::Mouse(m) => match m.kind {
                        MouseEventKind::ScrollUp => Some(Msg::Scroll(true)),
                        MouseEventKind::ScrollDown => Some(Msg::Scroll(false)),
                        MouseEventKind::Down(MouseButton::Left) => Some(Msg::Click(m.column, m.row)),
                        _ => None,
                    },
                    TermEvent::Resize(w, h) => Some(Msg::Resize(w, h)),
                    TermEvent::Paste(text) => Some(Msg::Paste(text)),
                    _ => None,
                },
                f = feed.recv(), if take_stream => match f {
                    Some(f) => from_feed(f),
                    None => break,
                },
                Some(r) = replies.recv() => Some(Msg::Reply(r)),
                Some(line) = logs.recv(), if take_stream => Some(Msg::Log(line)),
                _ = tick.tick() => Some(Msg::Tick(desk.now())),
                _ = tokio::time::sleep_until(deadline), if dirty => None,
            };
            let Some(msg) = msg else { continue };
            urgent |= matches!(
                msg,
                Msg::Key(_) | Msg::Click(..) | Msg::Scroll(_) | Msg::Paste(_) | Msg::Resize(..) | Msg::Reply(_)
            );
            let mut effects = app.update(msg);
            // drain whatever else is queued before drawing
            while let Ok(r) = replies.try_recv() {
                effects.extend(app.update(Msg::Reply(r)));
            }
            while let Ok(f) = feed.try_recv() {
                if let Some(m) = from_feed(f) {
                    effects.extend(app.update(m));
                }
            }
            dirty = true;
            for e in effects {
                if e == Effect::Quit {
                    return Ok(());
                }
                if e == Effect::Suspend {
                    suspend(&mut terminal)?;
                    continue;
                }
                let _ = effects_tx.send(e);
            }
            if app.quit {
                return Ok(());
            }
        }
        Ok(())
    }
    .await;
    let _ = execute!(stdout(), DisableMouseCapture, DisableBracketedPaste);
    ratatui::restore();
    result
}

/// Ctrl-Z: gives the terminal back to the shell (main screen, cooked mode, no mouse or paste capture), stops
/// this process as the shell's Ctrl-Z would (SIGTSTP), and once `fg` resumes it takes the terminal again and
/// redraws everything.
fn suspend(terminal: &mut ratatui::DefaultTerminal) -> Result<()> {
    let _ = execute!(stdout(), DisableMouseCapture, DisableBracketedPaste);
    ratatui::restore();
    stop_self();
    ratatui::crossterm::terminal::enable_raw_mode().wrap_err("raw mode after resuming")?;
    execute!(
        stdout(),
        ratatui::crossterm::terminal::EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )
    .wrap_err("alternate screen after resuming")?;
    terminal.clear().wrap_err("clearing after resuming")?;
    Ok(())
}

/// Stops this process until it is continued (returns then).
#[cfg(unix)]
fn stop_self() {
    if let Err(e) = signal_hook::low_level::raise(signal_hook::consts::SIGTSTP) {
        tracing::warn!("cannot suspend: {e}");
    }
}

#[cfg(not(unix))]
fn stop_self() {}
