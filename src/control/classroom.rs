//! A class's progress (`opdesk workshop --seats N`): how the seats are named, and per seat when each step of
//! the flow first happened ([`Step`]) as one ASE saw it. Each desk answers for its own rows; a console over
//! both merges the answers ([`merge`]) into the Classroom pane. A desk of a running workshop also knows its
//! [`Room`]: every desk of the class (for the whole class in one answer: the class page, the CLI, an attached
//! console) and the seats' handouts, opened by each seat's code ([`Handouts`]).

use std::{
    collections::BTreeMap,
    sync::{Arc, OnceLock, Weak},
};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{Error, Services};

/// The name of seat `n`'s own wallet: `seat07`.
pub fn seat_name(n: u8) -> String {
    format!("seat{n:02}")
}

/// The wallet seat `n` pays: `seat07-shop`.
pub fn shop_name(n: u8) -> String {
    format!("{}-shop", seat_name(n))
}

/// The wallet of seat `n`'s client app: `seat07-app`.
pub fn app_name(n: u8) -> String {
    format!("{}-app", seat_name(n))
}

/// The seat a wallet belongs to, by its name (`seat07`, `seat07-shop`, `seat07-app`) or URL.
pub fn seat_of(wallet: &str) -> Option<u8> {
    let name = wallet.rsplit('/').next().unwrap_or(wallet);
    let rest = name.strip_prefix("seat")?;
    let (digits, tail) = rest.split_at_checked(2)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || !matches!(tail, "" | "-shop" | "-app") {
        return None;
    }
    digits.parse().ok().filter(|n| *n >= 1)
}

/// The steps of a seat's flow, in the order a seat takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Its client fetched the seat's wallet address (or the shop's).
    WalletRead,
    /// An incoming payment on the shop.
    Incoming,
    Quote,
    /// An interactive grant for the seat's wallet.
    GrantRequested,
    /// The grant approved (by the owner on the interaction page, or by the operator).
    Approved,
    /// An outgoing payment from the seat's wallet completed.
    Paid,
}

impl Step {
    pub const ALL: [Step; 6] = [
        Step::WalletRead,
        Step::Incoming,
        Step::Quote,
        Step::GrantRequested,
        Step::Approved,
        Step::Paid,
    ];

    /// Its column heading.
    pub fn title(self) -> &'static str {
        match self {
            Self::WalletRead => "WALLET",
            Self::Incoming => "INCOMING",
            Self::Quote => "QUOTE",
            Self::GrantRequested => "GRANT",
            Self::Approved => "APPROVED",
            Self::Paid => "PAID",
        }
    }

    /// The step in words, as "waiting for …" reads it.
    pub fn words(self) -> &'static str {
        match self {
            Self::WalletRead => "its app to read the wallet address",
            Self::Incoming => "an incoming payment on its shop",
            Self::Quote => "a quote",
            Self::GrantRequested => "its app to request the outgoing-payment grant",
            Self::Approved => "the owner's approval",
            Self::Paid => "the payment to complete",
        }
    }
}

/// When a step first happened and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    #[serde(with = "crate::clock::wire")]
    pub first_at: OffsetDateTime,
    pub count: u32,
}

impl Done {
    /// The two sightings of one step as one: the earlier time, the counts added.
    fn and(self, other: Done) -> Done {
        Done {
            first_at: self.first_at.min(other.first_at),
            count: self.count.saturating_add(other.count),
        }
    }
}

/// One seat's progress through the flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeatProgress {
    pub seat: u8,
    /// [`Step::ALL`] in order: when each first happened, if it did.
    pub steps: [Option<Done>; 6],
    /// Of the approvals, how many the wallet's owner gave on the interaction page.
    pub approved_by_owner: u32,
    /// Until when its newest undecided grant can be decided (`None`: it has none).
    #[serde(
        default,
        with = "crate::clock::wire::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub decide_by: Option<OffsetDateTime>,
    /// Failed owner sign-ins on its undecided grants.
    #[serde(default)]
    pub failed_sign_ins: u32,
    /// Its owner may not sign in now: too many failed sign-ins (`opdesk grants unlock --wallet seatNN`).
    #[serde(default)]
    pub locked_out: bool,
}

