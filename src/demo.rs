//! The demo scenario for workshops: a client (`demo-client`, with the key seeded into the data dir) drives
//! the running server over real, signed HTTP — grants (one waiting for the operator's approval), incoming
//! payments, quotes and outgoing payments, some of which fail on purpose — so everything can be watched
//! moving in the console. Run it with `opdesk demo` against a running instance, or `D` / `:demo` inside.

use std::time::Duration;

use color_eyre::eyre::{Result, bail, eyre};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{client::SignedClient, httpsig::jwk, settings::Settings};

struct Demo {
    c: SignedClient,
    base: String,
}

impl Demo {
    async fn call(&self, method: Method, url: &str, token: Option<&str>, body: Option<Value>) -> Result<Value> {
        let r = self
            .c
            .send(method, url, token, body.as_ref())
            .await
            .map_err(|e| eyre!("{url}: {e}"))?;
        if !(200..300).contains(&r.status) {
            bail!("{url} answered {}: {}", r.status, r.body);
        }
        Ok(r.body)
    }

    fn wallet(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    async fn grant(&self, access: Value) -> Result<String> {
        let body = json!({"access_token": {"access": access}, "client": self.wallet("demo-client")});
        let r = self
            .call(Method::POST, &format!("{}/auth", self.base), None, Some(body))
            .await?;
        r["access_token"]["value"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| eyre!("no token in {r}"))
    }
}

impl Demo {
    /// Requests the interactive grant `req` and waits (up to ten minutes) for the operator to approve it
    /// in the console; the access token.
    async fn approved(&self, req: Value) -> Result<String> {
        let pending = self
            .call(Method::POST, &format!("{}/auth", self.base), None, Some(req))
            .await?;
        let cont_uri = pending["continue"]["uri"].as_str().unwrap_or_default().to_owned();
        let cont_token = pending["continue"]["access_token"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let wait = pending["continue"]["wait"].as_u64().unwrap_or(1).max(1);
        tracing::info!("demo: an outgoing-payment grant waits for your approval in the Grants pane");
        for _ in 0..(600 / wait) {
            tokio::time::sleep(Duration::from_secs(wait)).await;
            let r = self
                .c
                .send(Method::POST, &cont_uri, Some(&cont_token), None)
                .await
                .map_err(|e| eyre!("{e}"))?;
            if r.status == 200
                && let Some(t) = r.body["access_token"]["value"].as_str()
            {
                return Ok(t.to_owned());
            }
            if r.status != 200 {
                bail!("the grant was not approved: {}", r.body);
            }
        }
        bail!("nobody approved the demo grant within ten minutes")
    }
}

/// A signing client as `demo-client` with `key_pem`, for the server at `public_url`.
fn demo_client(public_url: &str, key_pem: &str) -> Result<Demo> {
    let key = jwk::from_pkcs8_pem(key_pem)?;
    let kid = jwk::thumbprint(&key.verifying_key());
    Ok(Demo {
        c: SignedClient::new(key, &kid),
        base: crate::names::base_url(public_url),
    })
}

/// A cross-ASE payment that arrived: the incoming payment on the other ASE and what it received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paid {
    pub incoming_payment: String,
    pub received: u64,
    pub asset_code: String,
    pub asset_scale: u8,
}

/// One payment from alice at `public_url` to the wallet address `to` on another ASE, over ILP: an incoming
/// payment for `amount` there (granted to this ASE's demo-client, which the other ASE knows by its wallet
/// address), a quote and an outgoing payment here (its grant waits for the operator's approval in this
/// ASE's console), then waits until the incoming payment there is completed.
pub async fn pay_across(public_url: &str, key_pem: &str, to: &str, amount: u64) -> Result<Paid> {
    let d = demo_client(public_url, key_pem)?;
    let to = crate::names::wallet_url(to);
    let wallet = d.call(Method::GET, to, None, None).await?;
    let text = |v: &Value, k: &str| {
        v[k].as_str()
            .map(str::to_owned)
            .ok_or_else(|| eyre!("{to} is not a wallet address (no {k})"))
    };
    let (auth, resource, code) = (
        text(&wallet, "authServer")?,
        text(&wallet, "resourceServer")?,
        text(&wallet, "assetCode")?,
    );
    let scale = wallet["assetScale"]
        .as_u64()
        .and_then(|s| u8::try_from(s).ok())
        .ok_or_else(|| eyre!("{to} is not a wallet address (no assetScale)"))?;
    let client = d.wallet("demo-client");
    let grant = d
        .call(
            Method::POST,
            &auth,
            None,
            Some(json!({"access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read"]}]}, "client": client})),
        )
        .await?;
    let incoming = text(&grant["access_token"], "value")?;
    let ip = d
        .call(
            Method::POST,
            &format!("{}/incoming-payments", crate::names::base_url(&resource)),
            Some(&incoming),
            Some(json!({
                "walletAddress": to,
                "incomingAmount": {"value": amount.to_string(), "assetCode": code, "assetScale": scale},
                "metadata": {"description": "opdesk demo: a payment across ASEs"},
            })),
        )
        .await?;
    let receiver = text(&ip, "id")?;
    tracing::info!(%receiver, "demo: an incoming payment waits on the other ASE");

    let quotes = d
        .grant(json!([{"type": "quote", "actions": ["create", "read"]}]))
        .await?;
    let alice = d.wallet("alice");
    let quote = d
        .call(
            Method::POST,
            &format!("{}/quotes", d.base),
            Some(&quotes),
            Some(json!({"walletAddress": alice, "receiver": receiver, "method": "ilp"})),
        )
        .await?;
    let outgoing = d
        .approved(json!({
            "access_token": {"access": [{
                "type": "outgoing-payment", "actions": ["create", "read"], "identifier": alice,
                "limits": {"debitAmount": quote["debitAmount"]}
            }]},
            "client": client,
            "interact": {"start": ["redirect"]},
        }))
        .await?;
    let payment = d
        .call(
            Method::POST,
            &format!("{}/outgoing-payments", d.base),
            Some(&outgoing),
            Some(json!({"walletAddress": alice, "quoteId": quote["id"]})),
        )
        .await?;
    let payment = text(&payment, "id")?;
    tracing::info!(%payment, "demo: alice pays across");
    for _ in 0..600 {
        let there = d.call(Method::GET, &receiver, Some(&incoming), None).await?;
        let received = there["receivedAmount"]["value"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if there["completed"].as_bool() == Some(true) || received >= amount {
            return Ok(Paid {
                incoming_payment: receiver,
                received,
                asset_code: code,
                asset_scale: scale,
            });
        }
        let here = d.call(Method::GET, &payment, Some(&outgoing), None).await?;
        if here["failed"].as_bool() == Some(true) {
            bail!("the outgoing payment {payment} failed (the console's Outgoing pane says why)");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the payment did not arrive within a minute")
}

/// Runs the scenario against the server at `public_url`, signing with the key in `data_dir`.
pub async fn run_against(public_url: &str, key_pem: &str) -> Result<()> {
    let d = demo_client(public_url, key_pem)?;
    let n = time::OffsetDateTime::now_utc().unix_timestamp();

    let incoming = d
        .grant(json!([{"type": "incoming-payment", "actions": ["create", "read", "complete"]}]))
        .await?;
    let quotes = d
        .grant(json!([{"type": "quote", "actions": ["create", "read"]}]))
        .await?;
    let ip = |wallet: &str, amount: Option<u64>, k: u64| {
        let mut body = json!({"walletAddress": d.wallet(wallet), "metadata": {"demo": n, "n": k}});
        if let Some(a) = amount {
            let code = if wallet == "carol" { "EUR" } else { "USD" };
            body["incomingAmount"] = json!({"value": a.to_string(), "assetCode": code, "assetScale": 2});
        }
        body
    };
    let url = |p: &str| format!("{}{p}", d.base);
    let invoice = d
        .call(
            Method::POST,
            &url("/incoming-payments"),
            Some(&incoming),
            Some(ip("bob", Some(2500), 1)),
        )
        .await?;
    let tip = d
        .call(
            Method::POST,
            &url("/incoming-payments"),
            Some(&incoming),
            Some(ip("bob", None, 2)),
        )
        .await?;
    let euro = d
        .call(
            Method::POST,
            &url("/incoming-payments"),
            Some(&incoming),
            Some(ip("carol", Some(1800), 3)),
        )
        .await?;
    let closed = d
        .call(
            Method::POST,
            &url("/incoming-payments"),
            Some(&incoming),
            Some(ip("bob", Some(700), 4)),
        )
        .await?;

    // an outgoing-payment grant for alice: waits for the operator (Grants pane, `a`)
    let req = json!({
        "access_token": {"access": [{
            "type": "outgoing-payment", "actions": ["create", "read"], "identifier": d.wallet("alice"),
            "limits": {"debitAmount": {"value": "200000", "assetCode": "USD", "assetScale": 2}}
        }]},
        "client": d.wallet("demo-client"),
        "interact": {"start": ["redirect"]},
    });
    let outgoing = d.approved(req).await?;

    let usd = |v: u64| json!({"value": v.to_string(), "assetCode": "USD", "assetScale": 2});
    // quote a payment from alice to `receiver` (the remainder, or `debit`) and pay it
    let pay = |receiver: Value, debit: Option<Value>| {
        let (d, quotes, outgoing, url) = (&d, quotes.clone(), outgoing.clone(), url("/quotes"));
        async move {
            let mut body = json!({"walletAddress": d.wallet("alice"), "receiver": receiver["id"], "method": "ilp"});
            if let Some(a) = debit {
                body["debitAmount"] = a;
            }
            let q = d.call(Method::POST, &url, Some(&quotes), Some(body)).await?;
            let body = json!({"walletAddress": d.wallet("alice"), "quoteId": q["id"]});
            d.call(
                Method::POST,
                &format!("{}/outgoing-payments", d.base),
                Some(&outgoing),
                Some(body),
            )
            .await
        }
    };
    // the invoice in full, a tip into an open-ended payment, euros to carol
    pay(invoice, None).await?;
    pay(tip, Some(usd(500))).await?;
    pay(euro, None).await?;
    // fails: the receiver is completed between the quote and the payment
    let closed_url = closed["id"].as_str().unwrap_or_default().to_owned();
    let mut body = json!({"walletAddress": d.wallet("alice"), "receiver": closed["id"], "method": "ilp"});
    body["debitAmount"] = usd(700);
    let q = d.call(Method::POST, &url("/quotes"), Some(&quotes), Some(body)).await?;
    d.call(Method::POST, &format!("{closed_url}/complete"), Some(&incoming), None)
        .await?;
    let body = json!({"walletAddress": d.wallet("alice"), "quoteId": q["id"]});
    d.call(Method::POST, &url("/outgoing-payments"), Some(&outgoing), Some(body))
        .await?;
    // fails: within the grant's limit but more than alice has
    let big = d
        .call(
            Method::POST,
            &url("/incoming-payments"),
            Some(&incoming),
            Some(ip("bob", None, 5)),
        )
        .await?;
    let body = json!({"walletAddress": d.wallet("alice"), "incomingPayment": big["id"], "debitAmount": usd(150_000)});
    let _ = d
        .call(Method::POST, &url("/outgoing-payments"), Some(&outgoing), Some(body))
        .await;
    tracing::info!("demo: scenario finished");
    Ok(())
}

/// Runs the scenario from inside the console, against this very server.
pub async fn run(settings: &Settings) -> Result<()> {
    let pem = std::fs::read_to_string(settings.paths.demo_client_key())
        .map_err(|e| eyre!("the demo needs demo-client.pem in the data dir (seeded on first run): {e}"))?;
    run_against(&settings.public_url, &pem).await
}
