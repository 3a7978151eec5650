//! The control task: carries out the console's effects on its [`Desk`] (the embedded services or an
//! attached server's admin API), off the UI task: asks the queries panes name and hands what they found back
//! to them, and runs commands, answering with the outcome's own sentence in both modes.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::{
    app::{Effect, Reply},
    desk::Desk,
};
use crate::control::{Command, Outcome, Services};

/// What a command came to, for the flash line in the outcome's own words (or a generated secret, which the
/// console shows once).
fn done(cmd: &Command, o: Outcome) -> Reply {
    match (cmd, o) {
        (Command::AddKey { wallet, key }, Outcome::KeyAdded(k)) if key.generate => Reply::KeyGenerated {
            wallet: wallet.clone(),
            kid: k.jwk.kid,
            pem: k.private_key_pem.unwrap_or_default(),
        },
        (Command::SetOwnerPassphrase { wallet, .. }, Outcome::Passphrase(p)) if p.generated.is_some() => {
            Reply::PassphraseGenerated {
                wallet: wallet.clone(),
                passphrase: p.generated.unwrap_or_default(),
            }
        }
        (cmd, o) => Reply::Done(o.sentence(cmd)),
    }
}

/// Runs one effect on the embedded services and returns the reply (none for `Quit`).
pub async fn run_effect(s: &Arc<Services>, e: Effect) -> Option<Reply> {
    run(s, e).await
}

/// Runs one effect on `d` and returns the reply (none for `Quit`, or a demo that started).
pub async fn run<D: Desk>(d: &D, e: Effect) -> Option<Reply> {
    let r = match e {
        Effect::Load(l) => d.ask(l.query).await.map(|found| Reply::Found {
            pane: l.pane,
            found: Box::new(found),
            append: l.append,
        }),
        Effect::Run(cmd) => d.run(cmd.clone()).await.map(|o| done(&cmd, o)),
        Effect::Demo => match d.demo() {
            Ok(()) => return None,
            Err(e) => Err(e),
        },
        Effect::SwitchDesk(name) => d.switch(&name).await.map(|(info, desks)| Reply::Switched(info, desks)),
        Effect::Quit | Effect::Suspend => return None,
    };
    Some(r.unwrap_or_else(|e| Reply::Failed(e.to_string())))
}

/// Serves effects from `rx` on `d`, sending replies to `tx`, until `rx` closes. Effects run concurrently.
pub async fn serve<D: Desk>(d: D, mut rx: mpsc::UnboundedReceiver<Effect>, tx: mpsc::UnboundedSender<Reply>) {
    while let Some(e) = rx.recv().await {
        let (d, tx) = (d.clone(), tx.clone());
        tokio::spawn(async move {
            if let Some(r) = run(&d, e).await {
                let _ = tx.send(r);
            }
        });
    }
}
