//! `opdesk workshop --seats N`: a class. Each seat `seatNN` gets, on cloud-nine, a wallet `seatNN` (USD/2, funded
//! with 100.00 once) whose owner passphrase is generated; on happy-life, a shop wallet `seatNN-shop` to pay and
//! a client wallet `seatNN-app` with an Ed25519 key. Each seat's handout goes to `DIR/handout/seatNN/`: a Bruno
//! environment (`opdesk.bru`), the client's private key (`private.key`, PKCS#8 PEM), an `.env` for the SDK and a
//! `card.txt` (one printed page: no line over 80 characters); `DIR/handout/index.html` prints every card. Each
//! seat has a handout code, printed on its card, that opens its handout over HTTP ([`SeatHandouts`], served by
//! happy-life at `/workshop/handout`). Running again keeps the seats, their keys, passphrases and codes (kept in
//! `DIR/seats.json` and the handouts) and adds the seats a larger N asks for.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use base64::Engine as _;
use color_eyre::eyre::{Result, WrapErr};
use serde::{Deserialize, Serialize};

use crate::{
    control::{
        self, Command, Services,
        classroom::{Handout, Handouts, app_name, seat_name, seat_of, shop_name},
        command::OwnerPassphrase,
        dto::{AddKey, CreateWallet, KeyAdded, Move},
    },
    files,
    money::Value,
    server::routes::interaction::escape,
};

/// The most seats a class has.
pub const MAX_SEATS: u8 = 60;
/// What each seat's wallet on cloud-nine starts with (100.00 USD).
const FUNDS: u64 = 10_000;

/// Where each desk is reached from the seats (the handouts' URLs): cloud-nine's and happy-life's public base.
#[derive(Debug, Clone)]
pub struct Bases {
    pub cloud_nine: String,
    pub happy_life: String,
}

/// One seat, as its handout shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    /// `seat07`
    pub name: String,
    pub passphrase: String,
    /// What opens its handout over HTTP: three groups of four letters, e.g. `KMPR-TWXZ-ACDE`.
    pub code: String,
    pub key_id: String,
    pub private_key_pem: String,
}

/// What the workshop dir keeps of the seats between runs: each owner's passphrase and each handout's code.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    passphrases: BTreeMap<String, String>,
    #[serde(default)]
    codes: BTreeMap<String, String>,
}

/// The letters of a handout code: no `I`, `O`, `0` or `1` to misread; 32 of them, so a random byte picks one
/// without bias.
const CODE_LETTERS: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A new handout code: 12 random letters of [`CODE_LETTERS`] (60 bits) in three groups of four joined by
/// `-` (e.g. `KMPR-TWXZ-ACDE`).
fn new_code() -> Result<String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).map_err(|e| color_eyre::eyre::eyre!("no randomness: {e}"))?;
    let letters: Vec<char> = bytes
        .iter()
        .map(|b| char::from(CODE_LETTERS[usize::from(b % 32)]))
        .collect();
    Ok(letters
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-"))
}

/// A code as typed, for comparing: upper case, without spaces and dashes.
fn normal_code(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// The files of a handout, in the order the page lists them.
const FILES: [&str; 4] = [".env", "private.key", "opdesk.bru", "card.txt"];

/// The seats' handouts in the workshop dir, opened by their codes (kept in `DIR/seats.json`).
#[derive(Debug, Clone)]
pub struct SeatHandouts {
    pub dir: PathBuf,
}

impl Handouts for SeatHandouts {
    fn open(&self, code: &str) -> Option<Handout> {
        let typed = normal_code(code);
        if typed.len() != 12 {
            return None;
        }
        let kept = read_kept(&self.dir.join("seats.json")).ok()?;
        let seat = kept.codes.iter().find_map(|(seat, c)| {
            let c = normal_code(c);
            bool::from(subtle::ConstantTimeEq::ct_eq(c.as_bytes(), typed.as_bytes())).then(|| seat.clone())
        })?;
        let d = handout_dir(&self.dir, &seat);
        let files: Vec<(String, Vec<u8>)> = FILES
            .iter()
            .filter_map(|f| Some(((*f).to_owned(), std::fs::read(d.join(f)).ok()?)))
            .collect();
        let card = std::fs::read_to_string(d.join("card.txt")).ok()?;
        Some(Handout { seat, card, files })
    }
}

fn handout_dir(dir: &Path, seat: &str) -> PathBuf {
    dir.join("handout").join(seat)
}

fn read_kept(path: &Path) -> Result<Kept> {
    match std::fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t).wrap_err_with(|| format!("{} is not a seat list", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Kept::default()),
        Err(e) => Err(e).wrap_err_with(|| format!("cannot read {}", path.display())),
    }
}