impl SeatProgress {
    fn new(seat: u8) -> Self {
        Self {
            seat,
            steps: [None; 6],
            approved_by_owner: 0,
            decide_by: None,
            failed_sign_ins: 0,
            locked_out: false,
        }
    }

    /// Its grant waits for the owner's approval, and can still be decided at `now`.
    pub fn awaits_owner(&self, now: OffsetDateTime) -> bool {
        self.next() == Some(Step::Approved) && self.decide_by.is_some_and(|t| t > now)
    }

    /// Its grant waited for the owner's approval, and can no longer be decided at `now` (it expired, or was
    /// rejected): the app has to ask again.
    pub fn must_ask_again(&self, now: OffsetDateTime) -> bool {
        self.next() == Some(Step::Approved) && !self.awaits_owner(now)
    }

    pub fn name(&self) -> String {
        seat_name(self.seat)
    }

    pub fn step(&self, s: Step) -> Option<Done> {
        self.steps[s as usize]
    }

    fn saw(&mut self, s: Step, d: Done) {
        let slot = &mut self.steps[s as usize];
        *slot = Some(slot.map_or(d, |old| old.and(d)));
    }

    /// The first step not taken yet (`None`: it has paid).
    pub fn next(&self) -> Option<Step> {
        let last = Step::ALL.iter().rposition(|s| self.step(*s).is_some());
        match last {
            Some(i) => Step::ALL.get(i + 1).copied(),
            None => Some(Step::WalletRead),
        }
    }

    /// What the seat does next at `now`, in words: the console's table says it `short`, the CLI in full (with
    /// the command that lifts a lockout).
    pub fn what_next(&self, now: OffsetDateTime, short: bool) -> String {
        if self.must_ask_again(now) {
            return "expired — ask again".to_owned();
        }
        if self.locked_out && self.awaits_owner(now) {
            return match short {
                true => "locked out — unlock".to_owned(),
                false => format!("locked out — opdesk grants unlock --wallet {}", self.name()),
            };
        }
        match (self.next(), short) {
            (None, _) => match self.step(Step::Paid).map_or(0, |d| d.count) {
                1 => "paid".to_owned(),
                n => format!("paid ×{n}"),
            },
            (Some(Step::Approved), _) => "owner to approve".to_owned(),
            (Some(Step::WalletRead), _) => "not started".to_owned(),
            (Some(Step::Incoming), true) => "incoming payment".to_owned(),
            (Some(Step::Quote), true) => "quote".to_owned(),
            (Some(Step::GrantRequested), true) => "grant".to_owned(),
            (Some(Step::Paid), true) => "paying".to_owned(),
            (Some(s), false) => format!("waiting for {}", s.words()),
        }
    }

    /// When it last moved on: the latest first-time of its steps.
    pub fn last_at(&self) -> Option<OffsetDateTime> {
        self.steps.iter().flatten().map(|d| d.first_at).max()
    }
}

