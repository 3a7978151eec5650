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

/// Runs the scenario against the server at `public_url`, signing with the key in `data_dir`.
pub async fn run_against(public_url: &str, key_pem: &str) -> Result<()> {
    let key = jwk::from_pkcs8_pem(key_pem)?;
    let kid = jwk::thumbprint(&key.verifying_key());
    let d = Demo {
        c: SignedClient::new(key, &kid),
        base: public_url.trim_end_matches('/').to_owned(),
    };
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
    let pending = d.call(Method::POST, &url("/auth"), None, Some(req)).await?;
    let cont_uri = pending["continue"]["uri"].as_str().unwrap_or_default().to_owned();
    let cont_token = pending["continue"]["access_token"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let wait = pending["continue"]["wait"].as_u64().unwrap_or(1).max(1);
    tracing::info!("demo: an outgoing-payment grant waits for your approval in the Grants pane");
    let mut outgoing = None;
    for _ in 0..(600 / wait) {
        tokio::time::sleep(Duration::from_secs(wait)).await;
        let r =
            d.c.send(Method::POST, &cont_uri, Some(&cont_token), None)
                .await
                .map_err(|e| eyre!("{e}"))?;
        if r.status == 200 && r.body["access_token"]["value"].is_string() {
            outgoing = r.body["access_token"]["value"].as_str().map(str::to_owned);
            break;
        }
        if r.status != 200 {
            bail!("the grant was not approved: {}", r.body);
        }
    }
    let outgoing = outgoing.ok_or_else(|| eyre!("nobody approved the demo grant within ten minutes"))?;

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