/// Wallet `name` (USD/2) on the desk `s` with the public name `public` (what the consent page calls it),
/// created unless it exists (an existing one without a public name gets it); true when it was created now.
async fn ensure_wallet(s: &Services, name: &str, public: &str) -> Result<bool> {
    if let Ok(w) = s.wallets.get(name).await {
        if w.public_name.is_none() {
            let cmd = Command::SetPublicName {
                wallet: name.to_owned(),
                public_name: Some(public.to_owned()),
            };
            control::execute(s, cmd, control::Cause::cli()).await?;
        }
        return Ok(false);
    }
    let body = CreateWallet {
        name: name.to_owned(),
        asset_code: "USD".to_owned(),
        asset_scale: 2,
        public_name: Some(public.to_owned()),
    };
    control::execute(s, Command::CreateWallet(body), control::Cause::cli()).await?;
    Ok(true)
}

/// `Seat 07`: how seat `n` is called in the words people read.
fn seat_words(n: u8) -> String {
    format!("Seat {n:02}")
}

/// Runs `cmd` on `s` as the workshop's set-up.
async fn run(s: &Services, cmd: Command) -> Result<control::Outcome> {
    Ok(control::execute(s, cmd, control::Cause::cli()).await?)
}

/// Brings the class to `seats` seats on `cloud_nine` and `happy_life` and writes every handout; the seats. A
/// class seated before with more seats keeps them all (their wallets, handouts and codes stay, and every view
/// shows them): `--seats` only ever adds seats.
pub async fn provision(
    dir: &Path,
    seats: u8,
    cloud_nine: &Services,
    happy_life: &Services,
    bases: &Bases,
) -> Result<Vec<Seat>> {
    let kept_path = dir.join("seats.json");
    let mut kept = read_kept(&kept_path)?;
    let mut out = Vec::new();
    let before = kept.passphrases.keys().filter_map(|s| seat_of(s)).max().unwrap_or(0);
    for n in 1..=seats.max(before).min(MAX_SEATS) {
        let name = seat_name(n);
        // the owner's wallet, funded once (the transfer id makes the deposit happen once)
        ensure_wallet(cloud_nine, &name, &seat_words(n)).await?;
        let funds = Move {
            transfer_id: Some(format!("workshop-{name}-funds")),
            ..Move::of(Value::new(FUNDS)?)
        };
        run(
            cloud_nine,
            Command::Deposit {
                wallet: name.clone(),
                funds,
            },
        )
        .await?;
        // generated once (hashed lightly: ~79 random bits), kept in the seat list; set again, as given, only
        // when the wallet lost it
        let kept_one = kept.passphrases.get(&name).cloned();
        let has_one = cloud_nine.wallets.has_owner_passphrase(&name).await?;
        let passphrase = match kept_one {
            Some(p) if has_one => p,
            kept_one => {
                let asked = match kept_one {
                    Some(p) => OwnerPassphrase::Set { passphrase: p },
                    None => OwnerPassphrase::Generate,
                };
                let cmd = Command::SetOwnerPassphrase {
                    wallet: name.clone(),
                    passphrase: asked.clone(),
                };
                match (run(cloud_nine, cmd).await?, asked) {
                    (_, OwnerPassphrase::Set { passphrase }) => passphrase,
                    (control::Outcome::Passphrase(set), _) => set
                        .generated
                        .ok_or_else(|| color_eyre::eyre::eyre!("no passphrase was generated for {name}"))?,
                    (other, _) => color_eyre::eyre::bail!("setting {name}'s passphrase answered {other:?}"),
                }
            }
        };
        kept.passphrases.insert(name.clone(), passphrase.clone());
        let code = match kept.codes.get(&name) {
            Some(c) => c.clone(),
            None => new_code()?,
        };
        kept.codes.insert(name.clone(), code.clone());
        // the shop, and the client app with its key (kept in the handout)
        ensure_wallet(happy_life, &shop_name(n), &format!("{}'s shop", seat_words(n))).await?;
        let app = app_name(n);
        ensure_wallet(happy_life, &app, &format!("{}'s app", seat_words(n))).await?;
        let (key_id, pem) = app_key(dir, &name, &app, happy_life).await?;
        out.push(Seat {
            name,
            passphrase,
            code,
            key_id,
            private_key_pem: pem,
        });
    }
    let text = serde_json::to_vec_pretty(&kept).wrap_err("seat list")?;
    files::write_private(&kept_path, &text).wrap_err_with(|| format!("cannot write {}", kept_path.display()))?;
    for s in &out {
        write_handout(dir, s, bases)?;
    }
    let index = dir.join("handout").join("index.html");
    std::fs::write(&index, index_html(&out, bases)).wrap_err_with(|| format!("cannot write {}", index.display()))?;
    Ok(out)
}

