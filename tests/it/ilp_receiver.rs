//! The STREAM receiver end to end: incoming payments created over Open Payments hand out `methods[ilp]`; a
//! sender built from the crate's own `ilp` module (as any STREAM sender would: ConnectionNewAddress, then
//! money frames with fulfillable conditions) posts real OER Prepares to `POST /ilp` with the peer's token.
//! Checked: fulfils grow `receivedAmount` (public GET) and the wallet; overshoot is refused with the room
//! advertised; completed and expired payments close the connection with an application error; transport
//! errors (401/415/413) and packet errors (F01, F02, F06, F08, R00); amounts that overflow the totals get a
//! final F99, not a retryable T00; IL-DCP; concurrent packets never overfill a payment; the server keeps
//! serving.

use std::time::{Duration, Instant};

use opdesk::ilp::{
    Address, AmountTooLarge, ErrorCode, Frame, Packet, PacketType, Prepare, Reject, StreamErrorCode, StreamPacket,
    Timestamp,
    crypto::{StreamKeys, condition_for, random_condition},
    ildcp,
};
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{TestAse, assert_matches_schema};

const TOKEN: &str = "peer-token-for-the-tests";

pub(crate) const CONFIG: &str = r#"
[ilp]
address = "test.opdesk"

[[ilp.peers]]
name = "sender"
incoming_tokens = ["another-token", "peer-token-for-the-tests"]
max_packet_amount = 5000
asset_code = "USD"
asset_scale = 2
"#;

/// An incoming-payment access token for `wallet` (create, read, complete).
async fn incoming_token(ase: &TestAse, client: &opdesk::client::SignedClient, wallet: &str) -> String {
    let body = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["create", "read", "complete"], "identifier": ase.url(&format!("/{wallet}"))}]},
        "client": ase.url("/demo-client"),
    });
    let r = client
        .send(Method::POST, &ase.url("/auth"), None, Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["access_token"]["value"].as_str().unwrap().to_owned()
}

/// Creates an incoming payment on `wallet` over Open Payments; returns the full resource (with methods).
async fn create_incoming(
    ase: &TestAse,
    client: &opdesk::client::SignedClient,
    token: &str,
    wallet: &str,
    extra: Value,
) -> Value {
    let mut body = json!({"walletAddress": ase.url(&format!("/{wallet}"))});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r = client
        .send(Method::POST, &ase.url("/incoming-payments"), Some(token), Some(&body))
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

async fn public_received(ase: &TestAse, id: &str) -> String {
    let v: Value = ase.http.get(id).send().await.unwrap().json().await.unwrap();
    v["receivedAmount"]["value"].as_str().unwrap().to_owned()
}

/// What came back for a Prepare.
#[derive(Debug)]
pub(crate) enum Reply {
    Fulfill(StreamPacket),
    /// The reject and its decrypted STREAM reply, if it carried one.
    Reject(Reject, Option<StreamPacket>),
}

impl Reply {
    pub(crate) fn stream(&self) -> &StreamPacket {
        match self {
            Self::Fulfill(s) | Self::Reject(_, Some(s)) => s,
            Self::Reject(r, None) => panic!("no STREAM reply in {r:?}"),
        }
    }

    pub(crate) fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Fulfill(_) => None,
            Self::Reject(r, _) => Some(r.code),
        }
    }
}

/// A minimal STREAM sender over ILP-over-HTTP.
pub(crate) struct Sender {
    http: reqwest::Client,
    url: String,
    token: String,
    destination: Address,
    keys: StreamKeys,
    sequence: u64,
    /// What a packet of `n` is worth at the receiver, as `n × num / den` rounded down (1/1 within one asset).
    pub(crate) rate: (u128, u128),
}

impl Sender {
    fn new(ase: &TestAse, method: &Value) -> Self {
        assert_eq!(method["type"], "ilp");
        Self::to(
            &ase.base,
            method["ilpAddress"].as_str().unwrap(),
            method["sharedSecret"].as_str().unwrap(),
        )
    }