/// The seats' progress as this ASE saw it: every seat with a wallet here, in seat order.
pub async fn progress(s: &Services) -> Result<Vec<SeatProgress>, Error> {
    let rows = s.store.call(|c| crate::store::classroom::steps(c)).await?;
    let mut seats: BTreeMap<u8, SeatProgress> = BTreeMap::new();
    fn at(seats: &mut BTreeMap<u8, SeatProgress>, seat: u8) -> &mut SeatProgress {
        seats.entry(seat).or_insert_with(|| SeatProgress::new(seat))
    }
    for w in s.wallets.list().await? {
        if let Some(n) = seat_of(&w.name) {
            at(&mut seats, n);
        }
    }
    // the seat's own wallet or its shop (the app's is read by the authorization server, not the seat)
    for (name, first_at, count) in s.wallets.first_reads() {
        if let Some(n) = seat_of(&name).filter(|_| !name.ends_with("-app")) {
            at(&mut seats, n).saw(Step::WalletRead, Done { first_at, count });
        }
    }
    let window = time::Duration::seconds(i64::from(s.settings.gnap.interaction_expires_in_secs));
    for r in rows {
        let Some(n) = seat_of(&r.who) else { continue };
        if r.step == "open" {
            let seat = at(&mut seats, n);
            seat.decide_by = seat.decide_by.max(Some(r.first_at + window));
            continue;
        }
        if r.step == "sign_in_failures" {
            let c = &s.settings.consent;
            let seat = at(&mut seats, n);
            seat.failed_sign_ins = u32::try_from(r.count).unwrap_or(u32::MAX);
            seat.locked_out = seat.failed_sign_ins >= c.max_failures_per_grant.min(c.max_failures_per_wallet);
            continue;
        }
        let step = match r.step.as_str() {
            "incoming" => Step::Incoming,
            "quote" => Step::Quote,
            "grant" => Step::GrantRequested,
            "approval" => Step::Approved,
            "paid" => Step::Paid,
            _ => continue,
        };
        let count = u32::try_from(r.count).unwrap_or(u32::MAX);
        let seat = at(&mut seats, n);
        seat.saw(
            step,
            Done {
                first_at: r.first_at,
                count,
            },
        );
        if step == Step::Approved {
            seat.approved_by_owner = seat
                .approved_by_owner
                .saturating_add(u32::try_from(r.by_owner).unwrap_or(0));
        }
    }
    Ok(seats.into_values().collect())
}

/// One seat's handout, as its code opens it: the seat, its card, and its files (name, bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handout {
    pub seat: String,
    pub card: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// The seats' handouts, by the code on each seat's card (kept by the workshop that made them).
pub trait Handouts: Send + Sync {
    /// The handout whose code is `code` (compared case-insensitively, ignoring spaces and dashes), if any.
    fn open(&self, code: &str) -> Option<Handout>;
}

struct Seated {
    desks: Vec<Weak<Services>>,
    handouts: Arc<dyn Handouts>,
}

/// Wrong handout codes one address may try in [`TRIES_WINDOW`].
pub const MAX_WRONG_CODES: u32 = 10;
/// The window wrong handout codes are counted in.
pub const TRIES_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);
/// The most addresses whose wrong codes are remembered (then the oldest count starts over).
const MAX_TRIERS: usize = 4096;

/// Why no handout was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandoutRefusal {
    #[error("no class is seated here")]
    NoClass,
    #[error("that code opens no handout")]
    WrongCode,
    #[error("too many wrong codes from this address: wait ten minutes")]
    TooMany,
}

/// The class a desk belongs to while `opdesk workshop --seats N` runs: set once, when the class is seated; and
/// the wrong handout codes each address tried lately.
#[derive(Default)]
pub struct Room {
    seated: OnceLock<Seated>,
    wrong: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, (std::time::Instant, u32)>>,
}

impl std::fmt::Debug for Room {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_seated() {
            "Room(seated)"
        } else {
            "Room(empty)"
        })
    }
}

impl Room {
    /// Seats the class: its desks (held weakly: a desk's room names the desk itself) and the handouts. A
    /// second call changes nothing.
    pub fn seat(&self, desks: &[Arc<Services>], handouts: Arc<dyn Handouts>) {
        let desks = desks.iter().map(Arc::downgrade).collect();
        let _ = self.seated.set(Seated { desks, handouts });
    }

    /// Whether this desk seats a class.
    pub fn is_seated(&self) -> bool {
        self.seated.get().is_some()
    }