/// The client key of seat `seat`'s app wallet `app`: the one its handout holds when the wallet publishes it,
/// else a new pair (published, its private key written to the handout).
async fn app_key(dir: &Path, seat: &str, app: &str, happy_life: &Services) -> Result<(String, String)> {
    let path = handout_dir(dir, seat).join("private.key");
    let published = happy_life.wallets.keys(app).await?.keys;
    if let Ok(pem) = std::fs::read_to_string(&path) {
        let key = crate::httpsig::jwk::from_pkcs8_pem(&pem).wrap_err_with(|| format!("{}", path.display()))?;
        let public = crate::httpsig::jwk::Jwk::from_verifying_key("", &key.verifying_key());
        if let Some(j) = published.iter().find(|j| j.x == public.x) {
            return Ok((j.kid.clone(), pem));
        }
    }
    let added: KeyAdded = run(
        happy_life,
        Command::AddKey {
            wallet: app.to_owned(),
            key: AddKey {
                jwk: None,
                generate: true,
            },
        },
    )
    .await?
    .try_into()?;
    let pem = added.private_key_pem.unwrap_or_default();
    files::private_dir(&handout_dir(dir, seat))?;
    files::write_private(&path, pem.as_bytes()).wrap_err_with(|| format!("cannot write {}", path.display()))?;
    Ok((added.jwk.kid, pem))
}

