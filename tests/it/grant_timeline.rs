//! The GNAP timeline of a grant (#15), driven over real HTTP with signed requests: an approved grant (request,
//! interaction page, decision by the CLI binary, finish redirect whose hash recomputes from the recorded inputs,
//! continue, token issued, rotated, revoked, grant revoked), a rejected one (by an attached console), and a
//! polled one whose polls are one step with a count. Each step caused by a request carries that request's id,
//! the same id its `HttpRequest` event has; `opdesk grants show ID --timeline` prints it into a pipe.

use std::process::{Command, Output};

use opdesk::events::DomainEvent;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::broadcast::Receiver;

use crate::common::TestAse;

fn outgoing_grant(ase: &TestAse, finish: Option<&str>) -> Value {
    let mut interact = json!({"start": ["redirect"]});
    if let Some(uri) = finish {
        interact["finish"] = json!({"method": "redirect", "uri": uri, "nonce": "client-nonce-123"});
    }
    json!({
        "access_token": {"access": [{
            "type": "outgoing-payment", "actions": ["create", "read"], "identifier": ase.url("/alice"),
            "limits": {"debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}}
        }]},
        "client": {"walletAddress": ase.url("/demo-client")},
        "interact": interact,
    })
}

/// One HTTP request as its `HttpRequest` event told it.
#[derive(Debug, Clone)]
struct Seen {
    id: String,
    method: String,
    path: String,
    status: u16,
}

/// Every `HttpRequest` event published so far.
fn requests(events: &mut Receiver<opdesk::events::EventRecord>, into: &mut Vec<Seen>) {
    while let Ok(r) = events.try_recv() {
        if let DomainEvent::HttpRequest {
            id,
            method,
            path,
            status,
            ..
        } = r.event
        {
            into.push(Seen {
                id,
                method,
                path,
                status,
            });
        }
    }
}

/// The id of the one request seen with `method`, a path starting with `path` and `status` (the `nth` such).
fn request_id(seen: &[Seen], method: &str, path: &str, status: u16, nth: usize) -> String {
    let hits: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method == method && s.path.starts_with(path) && s.status == status)
        .collect();
    hits.get(nth)
        .unwrap_or_else(|| panic!("no request #{nth} {method} {path} {status} in {seen:#?}"))
        .id
        .clone()
}

async fn timeline(ase: &TestAse, id: &str) -> Vec<Value> {
    let (s, g) = ase.admin(Method::GET, &format!("/grants/{id}"), None).await;
    assert_eq!(s, 200, "{g}");
    g["timeline"].as_array().cloned().unwrap_or_default()
}

fn kinds(steps: &[Value]) -> Vec<&str> {
    steps.iter().map(|s| s["kind"].as_str().unwrap()).collect()
}

fn step<'a>(steps: &'a [Value], kind: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} step in {steps:#?}"))
}