    /// A sender to the server at `base`, for the credentials `destination` and `shared_secret` (base64url), with
    /// the peer token of [`CONFIG`].
    pub(crate) fn to(base: &str, destination: &str, shared_secret: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            url: format!("{base}/ilp"),
            token: TOKEN.into(),
            destination: Address::new(destination).unwrap(),
            keys: StreamKeys::derive(&base64_url(shared_secret)),
            sequence: 0,
            rate: (1, 1),
        }
    }

    fn for_payment(ase: &TestAse, payment: &Value) -> Self {
        Self::new(ase, &payment["methods"][0])
    }

    async fn post(&self, body: Vec<u8>) -> (u16, Vec<u8>) {
        post_ilp(&self.http, &self.url, Some(&self.token), body).await
    }

    fn expiry() -> Timestamp {
        let ms = i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap();
        Timestamp::from_unix_millis(ms + 30_000).unwrap()
    }

    /// Sends one STREAM packet of `amount` carrying `frames`; `fulfillable` picks a real or random condition.
    pub(crate) async fn send(
        &mut self,
        amount: u64,
        min_destination: u64,
        frames: Vec<Frame>,
        fulfillable: bool,
    ) -> Reply {
        self.sequence += 1;
        let request = StreamPacket {
            sequence: self.sequence,
            ilp_packet_type: PacketType::Prepare,
            prepare_amount: min_destination,
            frames,
        };
        let data = request.encrypt(&self.keys.encryption_key).unwrap();
        let condition = if fulfillable {
            self.keys.condition(&data)
        } else {
            random_condition().unwrap()
        };
        let prepare = Prepare {
            amount,
            expires_at: Self::expiry(),
            execution_condition: condition,
            destination: self.destination.clone(),
            data,
        };
        let (status, body) = self.post(prepare.encode().unwrap()).await;
        assert_eq!(status, 200);
        let reply = match Packet::decode(&body).unwrap() {
            Packet::Fulfill(f) => {
                assert!(fulfillable, "an unfulfillable packet was fulfilled");
                assert_eq!(
                    condition_for(&f.fulfillment),
                    condition,
                    "the fulfillment matches the condition"
                );
                Reply::Fulfill(StreamPacket::decrypt(&self.keys.encryption_key, &f.data).unwrap())
            }
            Packet::Reject(r) => {
                assert_eq!(r.triggered_by.as_ref().map(Address::as_str), Some("test.opdesk"));
                // F99 and T00 carry STREAM replies; other codes carry none (F08 has its own data).
                let stream =
                    matches!(r.code, ErrorCode::F99_APPLICATION_ERROR | ErrorCode::T00_INTERNAL_ERROR).then(|| {
                        StreamPacket::decrypt(&self.keys.encryption_key, &r.data)
                            .unwrap_or_else(|e| panic!("{r:?}: {e}"))
                    });
                Reply::Reject(r, stream)
            }
            Packet::Prepare(_) => panic!("a Prepare in reply"),
        };
        if let Reply::Fulfill(s) | Reply::Reject(_, Some(s)) = &reply {
            assert_eq!(s.sequence, self.sequence, "the sequence is echoed");
            let arrived = u64::try_from(u128::from(amount) * self.rate.0 / self.rate.1).unwrap();
            assert_eq!(
                s.prepare_amount, arrived,
                "prepareAmount is what arrived, in the receiver's asset"
            );
            let expected = if matches!(reply, Reply::Fulfill(_)) {
                PacketType::Fulfill
            } else {
                PacketType::Reject
            };
            assert_eq!(s.ilp_packet_type, expected);
        }
        reply
    }

    /// `ConnectionNewAddress("")` on an unfulfillable zero-amount packet, as senders open a connection.
    pub(crate) async fn connect(&mut self) -> Reply {
        self.send(
            0,
            0,
            vec![Frame::ConnectionNewAddress {
                source_account: String::new(),
            }],
            false,
        )
        .await
    }

    pub(crate) async fn pay(&mut self, amount: u64) -> Reply {
        self.pay_min(amount, amount).await
    }

    /// A money packet of `amount` asking at least `min` (in the receiver's asset) to arrive.
    pub(crate) async fn pay_min(&mut self, amount: u64, min: u64) -> Reply {
        self.send(
            amount,
            min,
            vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }],
            true,
        )
        .await
    }
}

