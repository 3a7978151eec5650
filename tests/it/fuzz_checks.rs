//! The fuzz harnesses: one function per wire parser, taking arbitrary bytes. Each one feeds the bytes to
//! the parser (errors are fine, panics are not) and, where the module also encodes, checks the round trips
//! `decode(encode(x)) == x` and that what we encode is accepted again.
//!
//! The same file is compiled twice: by `fuzz/` (cargo-fuzz targets, coverage-guided) and by this test
//! binary, whose `fuzz_replay` test runs every committed seed and every past crash through it without a
//! fuzzer. So a harness can never drift from its regression test. It must build against the main crate's
//! dependencies only (`http`, `serde_json`, `time`, `ed25519-dalek`), which the fuzz crate also declares.

use std::collections::HashMap;

use ed25519_dalek::SigningKey;
use http::{HeaderMap, HeaderValue, Method};
use opdesk::{
    ase::{incoming::CreateIncoming, outgoing::CreateOutgoing, quotes::CreateQuote},
    gnap::model::{GrantRequest, Limits},
    httpsig::{self, Jwks},
    ilp::{
        crypto, ildcp,
        oer::{self, Reader, Writer},
        packet::{Address, AmountTooLarge, ErrorCode, Packet, PacketType, Prepare, TIMESTAMP_LEN, Timestamp},
        receiver::{self, Decision, PaymentSnapshot, PaymentState, StreamServer},
        sender::{self, Rate, Reply, Verdict},
        stream::{Frame, StreamPacket},
    },
    interval::{Duration, RepeatingInterval},
    money::{self, Amount, Asset, Value},
    server::pagination::ListQuery,
};
use time::OffsetDateTime;

/// A harness: arbitrary bytes in, a panic on any violated property.
pub type Harness = fn(&[u8]);

/// Every harness, by the name of its fuzz target (and of its folders under `fuzz/seeds` and
/// `tests/fuzz-regressions`).
pub const TARGETS: &[(&str, Harness)] = &[
    ("oer", oer),
    ("ilp_packet", ilp_packet),
    ("stream_packet", stream_packet),
    ("stream_money", stream_money),
    ("signature", signature),
    ("content_digest", content_digest),
    ("interval", interval),
    ("amount", amount),
    ("request_json", request_json),
];

/// The first `n` bytes as an integer (little-endian, zero-padded).
fn le_u64(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    for (d, s) in buf.iter_mut().zip(bytes) {
        *d = *s;
    }
    u64::from_le_bytes(buf)
}