/// The seat's URLs: its wallet, its shop, its app, the signing helper.
fn urls(s: &Seat, b: &Bases) -> [(&'static str, String); 4] {
    [
        ("wallet", format!("{}/{}", b.cloud_nine, s.name)),
        ("shop", format!("{}/{}-shop", b.happy_life, s.name)),
        ("app", format!("{}/{}-app", b.happy_life, s.name)),
        ("signer", format!("{}/workshop/sign", b.happy_life)),
    ]
}

fn write_handout(dir: &Path, s: &Seat, b: &Bases) -> Result<()> {
    let d = handout_dir(dir, &s.name);
    files::private_dir(&d)?;
    let [(_, wallet), (_, shop), (_, app), (_, signer)] = urls(s, b);
    let key64 = base64::engine::general_purpose::STANDARD.encode(s.private_key_pem.as_bytes());
    let bru = format!(
        "vars {{\n  senderWalletAddress: {wallet}\n  receiverWalletAddress: {shop}\n  clientWalletAddress: {app}\n  \
         clientKeyId: {}\n  clientPrivateKey: {key64}\n  signatureUrl: {signer}\n}}\n",
        s.key_id
    );
    let env = format!(
        "WALLET_ADDRESS={wallet}\nCLIENT_WALLET_ADDRESS={app}\nRECEIVER={shop}\nKEY_ID={}\nPRIVATE_KEY_PATH=private.key\n",
        s.key_id
    );
    for (file, text) in [("opdesk.bru", bru), (".env", env), ("card.txt", card(s, b))] {
        let p = d.join(file);
        files::write_private(&p, text.as_bytes()).wrap_err_with(|| format!("cannot write {}", p.display()))?;
    }
    Ok(())
}

/// Where a seat opens its handout: happy-life's `/workshop/handout`.
pub fn handout_url(b: &Bases) -> String {
    format!("{}/workshop/handout", b.happy_life)
}

/// A seat's card: where its files are and the code that opens them, its URLs, the owner's passphrase, and the
/// steps of the flow. One printed page: no line over 80 characters (but a URL longer than that).
fn card(s: &Seat, b: &Bases) -> String {
    let mut t = format!("opdesk workshop — {}\n\n", s.name);
    let _ = writeln!(t, "Your files: open {}", handout_url(b));
    let _ = writeln!(t, "and type the code   {}\n", s.code);
    for (what, url) in urls(s, b) {
        let _ = writeln!(t, "{what:<8} {url}");
    }
    let _ = writeln!(t, "key id   {}", s.key_id);
    let _ = writeln!(t, "passphrase: {}", s.passphrase);
    t.push_str(
        "\nThe flow (the SDK with .env, or Bruno with opdesk.bru):\n\
         1. read your wallet and the shop's wallet address\n\
         2. get an incoming-payment grant from the shop's auth server and\n   \
         create an incoming payment\n\
         3. get a quote grant from your wallet's auth server; create a quote\n\
         4. ask for an outgoing-payment grant: open its interact.redirect in a\n   \
         browser, sign in with the passphrase above, read what it asks, approve\n\
         5. continue the grant, then create the outgoing payment: it pays the\n   \
         shop across ILP\n",
    );
    t
}

/// Every card on a page of its own, for printing before the class (it shows every passphrase and code: print
/// it, never project it).
fn index_html(seats: &[Seat], b: &Bases) -> String {
    let mut h = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>opdesk workshop handouts</title>\
         <style>pre{page-break-after:always;font-size:11pt}</style></head><body>",
    );
    for s in seats {
        let _ = write!(h, "<pre>{}</pre>", escape(&card(s, b)));
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat() -> Seat {
        Seat {
            name: "seat07".into(),
            passphrase: "tulip-anchor-basket-velvet-orbit-meadow".into(),
            code: new_code().unwrap(),
            key_id: "k".repeat(43),
            private_key_pem: String::new(),
        }
    }

    #[test]
    fn a_card_fits_a_printed_page_and_carries_the_code_but_no_key() {
        let b = Bases {
            cloud_nine: "http://192.168.100.200:4000".into(),
            happy_life: "http://192.168.100.200:4100".into(),
        };
        let s = seat();
        let c = card(&s, &b);
        for line in c.lines() {
            assert!(
                line.chars().count() <= 80,
                "{} characters: {line}",
                line.chars().count()
            );
        }
        assert!(c.lines().count() <= 60, "{c}");
        assert!(c.contains(&s.code) && c.contains("http://192.168.100.200:4100/workshop/handout"));
        assert!(!c.contains("PRIVATE KEY"));
    }

    #[test]
    fn codes_are_twelve_unambiguous_letters_read_in_any_case() {
        let c = new_code().unwrap();
        assert_eq!(c.len(), 14, "{c}");
        assert!(normal_code(&c).bytes().all(|b| CODE_LETTERS.contains(&b)), "{c}");
        assert_ne!(c, new_code().unwrap());
        assert_eq!(normal_code(" abcd-efgh jkmn "), "ABCDEFGHJKMN");
    }

    #[test]
    fn a_code_opens_its_seats_handout_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut kept = Kept::default();
        kept.codes.insert("seat07".into(), "ABCD-EFGH-JKMN".into());
        kept.codes.insert("seat08".into(), "PQRS-TUVW-XYZ2".into());
        std::fs::write(dir.path().join("seats.json"), serde_json::to_vec(&kept).unwrap()).unwrap();
        let d = handout_dir(dir.path(), "seat07");
        std::fs::create_dir_all(&d).unwrap();
        for f in FILES {
            std::fs::write(d.join(f), f).unwrap();
        }
        let h = SeatHandouts { dir: dir.path().into() };
        let opened = h.open("abcd efgh jkmn").expect("case and spaces do not matter");
        assert_eq!(opened.seat, "seat07");
        assert_eq!(opened.files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), FILES);
        assert!(h.open("ABCD-EFGH-JKMP").is_none());
        assert!(h.open("").is_none());
        assert!(h.open("PQRS-TUVW-XYZ2").is_none(), "seat08 has no files");
    }
}