    /// The whole class, every desk's answer merged (`None`: no class here).
    pub async fn progress(&self) -> Option<Result<Vec<SeatProgress>, Error>> {
        let seated = self.seated.get()?;
        let mut answers = Vec::new();
        for d in seated.desks.iter().filter_map(Weak::upgrade) {
            match progress(&d).await {
                Ok(a) => answers.push(a),
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(merge(answers)))
    }

    /// The handout `code` opens, asked from address `from`: at most [`MAX_WRONG_CODES`] wrong codes per
    /// address in [`TRIES_WINDOW`], after which no code is checked for it until the window passes.
    pub fn handout(&self, code: &str, from: std::net::IpAddr) -> Result<Handout, HandoutRefusal> {
        let seated = self.seated.get().ok_or(HandoutRefusal::NoClass)?;
        let now = std::time::Instant::now();
        let mut wrong = self.wrong.lock().map_err(|_| HandoutRefusal::TooMany)?;
        if let Some((since, n)) = wrong.get(&from).copied() {
            if now.duration_since(since) >= TRIES_WINDOW {
                wrong.remove(&from);
            } else if n >= MAX_WRONG_CODES {
                return Err(HandoutRefusal::TooMany);
            }
        }
        if let Some(h) = seated.handouts.open(code) {
            return Ok(h);
        }
        if wrong.len() >= MAX_TRIERS && !wrong.contains_key(&from) {
            wrong.retain(|_, (since, _)| now.duration_since(*since) < TRIES_WINDOW);
            if wrong.len() >= MAX_TRIERS {
                wrong.clear();
            }
        }
        let entry = wrong.entry(from).or_insert((now, 0));
        entry.1 = entry.1.saturating_add(1);
        Err(HandoutRefusal::WrongCode)
    }
}

/// Several desks' answers as one: each seat once, every step at its earliest sighting.
pub fn merge(answers: impl IntoIterator<Item = Vec<SeatProgress>>) -> Vec<SeatProgress> {
    let mut seats: BTreeMap<u8, SeatProgress> = BTreeMap::new();
    for p in answers.into_iter().flatten() {
        let seat = seats.entry(p.seat).or_insert_with(|| SeatProgress::new(p.seat));
        for s in Step::ALL {
            if let Some(d) = p.step(s) {
                seat.saw(s, d);
            }
        }
        seat.approved_by_owner = seat.approved_by_owner.saturating_add(p.approved_by_owner);
        seat.decide_by = seat.decide_by.max(p.decide_by);
        seat.failed_sign_ins = seat.failed_sign_ins.saturating_add(p.failed_sign_ins);
        seat.locked_out |= p.locked_out;
    }
    seats.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_are_known_by_their_wallets_names_and_urls() {
        assert_eq!(seat_of("seat07"), Some(7));
        assert_eq!(seat_of("seat07-shop"), Some(7));
        assert_eq!(seat_of("http://127.0.0.1:4401/seat60-app"), Some(60));
        for other in [
            "seat7",
            "seat00",
            "seat07-bank",
            "seatAB",
            "alice",
            "seat071",
            "xseat07",
        ] {
            assert_eq!(seat_of(other), None, "{other}");
        }
        assert_eq!(seat_name(3), "seat03");
        assert_eq!((shop_name(3), app_name(3)), ("seat03-shop".into(), "seat03-app".into()));
    }

    #[test]
    fn answers_merge_at_the_earliest_sighting_and_the_next_step_follows_the_last_taken() {
        let t = |s: &str| crate::clock::ts(s);
        let mut a = SeatProgress::new(7);
        a.saw(
            Step::WalletRead,
            Done {
                first_at: t("2026-11-28T10:00:05Z"),
                count: 1,
            },
        );
        a.saw(
            Step::Quote,
            Done {
                first_at: t("2026-11-28T10:01:00Z"),
                count: 2,
            },
        );
        let mut b = SeatProgress::new(7);
        b.saw(
            Step::WalletRead,
            Done {
                first_at: t("2026-11-28T10:00:01Z"),
                count: 1,
            },
        );
        b.saw(
            Step::Incoming,
            Done {
                first_at: t("2026-11-28T10:00:30Z"),
                count: 1,
            },
        );
        let merged = merge([vec![a], vec![b, SeatProgress::new(3)]]);
        assert_eq!(merged.iter().map(|p| p.seat).collect::<Vec<_>>(), [3, 7]);
        let seven = &merged[1];
        assert_eq!(
            seven.step(Step::WalletRead).map(|d| d.first_at),
            Some(t("2026-11-28T10:00:01Z"))
        );
        assert_eq!(seven.step(Step::WalletRead).map(|d| d.count), Some(2));
        assert_eq!(seven.next(), Some(Step::GrantRequested));
        assert_eq!(seven.last_at(), Some(t("2026-11-28T10:01:00Z")));
        assert_eq!(merged[0].next(), Some(Step::WalletRead));
    }
}
