//! Alert thresholds from the command line: `opdesk thresholds` lists them with their values now, and
//! `peers set-threshold` / `wallets set-threshold` (whose arguments live with their groups) set or remove one
//! through [`set`]. Prints only through [`super::print`].

use color_eyre::eyre::Result;

use super::{
    Backend,
    print::{Columns, Human, emit},
};
use crate::{
    control::{Command, dto::NewThreshold},
    thresholds::{Measure, ThresholdView},
};

/// What a peer's threshold watches, as `peers set-threshold` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PeerMeasure {
    /// What may still be sent through the peer: alert when it drops under the threshold.
    Liquidity,
    /// What the peer owes us: alert when it rises over the threshold.
    Credit,
}

impl From<PeerMeasure> for Measure {
    fn from(m: PeerMeasure) -> Self {
        match m {
            PeerMeasure::Liquidity => Measure::PeerLiquidity,
            PeerMeasure::Credit => Measure::PeerCredit,
        }
    }
}

/// Sets `subject`'s threshold on `measure` to `amount` (minor units of its asset), or removes it, and prints
/// what it came to.
pub(super) async fn set(
    b: &Backend,
    measure: Measure,
    subject: String,
    amount: Option<String>,
    json: bool,
) -> Result<()> {
    let Some(amount) = amount else {
        let cmd = Command::SetThreshold(NewThreshold {
            measure,
            subject: subject.clone(),
            threshold: None,
        });
        let ((), said) = b.said(cmd).await?;
        let removed = serde_json::json!({ "measure": measure, "subject": subject, "removed": true });
        return emit(json, &removed, || format!("{said}\n"));
    };
    let whose = if measure == Measure::WalletBalance {
        "the wallet's"
    } else {
        "the peer's"
    };
    let cmd = Command::SetThreshold(NewThreshold {
        measure,
        subject,
        threshold: Some(super::minor(&amount, "threshold", whose)?),
    });
    b.tell::<ThresholdView>(cmd, json).await
}

impl Human for ThresholdView {
    const COLUMNS: Columns<Self> = &[
        ("SUBJECT", |t| {
            let kind = if t.measure == Measure::WalletBalance {
                "wallet"
            } else {
                "peer"
            };
            format!("{kind} {}", t.subject)
        }),
        ("WATCHES", |t| t.measure.words().to_owned()),
        ("THRESHOLD", |t| t.asset().format(t.threshold.into())),
        ("NOW", |t| {
            t.value
                .map_or_else(|| "not watched".to_owned(), |v| t.asset().format(v.into()))
        }),
        ("STATE", |t| {
            match (t.crossed, t.measure) {
                (false, _) => "ok",
                (true, Measure::PeerCredit) => "over it",
                (true, _) => "under it",
            }
            .to_owned()
        }),
    ];

    fn card(&self) -> String {
        format!("{}\n", self.words())
    }
}
