//! `:threshold`, the Peers and Wallets panes' way to set an alert threshold on the selection: the amount in
//! major units (as the panes' deposit prompts take it), or `remove`. Run at once: a threshold moves no money.

use super::{Out, warn};
use crate::{
    control::{Command, dto::NewThreshold},
    money::Value,
    thresholds::Measure,
    tui::effect::Effect,
};

/// The effect of `:threshold REST` on `subject`'s `measure`, in an asset of `scale` decimals.
pub fn command(measure: Measure, subject: String, scale: u8, rest: &str) -> Vec<Out> {
    let threshold = match rest.trim() {
        "remove" => None,
        amount => match crate::money::parse_major(amount, scale).and_then(|a| Value::new(a).ok()) {
            Some(v) => Some(v),
            None => {
                return warn(format!(
                    "`:threshold` takes an amount with at most {scale} decimals, or `remove` (got {amount:?})"
                ));
            }
        },
    };
    vec![Out::Run(Effect::Run(Command::SetThreshold(NewThreshold {
        measure,
        subject,
        threshold,
    })))]
}
