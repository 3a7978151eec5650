//! The account holder decides on the interaction page, over real HTTP: signing in with the wallet owner's
//! passphrase, the session cookie and its rotation, the CSRF token, wrong passphrases and their limit, the
//! decision and the finish redirect, the token that follows, who the timeline says decided, and the policy
//! (`[consent] decide`) for the operator.

use reqwest::{Method, StatusCode, header};
use serde_json::{Value, json};

use crate::common::TestAse;

fn outgoing_grant(ase: &TestAse, finish: &str) -> Value {
    json!({
        "access_token": {"access": [{
            "type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}
        }]},
        "client": {"walletAddress": ase.url("/demo-client")},
        "interact": {"start": ["redirect"], "finish": {"method": "redirect", "uri": finish, "nonce": "n-1"}},
    })
}

async fn set_passphrase(ase: &TestAse, wallet: &str, passphrase: &str) {
    let body = json!({"command": "setOwnerPassphrase", "wallet": wallet,
                      "passphrase": {"action": "set", "passphrase": passphrase}});
    let (s, b) = ase.admin(Method::POST, "/commands", Some(&body.to_string())).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["value"]["hasPassphrase"], true, "{b}");
}

/// A grant request for alice's money: (the interaction page's URL, the continue URI, its token).
async fn request(ase: &TestAse, client: &opdesk::client::SignedClient) -> (String, String, String) {
    let body = outgoing_grant(ase, "http://127.0.0.1:9/done?state=s");
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let s = |p: &str| r.body.pointer(p).and_then(Value::as_str).unwrap().to_owned();
    (
        s("/interact/redirect"),
        s("/continue/uri"),
        s("/continue/access_token/value"),
    )
}

/// A browser without a cookie jar of its own: the page's cookie is carried by hand, redirects not followed.
struct Browser {
    http: reqwest::Client,
    cookie: Option<String>,
}

/// What the page answered: status, its `Set-Cookie`, `Location` and body.
struct Answer {
    status: StatusCode,
    set_cookie: Option<String>,
    location: Option<String>,
    html: String,
}

impl Browser {
    fn new() -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Self { http, cookie: None }
    }

    async fn send(&mut self, req: reqwest::RequestBuilder) -> Answer {
        let req = match &self.cookie {
            Some(c) => req.header(header::COOKIE, format!("opdesk_consent={c}")),
            None => req,
        };
        let r = req.send().await.unwrap();
        let h = |n: header::HeaderName| r.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
        let (set_cookie, location) = (h(header::SET_COOKIE), h(header::LOCATION));
        if let Some(c) = &set_cookie {
            let value = c.split(';').next().unwrap().trim_start_matches("opdesk_consent=");
            self.cookie = Some(value.to_owned());
        }
        let status = r.status();
        Answer {
            status,
            set_cookie,
            location,
            html: r.text().await.unwrap(),
        }
    }

    async fn get(&mut self, url: &str) -> Answer {
        let req = self.http.get(url);
        self.send(req).await
    }

    async fn post(&mut self, url: &str, form: &[(&str, &str)]) -> Answer {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let req = self
            .http
            .post(url)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body);
        self.send(req).await
    }
}

/// The CSRF token in a page's form.
fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    html[at..].split('"').next().unwrap().to_owned()
}