/// `data` split at the first `sep`: (before, after); all of it and nothing when `sep` is absent.
fn split_once(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

// ---------------------------------------------------------------------------------------------------------
// ILP

/// OER primitives: the input is read as a sequence of (op byte, operand bytes); every value read is written
/// back and must read back identically, with the length the `*_len` helpers predict.
pub fn oer(data: &[u8]) {
    let mut r = Reader::new(data);
    for _ in 0..64 {
        let Ok(op) = r.read_u8() else { return };
        let before = r.rest();
        match op % 8 {
            0 => {
                let Ok(n) = r.read_length_prefix() else { return };
                let consumed = &before[..before.len() - r.remaining()];
                let mut w = Writer::new();
                w.write_length_prefix(n);
                assert_eq!(
                    w.as_slice(),
                    consumed,
                    "length prefixes are canonical: re-encoding gives the input"
                );
                assert_eq!(oer::length_prefix_len(n), w.len());
            }
            1 => {
                let Ok(v) = r.read_var_uint() else { return };
                let mut w = Writer::new();
                w.write_var_uint(v);
                assert_eq!(oer::var_uint_len(v), w.len());
                assert_eq!(Reader::new(w.as_slice()).read_var_uint(), Ok(v));
            }
            2 => {
                let Ok(v) = r.read_var_uint_saturating() else { return };
                let mut w = Writer::new();
                w.write_var_uint(v);
                assert_eq!(Reader::new(w.as_slice()).read_var_uint_saturating(), Ok(v));
            }
            3 => {
                let Ok(s) = r.read_var_octet_string() else { return };
                let mut w = Writer::new();
                w.write_var_octet_string(s);
                assert_eq!(oer::var_octet_string_len(s.len()), w.len());
                let back = w.into_vec();
                let mut rr = Reader::new(&back);
                assert_eq!(rr.read_var_octet_string(), Ok(s));
                assert!(rr.expect_end().is_ok());
            }
            4 => {
                let Ok(v) = r.read_u16() else { return };
                let mut w = Writer::new();
                w.write_u16(v);
                assert_eq!(Reader::new(w.as_slice()).read_u16(), Ok(v));
            }
            5 => {
                let Ok(v) = r.read_u32() else { return };
                let mut w = Writer::new();
                w.write_u32(v);
                assert_eq!(Reader::new(w.as_slice()).read_u32(), Ok(v));
            }
            6 => {
                let Ok(v) = r.read_u64() else { return };
                let mut w = Writer::new();
                w.write_u64(v);
                assert_eq!(Reader::new(w.as_slice()).read_u64(), Ok(v));
            }
            _ => {
                let n = usize::from(r.read_u8().unwrap_or(0));
                let Ok(b) = r.read_bytes(n) else { return };
                assert_eq!(b.len(), n);
            }
        }
    }
}

/// ILP packets (Prepare / Fulfill / Reject), IL-DCP data, F08 data, addresses, timestamps, error codes and
/// STREAM token plaintext.
pub fn ilp_packet(data: &[u8]) {
    if let Ok(p) = Packet::decode(data) {
        let wire = p.encode().expect("a decoded packet re-encodes");
        assert_eq!(Packet::decode(&wire).as_ref(), Ok(&p), "decode(encode(p)) == p");
        // The envelope and every length are canonical, so only a lossy Reject message can change the bytes.
        let lossy = matches!(&p, Packet::Reject(r) if r.message.contains('\u{fffd}'));
        if !lossy {
            assert_eq!(wire, data, "encode(decode(bytes)) == bytes");
        }
        let typed_ok = match &p {
            Packet::Prepare(x) => opdesk::ilp::packet::Prepare::decode(data).as_ref() == Ok(x),
            Packet::Fulfill(x) => opdesk::ilp::packet::Fulfill::decode(data).as_ref() == Ok(x),
            Packet::Reject(x) => opdesk::ilp::packet::Reject::decode(data).as_ref() == Ok(x),
        };
        assert!(typed_ok, "the typed decoder agrees with Packet::decode");
        if let Packet::Prepare(prep) = &p {
            let now = Timestamp::from_unix_millis(0).expect("epoch");
            let _ = ildcp::validate_request(prep, now);
        }
        if let Packet::Reject(rej) = &p {
            let _ = rej.amount_too_large_data();
        }
    }
    if let Ok(resp) = ildcp::IldcpResponse::decode_data(data) {
        assert_eq!(ildcp::IldcpResponse::decode_data(&resp.encode_data()), Ok(resp.clone()));
        assert_eq!(ildcp::IldcpResponse::from_fulfill(&resp.to_fulfill()), Ok(resp));
    }
    if let Ok(f08) = AmountTooLarge::decode(data) {
        assert_eq!(f08.encode().as_slice(), &data[..16]);
    }
    if let Ok(a) = Address::from_bytes(data) {
        assert_eq!(a.as_str().as_bytes(), data);
        assert_eq!(Address::new(a.as_str()).as_ref(), Ok(&a));
        let _ = a.scheme();
        let _ = a.segments().count();
    }
    if let Some(head) = data.get(..TIMESTAMP_LEN) {
        let bytes: [u8; TIMESTAMP_LEN] = head.try_into().expect("17 bytes");
        if let Ok(t) = Timestamp::from_bytes(bytes) {
            assert_eq!(
                Timestamp::from_unix_millis(t.unix_millis()),
                Ok(t),
                "timestamp round trip"
            );
        }
    }
    if let Some(head) = data.get(..3) {
        let bytes: [u8; 3] = head.try_into().expect("3 bytes");
        if let Ok(code) = ErrorCode::from_bytes(bytes) {
            let _ = (code.class(), code.name());
            assert_eq!(ErrorCode::parse(code.as_str()), Ok(code));
        }
    }
    if let Ok(details) = crypto::ConnectionDetails::decode(data) {
        // Tags decoded lossily may not be ASCII; the encoder refuses those.
        if let Ok(token) = details.encode() {
            assert_eq!(crypto::ConnectionDetails::decode(&token), Ok(details));
        }
    }
}

const STREAM_KEY: [u8; 32] = [0x42; 32];
const SERVER_SECRET: [u8; 32] = [0x24; 32];

/// STREAM: plaintext decode round trip; the same bytes sealed with a fixed key and IV must decrypt and decode
/// identically (the receiver's path); raw bytes as ciphertext, as a connection token and as a destination
/// segment must be refused cleanly.
pub fn stream_packet(data: &[u8]) {
    let plain = StreamPacket::decode(data);
    if let Ok(p) = &plain {
        let wire = p.encode();
        assert_eq!(StreamPacket::decode(&wire).as_ref(), Ok(p), "decode(encode(p)) == p");
        let _ = (p.has_connection_close(), p.has_connection_new_address());
        for f in &p.frames {
            let _ = f.frame_type();
        }
    }
    let iv = [7u8; crypto::IV_LEN];
    let sealed = crypto::encrypt_with_iv(&STREAM_KEY, &iv, data);
    assert_eq!(
        StreamPacket::decrypt(&STREAM_KEY, &sealed),
        plain,
        "decrypt+decode == decode"
    );
    assert_eq!(crypto::decrypt(&STREAM_KEY, &sealed).as_deref(), Ok(data));

    let _ = StreamPacket::decrypt(&STREAM_KEY, data);
    let _ = crypto::decrypt_token(&SERVER_SECRET, data);
    if let (Ok(server), Ok(text)) = (Address::new("test.fuzz"), std::str::from_utf8(data))
        && let Ok(dest) = server.with_segment(text)
    {
        let _ = crypto::resolve_destination(&SERVER_SECRET, &server, &dest);
    }
}

/// Reads fixed-size values off the front of the input, zero when it runs out.
struct Take<'a>(&'a [u8]);