fn base64_url(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

async fn post_ilp(http: &reqwest::Client, url: &str, token: Option<&str>, body: Vec<u8>) -> (u16, Vec<u8>) {
    let mut req = http
        .post(url)
        .header("content-type", "application/octet-stream")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    if status == 200 {
        assert_eq!(res.headers()["content-type"], "application/octet-stream");
    }
    (status, res.bytes().await.unwrap().to_vec())
}

fn max_money(receive_max: u64, total_received: u64) -> Frame {
    Frame::StreamMaxMoney {
        stream_id: 1,
        receive_max,
        total_received,
    }
}

fn closes_with_application_error(s: &StreamPacket) -> bool {
    s.frames
        .iter()
        .any(|f| matches!(f, Frame::ConnectionClose { code, .. } if *code == StreamErrorCode::APPLICATION_ERROR))
}

#[tokio::test]
async fn stream_packets_fill_an_incoming_payment_up_to_its_amount() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;
    let bob_before = ase.balance("bob").await;
    let payment = create_incoming(
        &ase,
        &client,
        &tok,
        "bob",
        json!({"incomingAmount": {"value": "1000", "assetCode": "USD", "assetScale": 2}}),
    )
    .await;
    let id = payment["id"].as_str().unwrap().to_owned();

    // The credentials: one ilp method, a valid address under ours, a base64url secret; fresh on every read.
    assert_matches_schema("resource-server.yaml", "incoming-payment-with-methods", &payment);
    let methods = payment["methods"].as_array().unwrap();
    assert_eq!(methods.len(), 1);
    let address = methods[0]["ilpAddress"].as_str().unwrap();
    assert!(address.starts_with("test.opdesk."), "{address}");
    assert!(opdesk::ilp::packet::is_valid_address(address));
    assert_eq!(base64_url(methods[0]["sharedSecret"].as_str().unwrap()).len(), 32);
    let read = client.send(Method::GET, &id, Some(&tok), None).await.unwrap();
    assert_eq!(read.status, 200);
    assert_matches_schema("resource-server.yaml", "incoming-payment-with-methods", &read.body);
    assert_ne!(read.body["methods"][0]["ilpAddress"], methods[0]["ilpAddress"]);

    let mut s = Sender::for_payment(&ase, &payment);
    // Connect: F99 with our asset, nothing fulfilled.
    let hello = s.connect().await;
    assert_eq!(hello.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    assert_eq!(
        hello.stream().frames,
        [Frame::ConnectionAssetDetails {
            source_asset_code: "USD".into(),
            source_asset_scale: 2
        }]
    );
    // A rate probe (random condition, more than the room) is refused; the sender reads the amount that
    // arrived and the room.
    let probe = s
        .send(
            4000,
            0,
            vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }],
            false,
        )
        .await;
    assert_eq!(probe.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    assert_eq!(probe.stream().frames, [max_money(1000, 0)]);

    // Money: fulfilled with the receiver's totals.
    let r = s.pay(300).await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");
    assert_eq!(r.stream().frames, [max_money(1000, 300)]);
    let r = s.pay(300).await;
    assert_eq!(r.stream().frames, [max_money(1000, 600)]);
    assert_eq!(public_received(&ase, &id).await, "600");
    assert_eq!(ase.balance("bob").await, bob_before + 600);

    // Past incomingAmount: refused, the room advertised, nothing written.
    let r = s.pay(401).await;
    assert_eq!(r.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    assert_eq!(r.stream().frames, [max_money(1000, 600)]);
    assert_eq!(public_received(&ase, &id).await, "600");
    assert_eq!(ase.balance("bob").await, bob_before + 600);

    // Less than the sender's minimum arrived: refused.
    let r = s
        .send(
            100,
            101,
            vec![Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            }],
            true,
        )
        .await;
    assert_eq!(r.code(), Some(ErrorCode::F99_APPLICATION_ERROR));

    // A fulfillable zero-amount packet (a StreamClose, say) is fulfilled without money.
    let r = s
        .send(
            0,
            0,
            vec![Frame::StreamClose {
                stream_id: 3,
                code: StreamErrorCode::NO_ERROR,
                message: String::new(),
            }],
            true,
        )
        .await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");

    // Exactly the rest: fulfilled, and the payment completes.
    let r = s.pay(400).await;
    assert!(matches!(r, Reply::Fulfill(_)), "{r:?}");
    assert_eq!(r.stream().frames, [max_money(1000, 1000)]);
    assert_eq!(public_received(&ase, &id).await, "1000");
    assert_eq!(ase.balance("bob").await, bob_before + 1000);
    let read = client.send(Method::GET, &id, Some(&tok), None).await.unwrap();
    assert_eq!(read.body["completed"], true);
    let (_, view) = ase
        .admin(
            Method::GET,
            &format!("/incoming-payments/{}", id.rsplit('/').next().unwrap()),
            None,
        )
        .await;
    assert_eq!(view["state"], "completed", "{view}");

    // Completed: money and new connections are refused with ConnectionClose(ApplicationError).
    let r = s.pay(1).await;
    assert_eq!(r.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    assert!(closes_with_application_error(r.stream()), "{r:?}");
    let mut again = Sender::for_payment(&ase, &payment);
    let r = again.connect().await;
    assert!(closes_with_application_error(r.stream()), "{r:?}");
    // The sender's own close is answered with NoError.
    let r = s
        .send(
            0,
            0,
            vec![Frame::ConnectionClose {
                code: StreamErrorCode::NO_ERROR,
                message: String::new(),
            }],
            false,
        )
        .await;
    assert_eq!(
        r.stream().frames,
        [Frame::ConnectionClose {
            code: StreamErrorCode::NO_ERROR,
            message: String::new()
        }]
    );
    assert_eq!(public_received(&ase, &id).await, "1000");
    assert_eq!(ase.balance("bob").await, bob_before + 1000);
}

#[tokio::test]
async fn open_ended_and_expired_payments() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "carol").await;

    // No incomingAmount: anything is taken, in carol's asset.
    let open = create_incoming(&ase, &client, &tok, "carol", json!({"metadata": {"n": 1}})).await;
    let mut s = Sender::for_payment(&ase, &open);
    let hello = s.connect().await;
    assert_eq!(
        hello.stream().frames,
        [Frame::ConnectionAssetDetails {
            source_asset_code: "EUR".into(),
            source_asset_scale: 2
        }]
    );
    // the peer's packets are USD: each 25.00 USD is worth 22.50 EUR at the configured 0.90, and the reply says so
    s.rate = (90, 100);
    for _ in 0..3 {
        assert!(matches!(s.pay_min(2500, 2250).await, Reply::Fulfill(_)));
    }
    assert_eq!(public_received(&ase, open["id"].as_str().unwrap()).await, "6750");

    // Expiry applies from expiresAt on, without waiting for any sweep.
    let soon = opdesk::clock::format_ts(time::OffsetDateTime::now_utc() + time::Duration::milliseconds(1500));
    let expiring = create_incoming(&ase, &client, &tok, "carol", json!({"expiresAt": soon})).await;
    let mut s = Sender::for_payment(&ase, &expiring);
    s.rate = (90, 100);
    assert!(matches!(s.pay_min(10, 9).await, Reply::Fulfill(_)));
    let at = opdesk::clock::parse_ts(&soon).unwrap();
    while time::OffsetDateTime::now_utc() < at {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = s.pay_min(10, 9).await;
    assert_eq!(r.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    // the connection's total rides along, so a sender resuming after a crash can reconcile
    assert_eq!(
        r.stream().frames,
        [
            Frame::StreamMaxMoney {
                stream_id: 1,
                receive_max: 9,
                total_received: 9
            },
            Frame::ConnectionClose {
                code: StreamErrorCode::APPLICATION_ERROR,
                message: "the incoming payment has expired".into()
            }
        ]
    );
    let r = Sender::for_payment(&ase, &expiring).connect().await;
    assert!(closes_with_application_error(r.stream()), "{r:?}");
    assert_eq!(public_received(&ase, expiring["id"].as_str().unwrap()).await, "9");
}

#[tokio::test]
async fn transport_and_packet_errors() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;
    let payment = create_incoming(&ase, &client, &tok, "bob", json!({})).await;
    let id = payment["id"].as_str().unwrap().to_owned();
    let mut s = Sender::for_payment(&ase, &payment);
    let http = ase.http.clone();
    let url = ase.url("/ilp");

    // HTTP level: the token first (401 before the body is looked at), then the content type and size.
    let (status, _) = post_ilp(&http, &url, None, vec![1, 2, 3]).await;
    assert_eq!(status, 401);
    let (status, _) = post_ilp(&http, &url, Some("peer-token-for-the-test"), vec![1, 2, 3]).await;
    assert_eq!(status, 401);
    let res = http
        .post(&url)
        .header("authorization", "Basic cGVlcg==")
        .body(vec![1])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    assert_eq!(res.headers()["www-authenticate"], "Bearer realm=\"ilp\"");
    let res = http
        .post(&url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 415);
    let (status, _) = post_ilp(&http, &url, Some(TOKEN), vec![0; 40_000]).await;
    assert_eq!(status, 413);
    // The other token of the same peer works.
    let (status, _) = post_ilp(&http, &url, Some("another-token"), vec![12]).await;
    assert_eq!(status, 200);

    let reject = |body: Vec<u8>| match Packet::decode(&body).unwrap() {
        Packet::Reject(r) => r,
        other => panic!("not a reject: {other:?}"),
    };

    // Malformed packets: F01.
    for garbage in [vec![], vec![12], vec![13, 1, 0], b"not an ILP packet".to_vec()] {
        let (status, body) = post_ilp(&http, &url, Some(TOKEN), garbage).await;
        assert_eq!(status, 200);
        assert_eq!(reject(body).code, ErrorCode::F01_INVALID_PACKET);
    }

    let data = StreamPacket {
        sequence: 1,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 0,
        frames: vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
    }
    .encrypt(&s.keys.encryption_key)
    .unwrap();
    let prepare = |destination: &Address, amount: u64, expires_at: Timestamp, data: &[u8]| Prepare {
        amount,
        expires_at,
        execution_condition: s.keys.condition(data),
        destination: destination.clone(),
        data: data.to_vec(),
    };
    let send = |p: Prepare| {
        let (http, url) = (http.clone(), url.clone());
        async move { reject(post_ilp(&http, &url, Some(TOKEN), p.encode().unwrap()).await.1) }
    };

    // A tampered token: F06. Another node's address: F02. Data under another key: F06.
    let mut tampered = s.destination.as_str().to_owned();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    let tampered = Address::new(tampered).unwrap();
    let r = send(prepare(&tampered, 10, Sender::expiry(), &data)).await;
    assert_eq!(r.code, ErrorCode::F06_UNEXPECTED_PAYMENT);
    assert!(r.data.is_empty());
    let elsewhere = Address::new("test.other-node.abc").unwrap();
    assert_eq!(
        send(prepare(&elsewhere, 10, Sender::expiry(), &data)).await.code,
        ErrorCode::F02_UNREACHABLE
    );
    let bogus = StreamPacket::decode(&opdesk::ilp::crypto::decrypt(&s.keys.encryption_key, &data).unwrap())
        .unwrap()
        .encrypt(&[9; 32])
        .unwrap();
    assert_eq!(
        send(prepare(&s.destination, 10, Sender::expiry(), &bogus)).await.code,
        ErrorCode::F06_UNEXPECTED_PAYMENT
    );

    // Above the peer's max packet amount: F08 with receivedAmount ‖ maximumAmount.
    let r = send(prepare(&s.destination, 5001, Sender::expiry(), &data)).await;
    assert_eq!(r.code, ErrorCode::F08_AMOUNT_TOO_LARGE);
    assert_eq!(
        r.amount_too_large_data(),
        Some(AmountTooLarge {
            received_amount: 5001,
            maximum_amount: 5000
        })
    );
    // An expired Prepare: R00.
    let past = Timestamp::from_unix_millis(1_600_000_000_000).unwrap();
    assert_eq!(
        send(prepare(&s.destination, 10, past, &data)).await.code,
        ErrorCode::R00_TRANSFER_TIMED_OUT
    );
    assert_eq!(public_received(&ase, &id).await, "0", "nothing was credited");

    // IL-DCP: the peer learns its address under ours and the link's asset.
    let now = i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap();
    let req = ildcp::request(Timestamp::from_unix_millis(now + 10_000).unwrap()).unwrap();
    let (_, body) = post_ilp(&http, &url, Some(TOKEN), req.encode().unwrap()).await;
    let Packet::Fulfill(f) = Packet::decode(&body).unwrap() else {
        panic!("IL-DCP not fulfilled")
    };
    let config = opdesk::ilp::IldcpResponse::from_fulfill(&f).unwrap();
    assert_eq!(config.client_address.as_str(), "test.opdesk.sender");
    assert_eq!((config.asset_code.as_str(), config.asset_scale), ("USD", 2));

    // The server keeps serving, and the payment still takes money.
    assert!(matches!(s.pay(42).await, Reply::Fulfill(_)));
    assert_eq!(public_received(&ase, &id).await, "42");
    let (status, _) = ase.get("/healthz").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn without_peers_every_request_is_unauthorized() {
    let ase = TestAse::spawn().await;
    for token in [None, Some(""), Some(TOKEN)] {
        let (status, _) = post_ilp(&ase.http, &ase.url("/ilp"), token, vec![12]).await;
        assert_eq!(status, 401, "{token:?}");
    }
}

#[tokio::test]
async fn concurrent_packets_never_overfill_a_payment() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;
    let bob_before = ase.balance("bob").await;
    let payment = create_incoming(
        &ase,
        &client,
        &tok,
        "bob",
        json!({"incomingAmount": {"value": "1000", "assetCode": "USD", "assetScale": 2}}),
    )
    .await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let mut s = Sender::for_payment(&ase, &payment);
            tokio::spawn(async move { s.pay(100).await })
        })
        .collect();
    let mut fulfilled = 0;
    for t in tasks {
        match t.await.unwrap() {
            Reply::Fulfill(_) => fulfilled += 1,
            Reply::Reject(r, Some(stream)) => {
                assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
                // Either the room (not enough left) or the close (completed meanwhile).
                assert!(
                    stream.frames.iter().any(|f| matches!(f, Frame::StreamMaxMoney { .. }))
                        || closes_with_application_error(&stream),
                    "{stream:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(fulfilled, 10);
    assert_eq!(public_received(&ase, payment["id"].as_str().unwrap()).await, "1000");
    assert_eq!(ase.balance("bob").await, bob_before + 1000);
}

/// The balance of peer `name`'s ledger account, from the admin API.
async fn peer_balance(ase: &TestAse, name: &str) -> Option<i64> {
    let (status, balances) = ase.admin(Method::GET, "/balances", None).await;
    assert_eq!(status, 200);
    balances
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "peer" && b["peer"] == name)
        .map(|b| b["balance"].as_i64().unwrap())
}

#[tokio::test]
async fn peers_added_through_the_admin_api_take_effect_at_once_and_survive_a_restart() {
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;

    // Add a peer with a generated token and a packet limit: shown once, counted afterwards.
    let (status, added) = ase
        .admin(
            Method::POST,
            "/peers",
            Some(r#"{"name":"runtime","assetCode":"USD","assetScale":2,"generateIncomingToken":true,"maxPacketAmount":1000,"ilpAddress":"test.runtime"}"#),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["source"], "admin");
    assert_eq!(added["incomingTokens"], 1);
    assert_eq!(added["ilpAddress"], "test.runtime");
    assert_eq!(added["routes"], json!([]), "a receive-only peer has no routes");
    let generated = added["generatedIncomingTokens"][0].as_str().unwrap().to_owned();
    assert!(generated.len() >= 43, "{generated}");
    let (_, shown) = ase.admin(Method::GET, "/peers/runtime", None).await;
    assert!(shown.get("generatedIncomingTokens").is_none(), "{shown}");
    assert!(
        !shown.to_string().contains(&generated),
        "the token is never shown again"
    );

    // It authenticates at /ilp at once; its limit applies; its packets go to its own account.
    let payment = create_incoming(&ase, &client, &tok, "bob", json!({})).await;
    let mut s = Sender::for_payment(&ase, &payment);
    s.token = generated.clone();
    assert_eq!(s.connect().await.code(), Some(ErrorCode::F99_APPLICATION_ERROR));
    assert!(matches!(s.pay(700).await, Reply::Fulfill(_)));
    let (status, body) = s.post(too_large_prepare(&s, 1500)).await;
    assert_eq!(status, 200);
    match Packet::decode(&body).unwrap() {
        Packet::Reject(r) => assert_eq!(r.code, ErrorCode::F08_AMOUNT_TOO_LARGE),
        other => panic!("{other:?}"),
    }
    assert_eq!(peer_balance(&ase, "runtime").await, Some(-700));
    assert_eq!(
        peer_balance(&ase, "sender").await,
        None,
        "the config peer carried nothing"
    );
    // IL-DCP tells it its own address.
    let (_, body) = s.post(ildcp_request()).await;
    match Packet::decode(&body).unwrap() {
        Packet::Fulfill(f) => {
            let r = ildcp::IldcpResponse::from_fulfill(&f).unwrap();
            assert_eq!(r.client_address.as_str(), "test.runtime");
        }
        other => panic!("{other:?}"),
    }

    // Refusals: each a clear error, nothing changed.
    let cases: &[(Method, &str, Option<&str>, u16, &str)] = &[
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"runtime","assetCode":"USD","assetScale":2,"incomingTokens":["x1"]}"#),
            409,
            "conflict",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"sender","assetCode":"USD","assetScale":2,"incomingTokens":["x2"]}"#),
            409,
            "conflict",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"other","assetCode":"USD","assetScale":2,"incomingTokens":["peer-token-for-the-tests"]}"#),
            409,
            "conflict",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"a b","assetCode":"USD","assetScale":2,"incomingTokens":["x3"]}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"c","assetCode":"USD","assetScale":2}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"d","assetCode":"USD","assetScale":2,"outgoingEndpoint":"http://127.0.0.1:9/ilp"}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(
                r#"{"name":"e","assetCode":"USD","assetScale":2,"outgoingEndpoint":"ftp://x/ilp","outgoingToken":"t"}"#,
            ),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"f","assetCode":"USD","assetScale":2,"incomingTokens":["x4"],"routes":["test.f"]}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"g","assetCode":"usd!","assetScale":2,"incomingTokens":["x5"]}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"h","assetCode":"USD","assetScale":2,"incomingTokens":["x6"],"color":"red"}"#),
            400,
            "invalid_request",
        ),
        (
            Method::POST,
            "/peers",
            Some(r#"{"name":"i","assetCode":"USD","assetScale":2,"incomingTokens":["x7"],"maxPacketAmount":0}"#),
            400,
            "invalid_request",
        ),
        (Method::POST, "/peers", Some("{"), 400, "invalid_request"),
        (
            Method::PATCH,
            "/peers/sender",
            Some(r#"{"maxPacketAmount":1}"#),
            409,
            "conflict",
        ),
        (
            Method::PATCH,
            "/peers/nobody",
            Some(r#"{"maxPacketAmount":1}"#),
            404,
            "not_found",
        ),
        (
            Method::PATCH,
            "/peers/runtime",
            Some(r#"{"assetCode":"EUR"}"#),
            400,
            "invalid_request",
        ),
        (
            Method::PATCH,
            "/peers/runtime",
            Some(r#"{"outgoingEndpoint":null}"#),
            400,
            "invalid_request",
        ),
        (Method::DELETE, "/peers/sender", None, 409, "conflict"),
        (Method::DELETE, "/peers/nobody", None, 404, "not_found"),
    ];
    for (method, path, body, want, code) in cases {
        let (status, err) = ase.admin(method.clone(), path, *body).await;
        assert_eq!(
            (status, err["error"]["code"].as_str()),
            (*want, Some(*code)),
            "{method} {path} {body:?}: {err}"
        );
    }
    let (_, list) = ase.admin(Method::GET, "/peers", None).await;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sender", "runtime"], "config peers first; nothing half-added");

    // Replacing the tokens: the old one stops working at once, the new one works.
    let (status, changed) = ase
        .admin(
            Method::PATCH,
            "/peers/runtime",
            Some(r#"{"incomingTokens":["fresh-runtime-token"],"maxPacketAmount":null}"#),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["maxPacketAmount"], Value::Null);
    assert_eq!(changed["ilpAddress"], "test.runtime", "untouched fields stay");
    let (status, _) = s.post(ildcp_request()).await;
    assert_eq!(status, 401, "the replaced token");
    s.token = "fresh-runtime-token".into();
    assert!(
        matches!(s.pay(1500).await, Reply::Fulfill(_)),
        "no packet limit any more"
    );

    // A restart keeps the peer (from the database) and its account.
    let (dir, addr) = ase.stop().await;
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    let (_, shown) = ase.admin(Method::GET, "/peers/runtime", None).await;
    assert_eq!(shown["peerAccountBalance"], -2200, "{shown}");
    assert_eq!(shown["incomingTokens"], 1);
    s.http = ase.http.clone();
    assert!(matches!(s.pay(1).await, Reply::Fulfill(_)));

    // Removing it: 204, its token no longer authenticates, its account and history stay.
    let (status, _) = ase.admin(Method::DELETE, "/peers/runtime", None).await;
    assert_eq!(status, 204);
    assert_eq!(ase.admin(Method::GET, "/peers/runtime", None).await.0, 404);
    assert_eq!(s.post(ildcp_request()).await.0, 401);
    assert_eq!(peer_balance(&ase, "runtime").await, Some(-2201));
    assert_eq!(public_received(&ase, payment["id"].as_str().unwrap()).await, "2201");
}

/// An IL-DCP request (RFC 31).
fn ildcp_request() -> Vec<u8> {
    let ms = i64::try_from(time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap();
    ildcp::request(Timestamp::from_unix_millis(ms + 30_000).unwrap())
        .unwrap()
        .encode()
        .unwrap()
}

/// A money Prepare of `amount` on the sender's connection (for link-level checks that come before STREAM).
fn too_large_prepare(s: &Sender, amount: u64) -> Vec<u8> {
    Prepare {
        amount,
        expires_at: Sender::expiry(),
        execution_condition: random_condition().unwrap(),
        destination: s.destination.clone(),
        data: vec![1, 2, 3],
    }
    .encode()
    .unwrap()
}

const UNLIMITED: &str = r#"
[ilp]
address = "test.opdesk"

[[ilp.peers]]
name = "sender"
incoming_tokens = ["peer-token-for-the-tests"]
asset_code = "USD"
asset_scale = 2
"#;

#[tokio::test]
async fn amounts_that_overflow_the_totals_are_refused_for_good() {
    let ase = TestAse::spawn_with(UNLIMITED).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;
    for extra in [
        json!({}),
        json!({"incomingAmount": {"value": "1000", "assetCode": "USD", "assetScale": 2}}),
    ] {
        let payment = create_incoming(&ase, &client, &tok, "bob", extra).await;
        let id = payment["id"].as_str().unwrap().to_owned();
        let mut s = Sender::for_payment(&ase, &payment);
        assert!(matches!(s.pay(100).await, Reply::Fulfill(_)));
        let bob = ase.balance("bob").await;
        let peer = peer_balance(&ase, "sender").await;
        for amount in [
            u64::MAX,
            u64::MAX - 99,
            i64::MAX as u64,
            i64::MAX as u64 - 100,
            i64::MAX as u64 - 1000,
        ] {
            let r = s.pay(amount).await;
            // A final reject a STREAM sender reads (not T00, which it would retry), with the room.
            assert_eq!(r.code(), Some(ErrorCode::F99_APPLICATION_ERROR), "{amount}: {r:?}");
            assert!(
                r.stream().frames.iter().any(|f| matches!(
                    f,
                    Frame::StreamMaxMoney {
                        total_received: 100,
                        ..
                    }
                )),
                "{amount}: {r:?}"
            );
            assert_eq!(public_received(&ase, &id).await, "100", "{amount}");
            assert_eq!(ase.balance("bob").await, bob, "{amount}");
            assert_eq!(peer_balance(&ase, "sender").await, peer, "{amount}");
        }
        // The server keeps serving, and the payment keeps taking money.
        assert!(matches!(s.pay(50).await, Reply::Fulfill(_)));
        assert_eq!(public_received(&ase, &id).await, "150");
    }
}

#[tokio::test]
async fn a_full_store_rejects_money_with_a_retryable_t00_and_credits_nothing() {
    if crate::common::postgres().is_some() {
        return; // the quota is SQLite's page count (store.max_db_pages)
    }
    let ase = TestAse::spawn_with(CONFIG).await;
    let client = ase.demo_client().await;
    let tok = incoming_token(&ase, &client, "bob").await;
    let payment = create_incoming(
        &ase,
        &client,
        &tok,
        "bob",
        json!({"incomingAmount": {"value": "100000", "assetCode": "USD", "assetScale": 2}}),
    )
    .await;
    let id = payment["id"].as_str().unwrap().to_owned();
    let mut s = Sender::for_payment(&ase, &payment);
    s.connect().await;
    assert!(matches!(s.pay(10).await, Reply::Fulfill(_)));

    // restart with a quota a few pages above the database's size (SQLite max_page_count on the writer)
    let (dir, addr) = ase.stop().await;
    let db = dir.path().join("ase.sqlite3");
    let pages: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        format!("{CONFIG}\n[store]\nmax_db_pages = {}\n", pages + 3),
    )
    .unwrap();
    let ase = TestAse::spawn_in(dir.clone(), Some(addr)).await;
    let mut fulfilled = 10u64;
    let mut refused = None;
    for _ in 0..2000 {
        match s.pay(1).await {
            Reply::Fulfill(_) => fulfilled += 1,
            Reply::Reject(r, stream) => {
                refused = Some((r, stream));
                break;
            }
        }
    }
    let (reject, stream) = refused.expect("the store never filled");
    assert_eq!(reject.code, ErrorCode::T00_INTERNAL_ERROR, "{reject:?}");
    assert!(reject.message.contains("storage is full"), "{reject:?}");
    assert!(stream.is_some(), "the T00 carries the STREAM reply");
    // nothing of the refused packet was written; reads keep working
    assert_eq!(public_received(&ase, &id).await, fulfilled.to_string());
    assert!(matches!(s.pay(1).await.code(), Some(ErrorCode::T00_INTERNAL_ERROR)));
    assert_eq!(public_received(&ase, &id).await, fulfilled.to_string());

    // room again: the retried money arrives
    let (dir, addr) = ase.stop().await;
    std::fs::write(dir.path().join("config.toml"), CONFIG).unwrap();
    let ase = TestAse::spawn_in(dir, Some(addr)).await;
    assert!(matches!(s.pay(1).await, Reply::Fulfill(_)));
    assert_eq!(public_received(&ase, &id).await, (fulfilled + 1).to_string());
    assert!(ase.state.ledger.audit().await.unwrap().is_empty());
}