#[tokio::test]
async fn the_owner_signs_in_and_approves_then_the_client_gets_its_token() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    set_passphrase(&ase, "alice", "correct horse battery").await;
    let (page, cont_uri, cont_token) = request(&ase, &client).await;
    let path = url::Url::parse(&page).unwrap().path().to_owned();

    let mut b = Browser::new();
    let first = b.get(&page).await;
    assert_eq!(first.status, 200);
    assert!(first.html.contains("type=\"password\"") && first.html.contains("name=\"passphrase\""));
    assert!(
        !first.html.contains("name=\"decision\""),
        "no decision before signing in"
    );
    assert!(
        !first.html.contains("http-equiv=\"refresh\""),
        "a typed passphrase is not reloaded away"
    );
    let cookie = first.set_cookie.clone().expect("a session cookie");
    for attr in ["HttpOnly", "SameSite=Strict", &format!("Path={path}")] {
        assert!(cookie.contains(attr), "{cookie} lacks {attr}");
    }
    let token = csrf(&first.html);

    // a wrong passphrase: refused, no decision forms
    let wrong = b
        .post(&page, &[("csrf", &token), ("passphrase", "battery horse")])
        .await;
    assert_eq!(wrong.status, 401, "{}", wrong.html);
    assert!(wrong.html.contains("not right") && !wrong.html.contains("name=\"decision\""));
    // a form without the session's CSRF token (a cross-site post): refused
    let forged = b
        .post(&page, &[("csrf", "guess"), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(forged.status, 403, "{}", forged.html);
    let mut stranger = Browser::new();
    let cross = stranger
        .post(&page, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(cross.status, 403, "no cookie, no sign-in: {}", cross.html);

    // the right one: back to the page (post, redirect, get), under a new session token
    let before = b.cookie.clone();
    let ok = b
        .post(&page, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(ok.status, 303, "{}", ok.html);
    assert_eq!(ok.location.as_deref(), Some(path.as_str()));
    assert_ne!(b.cookie, before, "the session token changes on sign-in");
    let signed_in = b.get(&page).await;
    assert!(
        signed_in.html.contains("name=\"decision\" value=\"approve\""),
        "{}",
        signed_in.html
    );
    let token = csrf(&signed_in.html);

    // the token from before signing in is not signed in
    let mut old = Browser::new();
    old.cookie = before;
    let stale = old.post(&page, &[("csrf", &token), ("decision", "approve")]).await;
    assert_eq!(stale.status, 403, "{}", stale.html);

    let mut events = ase.state.bus.subscribe();
    let decided = b.post(&page, &[("csrf", &token), ("decision", "approve")]).await;
    assert_eq!(decided.status, 303, "{}", decided.html);
    // the event (and so the webhook) says who decided
    let by = loop {
        match tokio::time::timeout(std::time::Duration::from_secs(2), events.recv()).await {
            Ok(Ok(r)) => match r.event {
                opdesk::events::DomainEvent::GrantApproved { by, .. } => break by,
                _ => continue,
            },
            other => panic!("no GrantApproved event: {other:?}"),
        }
    };
    assert_eq!(by.as_deref(), Some("owner"));
    let location = url::Url::parse(decided.location.as_deref().unwrap()).unwrap();
    assert!(location.as_str().starts_with("http://127.0.0.1:9/done?state=s&"));
    let q: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    let r = client
        .send(
            Method::POST,
            &cont_uri,
            Some(&cont_token),
            Some(&json!({"interact_ref": q["interact_ref"]})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["access_token"]["value"].is_string());

    // the grant's timeline says the owner decided on the page
    let (_, grants) = ase.admin(Method::GET, "/grants?state=finalized", None).await;
    let id = grants[0]["id"].as_str().unwrap().to_owned();
    let (_, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    let decided = g["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "decided")
        .unwrap_or_else(|| panic!("no decided step: {g}"));
    assert_eq!(decided["actor"], "owner", "{decided}");
}

#[tokio::test]
async fn failed_sign_ins_are_limited_per_grant_even_for_the_right_passphrase() {
    let ase = TestAse::spawn_with("[consent]\nmax_failures_per_grant = 3\n").await;
    let client = ase.demo_client().await;
    set_passphrase(&ase, "alice", "correct horse battery").await;
    let (page, _, _) = request(&ase, &client).await;
    let mut b = Browser::new();
    let token = csrf(&b.get(&page).await.html);
    for _ in 0..3 {
        let r = b.post(&page, &[("csrf", &token), ("passphrase", "wrong wrong")]).await;
        assert_eq!(r.status, 401);
    }
    let r = b
        .post(&page, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(r.status, 429, "{}", r.html);
    assert!(r.html.contains("Too many") && !r.html.contains("name=\"decision\""));
    // the timeline shows the failures and the lockout; the operator lifts it, and the owner signs in
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    let (_, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    let kinds: Vec<(String, i64)> = g["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["kind"].as_str().unwrap().to_owned(), s["count"].as_i64().unwrap()))
        .collect();
    let failed: i64 = kinds
        .iter()
        .filter(|(k, _)| k == "sign_in_failed")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(failed, 3, "{kinds:?}");
    assert!(kinds.iter().any(|(k, _)| k == "locked_out"), "{kinds:?}");
    let body = json!({"command": "unlockSignIns", "grant": id}).to_string();
    let (s, u) = ase.admin(Method::POST, "/commands", Some(&body)).await;
    assert_eq!(s, 200, "{u}");
    assert_eq!(u["value"]["forgotten"], 3, "{u}");
    let r = b
        .post(&page, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(r.status, 303, "unlocked: {}", r.html);
    let (_, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    assert!(g.to_string().contains("\"kind\":\"unlocked\""), "{g}");
    // another grant of the same wallet has its own count (the wallet's is higher)
    let (other, _, _) = request(&ase, &client).await;
    let mut b = Browser::new();
    let token = csrf(&b.get(&other).await.html);
    let r = b
        .post(&other, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(r.status, 303, "{}", r.html);

    // expired sessions and old failures are pruned; live ones are kept
    let store = ase.state.store.clone();
    let count = |sql: &'static str| {
        let store = store.clone();
        async move {
            store
                .call(move |c| Ok::<i64, opdesk::store::Error>(c.query_row(sql, [], |r| r.get(0))?))
                .await
                .unwrap()
        }
    };
    let prune = |at: time::OffsetDateTime| {
        let store = store.clone();
        async move {
            store
                .call(move |c| opdesk::store::consent::prune(c, at, at - time::Duration::days(1), 100))
                .await
                .unwrap()
        }
    };
    let now = time::OffsetDateTime::now_utc();
    assert_eq!(prune(now).await, 0, "nothing has expired yet");
    assert!(count("SELECT COUNT(*) FROM consent_sessions").await >= 2);
    assert!(prune(now + time::Duration::days(2)).await >= 2);
    assert_eq!(count("SELECT COUNT(*) FROM consent_sessions").await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM consent_failures").await, 0);
}

#[tokio::test]
async fn the_owner_rejects_and_the_operator_is_refused_when_the_policy_says_owner() {
    let ase = TestAse::spawn_with("[consent]\ndecide = \"owner\"\n").await;
    let client = ase.demo_client().await;
    set_passphrase(&ase, "alice", "correct horse battery").await;
    let (page, _, _) = request(&ase, &client).await;
    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    let (s, b) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 409, "{b}");

    let mut b = Browser::new();
    let token = csrf(&b.get(&page).await.html);
    let r = b
        .post(&page, &[("csrf", &token), ("passphrase", "correct horse battery")])
        .await;
    assert_eq!(r.status, 303);
    let token = csrf(&b.get(&page).await.html);
    let r = b.post(&page, &[("csrf", &token), ("decision", "reject")]).await;
    assert_eq!(r.status, 303, "{}", r.html);
    assert!(r.location.unwrap().contains("result=grant_rejected"));
    let (_, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    assert_eq!(g["state"], "rejected");
    // the link opened again says it was decided, and sends the browser nowhere
    let again = Browser::new().get(&page).await;
    assert_eq!(again.status, 200, "{}", again.html);
    assert!(again.location.is_none());
    assert!(again.html.contains("already decided (rejected)"), "{}", again.html);
    // the grant's detail no longer says until when it can be decided
    let facts = g["summary"].as_array().expect("a summary");
    let last = facts.last().unwrap();
    assert_eq!(last["label"], "Decided", "{g}");
    assert!(!g.to_string().contains("Decide by"), "{g}");
}

#[tokio::test]
async fn without_a_passphrase_or_with_the_operator_deciding_the_page_waits() {
    let ase = TestAse::spawn_with("[consent]\ndecide = \"operator\"\n").await;
    let client = ase.demo_client().await;
    let (page, _, _) = request(&ase, &client).await;
    let mut b = Browser::new();
    let r = b.get(&page).await;
    assert!(r.html.contains("Waiting for the account holder") && !r.html.contains("type=\"password\""));
    assert!(r.set_cookie.is_none());
    set_passphrase(&ase, "alice", "correct horse battery").await;
    let r = b.get(&page).await;
    assert!(
        !r.html.contains("type=\"password\""),
        "the operator decides under decide = operator"
    );
    // the page's policy: nothing but its own style
    let res = b.http.get(&page).send().await.unwrap();
    let csp = res.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(
        csp.starts_with("default-src 'none'") && !csp.contains("unsafe"),
        "{csp}"
    );
}

/// The page says what is approved in four facts (who asks, to whom and how much, the most that can leave and
/// why, until when), and `grants show` (the admin query) carries the same words.
#[tokio::test]
async fn the_page_says_who_asks_to_whom_the_most_and_until_when_as_grants_show_does() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    set_passphrase(&ase, "alice", "correct horse battery").await;
    let body = json!({"command": "setPublicName", "wallet": "bob", "publicName": "Bob's <Bakery>"});
    let (s, b) = ase.admin(Method::POST, "/commands", Some(&body.to_string())).await;
    assert_eq!(s, 200, "{b}");
    let base = ase.url("");
    let token = |access: Value| {
        let client = &client;
        let base = base.clone();
        async move { crate::common::grant_token(client, &base, access).await }
    };
    let t = token(json!([{"type": "incoming-payment", "actions": ["create"]}])).await;
    let body = json!({"walletAddress": ase.url("/bob"),
                      "incomingAmount": {"value": "250", "assetCode": "USD", "assetScale": 2}});
    let incoming = client
        .send(Method::POST, &ase.url("/incoming-payments"), Some(&t), Some(&body))
        .await
        .unwrap();
    assert_eq!(incoming.status, 201, "{}", incoming.body);
    let receiver = incoming.body["id"].as_str().unwrap().to_owned();
    let t = token(json!([{"type": "quote", "actions": ["create"]}])).await;
    let body = json!({"walletAddress": ase.url("/alice"), "receiver": receiver, "method": "ilp"});
    let quote = client
        .send(Method::POST, &ase.url("/quotes"), Some(&t), Some(&body))
        .await
        .unwrap();
    assert_eq!(quote.status, 201, "{}", quote.body);
    let mut grant = outgoing_grant(&ase, "http://127.0.0.1:9/done");
    grant["access_token"]["access"][0]["limits"] =
        json!({"debitAmount": quote.body["debitAmount"], "receiver": receiver});
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&grant))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let page = r.body["interact"]["redirect"].as_str().unwrap().to_owned();

    let html = Browser::new().get(&page).await.html;
    for words in [
        "<dt>Who asks</dt><dd>Demo client",
        &format!("<small>{}</small>", ase.url("/demo-client")),
        "<dt>To whom</dt><dd>Bob&#39;s &lt;Bakery&gt; receives 2.50 USD",
        "<dt>The most that can leave</dt><dd>2.50 USD from alice",
        "<dt>Decide by</dt><dd>",
        "After that the request expires, nothing is paid, and the app has to ask again.",
        "<details><summary>The request in detail</summary>",
    ] {
        assert!(html.contains(words), "{words:?} not in {html}");
    }
    assert!(!html.contains("<Bakery>"), "escaped");

    let (_, pending) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    // the operator's list carries the same words for each pending grant (the console's grant detail)
    assert_eq!(
        pending[0]["summary"][1]["text"], "Bob's <Bakery> receives 2.50 USD",
        "{pending}"
    );
    let q = json!({"query": "grant", "id": id}).to_string();
    let (s, g) = ase.admin(Method::POST, "/queries", Some(&q)).await;
    assert_eq!(s, 200, "{g}");
    let facts = g["value"]["summary"].as_array().expect("a summary").clone();
    let labels: Vec<&str> = facts.iter().map(|f| f["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "Who asks",
            "To whom",
            "The most that can leave",
            "Who decides",
            "Decide by"
        ]
    );
    assert_eq!(facts[1]["text"], "Bob's <Bakery> receives 2.50 USD", "{g}");
    assert_eq!(facts[1]["url"], receiver.as_str());
}