impl Take<'_> {
    fn u64(&mut self) -> u64 {
        let v = le_u64(self.0);
        self.0 = self.0.get(8..).unwrap_or_default();
        v
    }

    fn u8(&mut self) -> u8 {
        let v = self.0.first().copied().unwrap_or(0);
        self.0 = self.0.get(1..).unwrap_or_default();
        v
    }

    /// A value spread over small and huge magnitudes (the byte picks how many bits to keep).
    fn amount(&mut self) -> u64 {
        let bits = self.u8() % 65;
        let v = self.u64();
        if bits == 64 { v } else { v & ((1u64 << bits) - 1) }
    }
}

/// The money decisions of STREAM, receiver and sender side: what the receiver answers to a request against a
/// payment snapshot (never credit past `incomingAmount` or into a closed payment; advertised room consistent),
/// the sender's packet sizing, rate rounding and reading of replies; and a full `open` of a Prepare built
/// from the receiver's own credentials.
pub fn stream_money(data: &[u8]) {
    let mut t = Take(data);
    let state = match t.u8() % 3 {
        0 => PaymentState::Pending,
        1 => PaymentState::Completed,
        _ => PaymentState::Expired,
    };
    let snapshot = PaymentSnapshot {
        asset_code: "USD".into(),
        asset_scale: 2,
        state,
        received: t.amount(),
        receive_max: t.amount(),
        connection_received: t.amount(),
    };
    let amount = t.amount();
    let fulfillable = t.u8() & 1 == 1;
    let req = StreamPacket::decode(t.0).unwrap_or(StreamPacket {
        sequence: 1,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: amount / 2,
        frames: vec![Frame::StreamMoney {
            stream_id: 1,
            shares: 1,
        }],
    });
    let decision = receiver::decide(&req, amount, fulfillable, &snapshot);
    match &decision {
        Decision::Credit => {
            assert!(amount > 0 && amount >= req.prepare_amount && fulfillable);
            assert_eq!(receiver::money_check(&snapshot, amount), Ok(()));
            assert_eq!(snapshot.state, PaymentState::Pending);
            assert!(amount <= snapshot.room(), "never credit past incomingAmount");
            assert!(!req.has_connection_close());
        }
        Decision::Acknowledge(frames) | Decision::Refuse(frames) => {
            if matches!(decision, Decision::Acknowledge(_)) {
                assert_eq!(amount, 0, "only zero-amount packets are fulfilled without money");
            }
            for f in frames {
                if let Frame::StreamMaxMoney {
                    receive_max,
                    total_received,
                    ..
                } = f
                {
                    assert!(receive_max >= total_received, "advertised room is never negative");
                    assert_eq!(*total_received, snapshot.connection_received);
                }
            }
        }
    }

    // Sender side.
    let rate = Rate::new(u128::from(t.amount()), u128::from(t.amount()));
    let minimum = Rate::new(u128::from(t.amount()), u128::from(t.amount()));
    if let (Some(rate), Some(minimum)) = (rate, minimum) {
        assert_eq!(Rate::parse(&rate.to_string()), Some(rate));
        let d = t.amount();
        if let Some(src) = rate.source_ceil(d)
            && let Some(back) = rate.dest_floor(src)
        {
            assert!(back >= d, "{rate}: source_ceil({d}) = {src} buys only {back}");
        }
        if let Some(src) = rate.source_floor(d)
            && let Some(back) = rate.dest_floor(src)
        {
            assert!(back <= d, "{rate}: source_floor({d}) = {src} buys {back}");
        }
        let ppm = t.amount() % 1_100_000;
        if let Some(less) = rate.less_slippage(ppm) {
            assert!(rate.at_least(&less), "{rate} less {ppm} ppm gave {less}");
        }
        let (max_source, target, sent, delivered, cap) = (t.amount(), t.amount(), t.amount(), t.amount(), t.amount());
        let room = (t.u8() & 1 == 1).then(|| t.amount());
        if let Some((source, min_dest)) =
            sender::next_packet(max_source, target, sent, delivered, &rate, &minimum, cap, room)
        {
            assert!(source >= 1 && source <= max_source - sent && source <= cap.max(1));
            assert!(
                min_dest <= target - delivered,
                "never demand more than is left to deliver"
            );
            if let Some(room) = room {
                assert!(min_dest <= room);
            }
        }
    }
    let condition = crypto::condition_for(&[3; 32]);
    let source = t.amount();
    let min_dest = t.amount();
    let codes = [
        ErrorCode::F08_AMOUNT_TOO_LARGE,
        ErrorCode::F99_APPLICATION_ERROR,
        ErrorCode::R00_TRANSFER_TIMED_OUT,
        ErrorCode::T00_INTERNAL_ERROR,
        ErrorCode::F02_UNREACHABLE,
    ];
    let code = codes[usize::from(t.u8()) % codes.len()];
    let reply = if t.u8() & 1 == 0 {
        Reply::Fulfill {
            fulfillment: [t.u8() & 3; 32],
            stream: StreamPacket::decode(t.0).ok(),
        }
    } else {
        Reply::Reject {
            code,
            message: String::new(),
            data: t.0.to_vec(),
            stream: StreamPacket::decode(t.0).ok(),
        }
    };
    match sender::judge(&reply, &condition, source, min_dest) {
        Verdict::Fulfilled { delivered, .. } => assert!(delivered >= min_dest),
        Verdict::TooLarge { max } => assert!(max >= 1 && max < source, "F08 shrinks packets: {max} of {source}"),
        _ => {}
    }

    // Receiver side, end to end: our own credentials, then whatever STREAM data the input holds.
    let Ok(address) = Address::new("test.fuzz") else { return };
    let server = StreamServer::new(address, SERVER_SECRET);
    let Ok(creds) = server.credentials("ip_fuzz", "USD", 2) else {
        return;
    };
    let keys = crypto::StreamKeys::derive(&creds.shared_secret);
    let iv = [9u8; crypto::IV_LEN];
    let prepare = Prepare {
        amount,
        expires_at: Timestamp::from_unix_millis(1_900_000_000_000).expect("a valid time"),
        execution_condition: [0; 32],
        destination: creds.ilp_address.clone(),
        data: crypto::encrypt_with_iv(&keys.encryption_key, &iv, data),
    };
    match (receiver::open(&server, &prepare), StreamPacket::decode(data)) {
        (Ok(opened), Ok(packet)) => {
            assert_eq!(opened.target, opdesk::ilp::receiver::Target::Incoming("ip_fuzz".into()));
            assert_eq!(opened.request, packet);
            assert_eq!(opened.request.ilp_packet_type, PacketType::Prepare);
            assert_eq!(opened.keys.encryption_key, keys.encryption_key);
        }
        (Err(reject), Ok(packet)) => {
            assert_ne!(packet.ilp_packet_type, PacketType::Prepare, "a Prepare request opens");
            assert_eq!(reject.code, ErrorCode::F00_BAD_REQUEST);
        }
        (Ok(_), Err(e)) => panic!("opened undecodable data: {e}"),
        (Err(reject), Err(_)) => assert_eq!(reject.code, ErrorCode::F06_UNEXPECTED_PAYMENT),
    }
}