fn is_uuid(s: &Value) -> bool {
    s.as_str().is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_grant_shows_every_step_with_its_request() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let mut events = ase.state.bus.subscribe();
    // an event per request, as a reader of `GET /admin/events?live=true` gets them
    ase.state.capture.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    let finish = "http://127.0.0.1:9/callback?state=xyz";
    let res = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&outgoing_grant(&ase, Some(finish))),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let redirect = res.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let as_nonce = res.body["interact"]["finish"].as_str().unwrap().to_owned();
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let interact_path = url::Url::parse(&redirect).unwrap().path().to_owned();

    // the browser opens the page and it reloads itself: one step, two views
    for _ in 0..2 {
        let page = ase.http.get(&redirect).send().await.unwrap();
        assert_eq!(page.status(), 200);
    }
    let (_, list) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();

    // the operator approves with the CLI (through the running server's admin API)
    let cli = TestAseRef {
        dir: ase.dir.clone(),
        addr: ase.addr,
    };
    let out = tokio::task::spawn_blocking({
        let (cli, id) = (cli.clone(), id.clone());
        move || cli.run(&["grants", "approve", &id])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects.get(&redirect).send().await.unwrap();
    assert_eq!(r.status(), 303);
    let location = url::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
    let q: std::collections::HashMap<_, _> = location.query_pairs().into_owned().collect();
    let interact_ref = q["interact_ref"].clone();

    let r = client
        .send(
            Method::POST,
            &cont_uri,
            Some(&cont_token),
            Some(&json!({"interact_ref": interact_ref})),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let token = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let manage = r.body["access_token"]["manage"].as_str().unwrap().to_owned();
    let r = client.send(Method::POST, &manage, Some(&token), None).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let token2 = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    let manage2 = r.body["access_token"]["manage"].as_str().unwrap().to_owned();
    let r = client
        .send(Method::DELETE, &manage2, Some(&token2), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    // revoking again changes nothing, so it is no step
    let r = client
        .send(Method::DELETE, &manage2, Some(&token2), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);
    let r = client
        .send(Method::DELETE, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 204);

    let steps = timeline(&ase, &id).await;
    assert_eq!(
        kinds(&steps),
        [
            "requested",
            "interaction_opened",
            "decided",
            "finish_redirect",
            "continued",
            "token_issued",
            "token_rotated",
            "token_revoked",
            "grant_revoked"
        ],
        "{steps:#?}"
    );
    let seqs: Vec<i64> = steps.iter().map(|s| s["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<_>>());
    let ats: Vec<&str> = steps.iter().map(|s| s["at"].as_str().unwrap()).collect();
    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "{ats:?}");

    // the request: access with its limits, the client, the raw JSON as sent
    let requested = step(&steps, "requested");
    assert_eq!(requested["actor"], "client");
    assert_eq!(requested["detail"]["client"], ase.url("/demo-client"));
    assert_eq!(
        requested["detail"]["access"][0]["limits"]["debitAmount"]["value"],
        "500"
    );
    assert_eq!(requested["detail"]["raw"], outgoing_grant(&ase, Some(finish)));
    assert_eq!(requested["detail"]["finish"]["uri"], finish);

    let opened = step(&steps, "interaction_opened");
    assert_eq!(opened["actor"], "browser");
    assert_eq!(opened["count"], 2, "a reload adds to the step: {opened}");
    assert!(opened["lastAt"].is_string());

    let decided = step(&steps, "decided");
    assert_eq!(decided["actor"], "cli");
    assert_eq!(decided["detail"]["outcome"], "approved");

    // the finish redirect: interact_ref, the hash and the inputs it was computed from, which recompute to it
    let fin = step(&steps, "finish_redirect");
    let d = &fin["detail"];
    assert_eq!(d["interactRef"], interact_ref.as_str());
    assert_eq!(d["hash"], q["hash"].as_str());
    assert_eq!(d["uri"], location.as_str());
    let inputs = &d["hashInputs"];
    assert_eq!(inputs["clientNonce"], "client-nonce-123");
    assert_eq!(inputs["serverNonce"], as_nonce.as_str());
    assert_eq!(inputs["interactRef"], interact_ref.as_str());
    assert_eq!(inputs["grantEndpoint"], ase.url("/auth"));
    assert_eq!(
        opdesk::httpsig::interaction_hash_std(
            inputs["clientNonce"].as_str().unwrap(),
            inputs["serverNonce"].as_str().unwrap(),
            inputs["interactRef"].as_str().unwrap(),
            inputs["grantEndpoint"].as_str().unwrap(),
        ),
        d["hash"].as_str().unwrap()
    );

    let continued = step(&steps, "continued");
    assert_eq!(continued["detail"]["interactRef"], true);
    assert_eq!(continued["detail"]["tokenIssued"], true);
    let issued = step(&steps, "token_issued");
    assert_eq!(issued["detail"]["hint"], format!("{}…", &token[..6]));
    let rotated = step(&steps, "token_rotated");
    assert_eq!(rotated["detail"]["fromHint"], format!("{}…", &token[..6]));
    assert_eq!(rotated["detail"]["hint"], format!("{}…", &token2[..6]));
    assert_eq!(step(&steps, "grant_revoked")["detail"]["tokens"], 0);
    // no token value anywhere in the timeline
    let all = serde_json::to_string(&steps).unwrap();
    assert!(!all.contains(&token) && !all.contains(&token2) && !all.contains(&cont_token));

    // each step links to the HTTP request that caused it: the same id as its HttpRequest event
    requests(&mut events, &mut seen);
    let cont_path = url::Url::parse(&cont_uri).unwrap().path().to_owned();
    let manage_path = url::Url::parse(&manage).unwrap().path().to_owned();
    let manage2_path = url::Url::parse(&manage2).unwrap().path().to_owned();
    let expect = [
        ("requested", request_id(&seen, "POST", "/auth", 200, 0)),
        ("interaction_opened", request_id(&seen, "GET", &interact_path, 200, 0)),
        (
            "decided",
            // the operator's command, sent by the admin client
            request_id(&seen, "POST", "/admin/commands", 200, 0),
        ),
        ("finish_redirect", request_id(&seen, "GET", &interact_path, 303, 0)),
        ("continued", request_id(&seen, "POST", &cont_path, 200, 0)),
        ("token_issued", request_id(&seen, "POST", &cont_path, 200, 0)),
        ("token_rotated", request_id(&seen, "POST", &manage_path, 200, 0)),
        ("token_revoked", request_id(&seen, "DELETE", &manage2_path, 204, 0)),
        ("grant_revoked", request_id(&seen, "DELETE", &cont_path, 204, 0)),
    ];
    for (kind, rid) in expect {
        let s = step(&steps, kind);
        assert!(is_uuid(&s["requestId"]), "{s}");
        assert_eq!(s["requestId"], rid.as_str(), "{kind}");
    }
    assert_eq!(
        opened["lastRequestId"],
        request_id(&seen, "GET", &interact_path, 200, 1).as_str()
    );

    // the CLI prints the timeline into a pipe: one line per step, no escape codes; --json gives the steps
    let out = tokio::task::spawn_blocking({
        let id = id.clone();
        move || {
            (
                cli.run(&["grants", "show", &id, "--timeline"]),
                cli.run(&["grants", "show", &id, "--timeline", "--json"]),
            )
        }
    })
    .await
    .unwrap();
    let (text, json_out) = out;
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(!text.contains('\u{1b}'), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!("grant {id}  [revoked]")), "{text}");
    let short = |k: &str| {
        let id = step(&steps, k)["requestId"].as_str().unwrap();
        id[id.len() - 8..].to_owned()
    };
    let step_lines: Vec<&&str> = lines
        .iter()
        .filter(|l| l.as_bytes().first().is_some_and(u8::is_ascii_digit))
        .collect();
    assert_eq!(step_lines.len(), 9, "{text}");
    for (line, label) in step_lines.iter().zip([
        "request",
        "interaction page",
        "decision",
        "finish redirect",
        "continue",
        "token issued",
        "token rotated",
        "token revoked",
        "grant revoked",
    ]) {
        assert_eq!(&line[12..14], "  ", "{line}");
        assert!(line[14..].starts_with(label), "{line}");
    }
    assert!(
        text.contains(&format!("approved by CLI  [request {}]", short("decided"))),
        "{text}"
    );
    assert!(text.contains(&format!("interact_ref={interact_ref}")), "{text}");
    assert!(text.contains("×2 until"), "{text}");
    assert!(text.contains("limits: debit ≤ 5.00 USD"), "{text}");
    assert_ne!(short("requested"), short("decided"), "short ids tell requests apart");
    assert!(text.contains("hash = base64(sha-256(\"client-nonce-123\\n"), "{text}");
    let j: Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(j.as_array().unwrap().len(), 9);
    assert_eq!(j[2]["requestId"], step(&steps, "decided")["requestId"]);
}

/// Runs the binary on a test server's data dir (from a blocking thread).
#[derive(Clone)]
struct TestAseRef {
    dir: std::sync::Arc<tempfile::TempDir>,
    addr: std::net::SocketAddr,
}

impl TestAseRef {
    fn run(&self, args: &[&str]) -> Output {
        let cfg = self.dir.path().join("test-config.toml");
        std::fs::write(&cfg, "").unwrap();
        Command::new(env!("CARGO_BIN_EXE_opdesk"))
            .args([
                "--data-dir",
                self.dir.path().to_str().unwrap(),
                "--listen",
                &self.addr.to_string(),
            ])
            .args(args)
            .env_remove("RUST_LOG")
            .env("OPDESK_CONFIG", &cfg)
            .output()
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_grant_shows_the_decision_by_an_attached_console_and_the_rejection_redirect() {
    let ase = TestAse::spawn().await;
    let client = ase.demo_client().await;
    let mut events = ase.state.bus.subscribe();
    // an event per request, as a reader of `GET /admin/events?live=true` gets them
    ase.state.capture.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    let finish = "http://127.0.0.1:9/callback";
    let res = client
        .send(
            Method::POST,
            &ase.url("/auth"),
            None,
            Some(&outgoing_grant(&ase, Some(finish))),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let redirect = res.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let (_, list) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();

    // an attached console rejects it (through the admin API)
    use opdesk::tui::desk::Desk as _;
    let remote = opdesk::console::remote::Remote::new(
        opdesk::admin::AdminClient::new(&ase.base, &ase.admin_token).unwrap(),
        opdesk::console::remote::Source::Fixed,
    );
    remote
        .run(opdesk::control::Command::RejectGrant {
            id: id.clone(),
            reason: Some("not today".into()),
        })
        .await
        .unwrap();
    // the console's detail fetches the grant with its timeline the same way
    let Ok(opdesk::control::Found::Grant(shown)) = remote.ask(opdesk::control::Query::Grant { id: id.clone() }).await
    else {
        panic!("the grant with its timeline")
    };
    assert_eq!(kinds_of(&shown), ["requested", "decided"]);

    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = no_redirects.get(&redirect).send().await.unwrap();
    assert_eq!(r.status(), 303);

    let steps = timeline(&ase, &id).await;
    assert_eq!(kinds(&steps), ["requested", "decided", "finish_redirect"], "{steps:#?}");
    let decided = step(&steps, "decided");
    assert_eq!(decided["actor"], "console");
    assert_eq!(decided["detail"]["outcome"], "rejected");
    assert_eq!(decided["detail"]["reason"], "not today");
    let fin = step(&steps, "finish_redirect");
    assert_eq!(fin["detail"]["result"], "grant_rejected");
    assert!(fin["detail"].get("hash").is_none());
    requests(&mut events, &mut seen);
    assert_eq!(
        decided["requestId"],
        request_id(&seen, "POST", "/admin/commands", 200, 0).as_str()
    );

    // the client continues anyway: refused, and the timeline says how (the same refusal twice is one step)
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    for body in [
        json!({"interact_ref": "guess"}),
        json!({"interact_ref": "guess"}),
        json!({}),
    ] {
        let r = client
            .send(Method::POST, &cont_uri, Some(&cont_token), Some(&body))
            .await
            .unwrap();
        assert!(r.status >= 400, "{}", r.body);
    }
    let steps = timeline(&ase, &id).await;
    assert_eq!(
        kinds(&steps),
        [
            "requested",
            "decided",
            "finish_redirect",
            "continue_refused",
            "continue_refused"
        ],
        "{steps:#?}"
    );
    assert_eq!(steps[3]["count"], 2, "{:#?}", steps[3]);
    assert_eq!(steps[3]["detail"]["error"], "invalid_continuation");
    assert_eq!(steps[4]["count"], 1);
    assert_eq!(steps[4]["detail"]["error"], "request_denied");
    assert_eq!(
        steps[4]["detail"]["description"],
        "the resource owner rejected the grant"
    );
    requests(&mut events, &mut seen);
    let cont_path = url::Url::parse(&cont_uri).unwrap().path().to_owned();
    assert_eq!(
        steps[3]["requestId"],
        request_id(&seen, "POST", &cont_path, 404, 0).as_str()
    );
    assert_eq!(
        steps[3]["lastRequestId"],
        request_id(&seen, "POST", &cont_path, 404, 1).as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_grant_shows_its_expiry_derived_then_noticed() {
    let ase = TestAse::spawn_with("[gnap]\nwait_secs = 0\ninteraction_expires_in_secs = 1\n").await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&outgoing_grant(&ase, None)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let (_, list) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    // nobody noticed yet: the view derives the step (not stored: seq 0, by the server)
    let steps = timeline(&ase, &id).await;
    assert_eq!(kinds(&steps), ["requested", "expired"], "{steps:#?}");
    assert_eq!(steps[1]["seq"], 0);
    assert_eq!(steps[1]["actor"], "server");
    assert!(steps[1]["requestId"].is_null());
    // the client's poll notices it: a stored step with that request, and the refusal
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 401, "{}", r.body);
    let steps = timeline(&ase, &id).await;
    assert_eq!(
        kinds(&steps),
        ["requested", "expired", "continue_refused"],
        "{steps:#?}"
    );
    assert_eq!(steps[1]["seq"], 2);
    assert_eq!(steps[1]["actor"], "client");
    assert!(is_uuid(&steps[1]["requestId"]));
    assert_eq!(steps[2]["requestId"], steps[1]["requestId"]);
    assert_eq!(steps[2]["detail"]["description"], "the interaction expired");
}

fn kinds_of(g: &opdesk::gnap::service::GrantView) -> Vec<&'static str> {
    g.timeline.iter().map(|s| s.kind.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_grant_coalesces_its_polls_into_one_step() {
    let ase = TestAse::spawn_with("[gnap]\nwait_secs = 0\n").await;
    let client = ase.demo_client().await;
    let mut events = ase.state.bus.subscribe();
    // an event per request, as a reader of `GET /admin/events?live=true` gets them
    ase.state.capture.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&outgoing_grant(&ase, None)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let cont_uri = res.body["continue"]["uri"].as_str().unwrap().to_owned();
    let cont_token = res.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..5 {
        let r = client
            .send(Method::POST, &cont_uri, Some(&cont_token), None)
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(r.body.get("access_token").is_none());
    }
    let (_, list) = ase.admin(Method::GET, "/grants?state=pending", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let (s, b) = ase
        .admin(Method::POST, &format!("/grants/{id}/approve"), Some("{}"))
        .await;
    assert_eq!(s, 200, "{b}");
    let r = client
        .send(Method::POST, &cont_uri, Some(&cont_token), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body["access_token"]["value"].is_string());

    let steps = timeline(&ase, &id).await;
    assert_eq!(
        kinds(&steps),
        ["requested", "polled", "decided", "continued", "token_issued"],
        "{steps:#?}"
    );
    let polled = step(&steps, "polled");
    assert_eq!(polled["count"], 5, "five polls, one row: {polled}");
    assert_eq!(polled["detail"]["state"], "pending");
    assert!(polled["lastAt"].as_str().unwrap() >= polled["at"].as_str().unwrap());
    let decided = step(&steps, "decided");
    assert_eq!(
        decided["actor"], "admin_api",
        "no actor header: a direct admin API call"
    );
    assert_eq!(step(&steps, "continued")["detail"]["interactRef"], false);

    requests(&mut events, &mut seen);
    let cont_path = url::Url::parse(&cont_uri).unwrap().path().to_owned();
    assert_eq!(
        polled["requestId"],
        request_id(&seen, "POST", &cont_path, 200, 0).as_str()
    );
    assert_eq!(
        polled["lastRequestId"],
        request_id(&seen, "POST", &cont_path, 200, 4).as_str()
    );
    assert_eq!(
        step(&steps, "continued")["requestId"],
        request_id(&seen, "POST", &cont_path, 200, 5).as_str()
    );
    assert_eq!(
        decided["requestId"],
        request_id(&seen, "POST", &format!("/admin/grants/{id}/approve"), 200, 0).as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_approved_grant_says_the_policy_decided_and_a_non_interactive_one_is_issued_at_once() {
    let ase = TestAse::spawn_with("[gnap]\nauto_approve = true\n").await;
    let client = ase.demo_client().await;
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&outgoing_grant(&ase, None)))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let (_, list) = ase.admin(Method::GET, "/grants", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let steps = timeline(&ase, &id).await;
    assert_eq!(kinds(&steps), ["requested", "decided"]);
    assert_eq!(steps[1]["actor"], "policy");
    assert_eq!(steps[1]["requestId"], steps[0]["requestId"]);

    let body = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read"], "identifier": ase.url("/bob")}]},
        "client": ase.url("/demo-client"),
    });
    let res = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{}", res.body);
    let (_, list) = ase.admin(Method::GET, "/grants", None).await;
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let steps = timeline(&ase, &id).await;
    assert_eq!(kinds(&steps), ["requested", "token_issued"]);
    assert_eq!(steps[0]["detail"]["interact"], "non-interactive");
}
