//! Signature verification of a realistic Open Payments request: a signed `POST /incoming-payments` with a
//! GNAP token and a JSON body, exactly as the official Node SDK signs it. Measures the full server-side check
//! (parse `Signature-Input`/`Signature`, policy, `Content-Digest` over the body, Ed25519 `verify_strict`) and
//! signing for comparison.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue, Method, header};
use opdesk::httpsig::{self, Policy, Request};

/// The allocator the `opdesk` binary runs with, so that the bench measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    let key = opdesk::httpsig::jwk::generate().expect("key");
    let verifying = key.verifying_key();
    let url = "https://ase.example/incoming-payments";
    let body = br#"{"walletAddress":"https://ase.example/bob","incomingAmount":{"value":"2500","assetCode":"USD","assetScale":2},"expiresAt":"2026-12-01T00:00:00.000Z","metadata":{"description":"Invoice #4711"}}"#;
    let created = 1_790_000_000;
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_static("GNAP 3Bq9x0Xk2mT5fKc8PzR1vYwL6hN4jE7dUaSgQoIbVnC"),
    );
    httpsig::sign_request(&Method::POST, url, &mut headers, body, &key, "key-1", created).expect("sign");
    let policy = Policy { max_skew_secs: 300 };

    let mut group = c.benchmark_group("httpsig");
    group.throughput(Throughput::Elements(1));
    group.bench_function("verify signed POST /incoming-payments", |b| {
        b.iter(|| {
            let req = Request {
                method: &Method::POST,
                target_uri: url,
                headers: &headers,
                body,
            };
            let params = httpsig::parse_signature(&headers).expect("parse");
            httpsig::check_policy(&req, &params, created, &policy).expect("policy");
            httpsig::verify(&req, &params, &verifying).expect("verify");
        })
    });
    group.bench_function("sign POST /incoming-payments", |b| {
        b.iter(|| {
            let mut h = HeaderMap::new();
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_static("GNAP 3Bq9x0Xk2mT5fKc8PzR1vYwL6hN4jE7dUaSgQoIbVnC"),
            );
            httpsig::sign_request(&Method::POST, url, &mut h, body, &key, "key-1", created).expect("sign");
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