// ---------------------------------------------------------------------------------------------------------
// HTTP message signatures

fn fuzz_signing_key() -> SigningKey {
    SigningKey::from_bytes(&[0x5a; 32])
}

/// `Signature-Input` / `Signature` parsing, the signature base and the policy over arbitrary header text
/// (the input is split at `\n`: signature-input, signature, then extra signature-input lines); then a
/// sign → parse → verify round trip with a keyid, `created` and body taken from the input.
pub fn signature(data: &[u8]) {
    let mut parts = data.split(|&b| b == b'\n');
    let mut headers = HeaderMap::new();
    let input = parts.next().unwrap_or_default();
    let sig = parts.next().unwrap_or_default();
    for (name, value) in [(httpsig::SIGNATURE_INPUT, input), (httpsig::SIGNATURE, sig)] {
        if let Ok(v) = HeaderValue::from_bytes(value) {
            headers.append(name, v);
        }
    }
    for extra in parts.take(4) {
        if let Ok(v) = HeaderValue::from_bytes(extra) {
            headers.append(httpsig::SIGNATURE_INPUT, v);
        }
    }
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(http::header::AUTHORIZATION, HeaderValue::from_static("GNAP token"));
    headers.insert("content-digest", HeaderValue::from_static("sha-256=:AAAA:"));
    let method = Method::POST;
    let req = httpsig::Request {
        method: &method,
        target_uri: "http://127.0.0.1:8080/incoming-payments?x=1",
        headers: &headers,
        body: b"{}",
    };
    if let Ok(params) = httpsig::parse_signature(&headers) {
        assert_eq!(params.signature.len(), 64);
        assert!(!params.label.is_empty());
        for (i, c) in params.components.iter().enumerate() {
            assert!(!c.is_empty() && !c.bytes().any(|b| b.is_ascii_uppercase()));
            assert!(!params.components[..i].contains(c), "components are unique");
        }
        if let Ok(base) = httpsig::signature_base(&req, &params) {
            let last = format!("\"@signature-params\": {}", params.raw_params);
            assert!(base.ends_with(&last), "the base ends with the received parameters");
        }
        let _ = httpsig::check_policy(&req, &params, 1_700_000_000, &httpsig::Policy::default());
        let key = fuzz_signing_key().verifying_key();
        assert!(
            httpsig::verify(&req, &params, &key).is_err(),
            "arbitrary bytes never verify"
        );
    }

    // Round trip: whatever we sign, we accept.
    let (kid, rest) = split_once(data, b'\n');
    let Ok(kid) = std::str::from_utf8(kid) else { return };
    let created = i64::try_from(le_u64(rest) >> 24).unwrap_or(0);
    let body = rest.get(8..).unwrap_or_default();
    let mut h = HeaderMap::new();
    if rest.first().is_some_and(|b| b & 1 == 1) {
        h.insert(http::header::AUTHORIZATION, HeaderValue::from_static("GNAP abc"));
    }
    let target = "http://127.0.0.1:8080/quotes";
    let key = fuzz_signing_key();
    if httpsig::sign_request(&method, target, &mut h, body, &key, kid, created).is_err() {
        return;
    }
    let params = httpsig::parse_signature(&h).expect("what we sign parses");
    assert_eq!(params.keyid.as_deref(), Some(kid));
    assert_eq!(params.created, Some(created));
    let req = httpsig::Request {
        method: &method,
        target_uri: target,
        headers: &h,
        body,
    };
    httpsig::verify(&req, &params, &key.verifying_key()).expect("what we sign verifies");
    httpsig::check_policy(&req, &params, created, &httpsig::Policy::default()).expect("and meets the policy");

    // The same request in the legacy form (unquoted components, bare base64, as the official Rust SDK sends
    // it): read by the tolerant path, verified over the text received, and one changed byte of it refused.
    let Some(close) = params.raw_params.find(')') else {
        panic!("our Signature-Input has an inner list")
    };
    let raw = format!("({}){}", params.components.join(" "), &params.raw_params[close + 1..]);
    let base = httpsig::signature_base(
        &req,
        &httpsig::SignatureParams {
            raw_params: raw.clone(),
            ..params.clone()
        },
    )
    .expect("base");
    let sig = base64_std(&ed25519_dalek::Signer::sign(&key, base.as_bytes()).to_bytes());
    h.insert(
        httpsig::SIGNATURE_INPUT,
        HeaderValue::from_str(&format!("sig1={raw}")).expect("ascii"),
    );
    h.insert(httpsig::SIGNATURE, HeaderValue::from_str(&sig).expect("ascii"));
    let req = httpsig::Request {
        method: &method,
        target_uri: target,
        headers: &h,
        body,
    };
    let legacy = httpsig::parse_signature(&h).expect("the legacy form parses");
    assert!(matches!(legacy.form, httpsig::Form::Legacy { .. }));
    assert_eq!((legacy.keyid.as_deref(), legacy.created), (Some(kid), Some(created)));
    assert_eq!(legacy.components, params.components);
    httpsig::verify(&req, &legacy, &key.verifying_key()).expect("the legacy form verifies");
    httpsig::check_policy(&req, &legacy, created, &httpsig::Policy::default()).expect("and meets the policy");
    let at = usize::from(rest.first().copied().unwrap_or(0)) % raw.len();
    let mut changed = format!("sig1={raw}").into_bytes();
    changed[at + 5] = if changed[at + 5] == b'x' { b'y' } else { b'x' };
    if let Ok(v) = HeaderValue::from_bytes(&changed) {
        let mut h = h.clone();
        h.insert(httpsig::SIGNATURE_INPUT, v);
        let req = httpsig::Request {
            method: &method,
            target_uri: target,
            headers: &h,
            body,
        };
        let refused = httpsig::parse_signature(&h)
            .and_then(|p| httpsig::verify(&req, &p, &key.verifying_key()).map(|()| p))
            .and_then(|p| httpsig::check_policy(&req, &p, created, &httpsig::Policy::default()));
        assert!(refused.is_err(), "one byte changed at {at}");
    }
}

/// Standard base64 with padding (the fuzz crate has no base64 dependency).
fn base64_std(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `Content-Digest`: arbitrary header text against a body (split at the first `\n`), then digests we produce
/// for the body verify and do not verify another body.
pub fn content_digest(data: &[u8]) {
    let (header, body) = split_once(data, b'\n');
    if let Ok(h) = std::str::from_utf8(header) {
        let _ = httpsig::verify_content_digest(h, body);
    }
    let sha512 = httpsig::content_digest_sha512(body);
    let sha256 = httpsig::content_digest_sha256(body);
    assert_eq!(httpsig::verify_content_digest(&sha512, body), Ok(()));
    assert_eq!(httpsig::verify_content_digest(&sha256, body), Ok(()));
    assert_eq!(
        httpsig::verify_content_digest(&format!("{sha256}, {sha512}"), body),
        Ok(())
    );
    let mut other = body.to_vec();
    other.push(b'x');
    assert!(httpsig::verify_content_digest(&sha512, &other).is_err());
}

// ---------------------------------------------------------------------------------------------------------
// ISO 8601 intervals

/// Repeating intervals and durations: parse → print → parse gives the same value, printing is idempotent,
/// and `window_at` returns a window containing the moment asked about.
pub fn interval(data: &[u8]) {
    let (text, tail) = split_once(data, b'\n');
    let Ok(s) = std::str::from_utf8(text) else { return };
    let offset = i64::try_from(le_u64(tail) >> 8).unwrap_or(0) - (1 << 54);
    if let Ok(d) = s.parse::<Duration>() {
        let printed = d.to_string();
        assert_eq!(printed.parse::<Duration>(), Ok(d), "duration round trip of {s:?}");
        let _ = (d.is_zero(), d.is_calendar(), d.describe(), d.describe_per());
        let t = OffsetDateTime::UNIX_EPOCH;
        let _ = (d.add_to(t), d.sub_from(t));
    }
    let Ok(i) = RepeatingInterval::parse(s) else { return };
    let printed = i.to_string();
    let again = RepeatingInterval::parse(&printed).expect("the canonical form parses");
    assert_eq!(again, i, "{s:?} printed as {printed:?}");
    assert_eq!(again.to_string(), printed, "printing is idempotent");
    let (start, end) = i.first_window();
    assert!(start < end, "the first window is not empty");
    let _ = (i.describe(), i.describe_per(), i.repetitions().windows());
    let nanos = i128::from(offset) * 1_000;
    if let Some(t) = start.checked_add(time::Duration::nanoseconds_i128(nanos))
        && let Ok(Some((a, b))) = i.window_at(t)
    {
        assert!(a <= t && t < b, "window_at({t}) gave [{a}, {b}) for {printed}");
    }
    assert_eq!(
        i.window_at(start),
        Ok(Some((start, end))),
        "the first window contains its start"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Amounts and request bodies

/// Amount values (`Value::parse` and its JSON form), `amount` objects, asset codes and minor-unit formatting.
pub fn amount(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(v) = Value::parse(s) {
            assert_eq!(v.to_string(), s, "only canonical values parse");
            assert!(i64::try_from(v.get()).is_ok());
            assert_eq!(Value::from_i64(v.as_i64()), Ok(v));
        }
        let json = serde_json::to_string(s).expect("a string serialises");
        let from_json: Result<Value, _> = serde_json::from_str(&json);
        assert_eq!(
            from_json.ok(),
            Value::parse(s).ok(),
            "the JSON string form parses alike"
        );
        let scale = data.first().copied().unwrap_or(0);
        if let Ok(asset) = Asset::new(s, scale) {
            let _ = asset.format(i128::from(le_u64(data)));
        }
    }
    if let Ok(a) = serde_json::from_slice::<Amount>(data) {
        let back = serde_json::to_string(&a).expect("an amount serialises");
        assert_eq!(serde_json::from_str::<Amount>(&back).ok(), Some(a.clone()), "{back}");
        let _ = a.expect_asset(&a.asset());
    }
    if let Some(scale) = data.first() {
        let raw = i128::from(le_u64(&data[1..])) - i128::from(u64::MAX / 2);
        let text = money::format_minor(raw, *scale);
        let digits: String = text.chars().filter(char::is_ascii_digit).collect();
        let back: i128 = digits.parse().expect("digits");
        assert_eq!(back, raw.abs(), "formatting keeps every digit: {raw} → {text}");
    }
    if let (Some(&b), Some(rest)) = (data.first(), data.get(1..9)) {
        let x = Value::new(le_u64(rest) >> 1);
        let y = Value::new(u64::from(b) << 40);
        if let (Ok(x), Ok(y)) = (x, y)
            && let Ok(sum) = x.checked_add(y)
        {
            assert_eq!(sum.checked_sub(y), Ok(x));
        }
    }
}

/// The JSON request bodies the servers decode (`POST /incoming-payments`, `/quotes`, `/outgoing-payments`,
/// `/auth` with its structural validation, grant limits), client JWKS documents, and list query strings.
pub fn request_json(data: &[u8]) {
    let _ = serde_json::from_slice::<CreateIncoming>(data);
    let _ = serde_json::from_slice::<CreateQuote>(data);
    let _ = serde_json::from_slice::<CreateOutgoing>(data);
    if let Ok(g) = serde_json::from_slice::<GrantRequest>(data) {
        let _ = g.validate();
        for (list_all, read_all) in [(true, false), (false, true)] {
            let _ = g.needs_interaction(opdesk::gnap::model::ConsentPolicy { list_all, read_all });
        }
    }
    if let Ok(l) = serde_json::from_slice::<Limits>(data)
        && let Some(i) = &l.interval
    {
        let _ = RepeatingInterval::parse(i);
    }
    if let Ok(jwks) = serde_json::from_slice::<Jwks>(data) {
        for k in &jwks.keys {
            if let Ok(vk) = k.verifying_key() {
                let _ = httpsig::jwk::thumbprint(&vk);
            }
            let _ = jwks.find(&k.kid);
        }
    }
    if let Ok(q) = std::str::from_utf8(data) {
        let map: HashMap<String, String> = q
            .split('&')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect();
        if let Ok(lq) = ListQuery::parse(&map) {
            assert!((1..=100).contains(&lq.page.limit));
        }
    }
}
