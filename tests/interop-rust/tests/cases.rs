//! The cases, in the order they run, named after the SDK's integration tests (`integration: …`) and its
//! snippets (`snippet: …`). Each checks what the SDK hands back, not only that it did not fail.

use open_payments::{
    client::{AuthenticatedResources, UnauthenticatedResources},
    types::{CreateIncomingPaymentRequest, CreateOutgoingPaymentRequest, IncomingPaymentAction, JwkCurve, JwkKeyType},
};
use serde_json::json;

use super::{Case, Outcome, World, check, fail, incoming_access, usd};

/// Every case with its name.
pub fn all(w: &World) -> Vec<(&'static str, Case<'_>)> {
    vec![
        ("integration: wallet_address", Box::pin(wallet_address(w))),
        ("integration: grant", Box::pin(grant(w))),
        ("integration: incoming_payment", Box::pin(incoming_payment(w))),
        ("integration: quote", Box::pin(quote(w))),
        ("integration: token", Box::pin(token(w))),
        ("integration: outgoing_payment", Box::pin(outgoing_payment(w))),
        ("snippet: wallet-address-get", Box::pin(wallet_address_get(w))),
        ("snippet: wallet-address-get-keys", Box::pin(wallet_address_get_keys(w))),
        ("snippet: grant-incoming-payment", Box::pin(grant_incoming_payment(w))),
        ("snippet: grant-quote", Box::pin(grant_quote(w))),
        ("snippet: grant-outgoing-payment", Box::pin(grant_outgoing_payment(w))),
        ("snippet: grant-continuation", Box::pin(grant_continuation(w))),
        ("snippet: grant-cancel", Box::pin(grant_cancel(w))),
        ("snippet: incoming-payment-create", Box::pin(incoming_payment_create(w))),
        ("snippet: incoming-payment-get", Box::pin(incoming_payment_get(w))),
        ("snippet: incoming-payment-list", Box::pin(incoming_payment_list(w))),
        (
            "snippet: incoming-payment-complete",
            Box::pin(incoming_payment_complete(w)),
        ),
        ("snippet: quote-create", Box::pin(quote_create(w, None))),
        (
            "snippet: quote-create-with-debit-amount",
            Box::pin(quote_create(w, Some(true))),
        ),
        (
            "snippet: quote-create-with-receive-amount",
            Box::pin(quote_create(w, Some(false))),
        ),
        ("snippet: quote-get", Box::pin(quote_get(w))),
        ("snippet: outgoing-payment-create", Box::pin(outgoing_payment_create(w))),
        ("snippet: outgoing-payment-get", Box::pin(outgoing_payment_get(w))),
        ("snippet: outgoing-payment-list", Box::pin(outgoing_payment_list(w))),
        ("snippet: token-rotate", Box::pin(token_rotate(w))),
        ("snippet: token-revoke", Box::pin(token_revoke(w))),
    ]
}

async fn wallet_address(w: &World) -> Outcome {
    let a = w
        .client
        .wallet_address()
        .get(&w.alice)
        .await
        .map_err(|e| fail("get", e))?;
    check(a.id == w.alice && a.auth_server == w.auth, "alice's wallet address")?;
    let keys = w
        .open
        .wallet_address()
        .get_keys(&a)
        .await
        .map_err(|e| fail("keys", e))?;
    check(keys.keys.is_empty(), "alice publishes no client keys")
}

async fn grant(w: &World) -> Outcome {
    use IncomingPaymentAction::*;
    let (token, manage, uri, cont) = w
        .grant_now(&incoming_access(vec![Create, Read, ReadAll, List, Complete]))
        .await?;
    check(
        !token.is_empty() && !manage.is_empty() && !uri.is_empty(),
        "a full grant",
    )?;
    w.client
        .grant()
        .cancel(&uri, Some(&cont))
        .await
        .map_err(|e| fail("cancel", e))
}

async fn incoming_payment(w: &World) -> Outcome {
    let token = w.incoming_token().await?;
    let created = w
        .client
        .incoming_payments()
        .create(
            &w.rs,
            &CreateIncomingPaymentRequest {
                wallet_address: w.alice.clone(),
                incoming_amount: Some(usd(w, "100")),
                expires_at: None,
                metadata: Some(json!({"description": "integration"})),
            },
            Some(&token),
        )
        .await
        .map_err(|e| fail("create", e))?;
    let got = w
        .client
        .incoming_payments()
        .get(&created.id, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(got.id == created.id && !got.completed, "the payment read back")?;
    let list = w
        .client
        .incoming_payments()
        .list(&w.rs, &w.alice, None, Some(10), None, Some(&token))
        .await
        .map_err(|e| fail("list", e))?;
    check(list.result.iter().any(|p| p.id == created.id), "listed")?;
    let done = w
        .client
        .incoming_payments()
        .complete(&created.id, Some(&token))
        .await
        .map_err(|e| fail("complete", e))?;
    check(done.completed, "completed")
}

async fn quote(w: &World) -> Outcome {
    let (token, q) = w.quote(Some((true, "100"))).await?;
    check(
        q.debit_amount.value == "100" && q.wallet_address == w.alice,
        "the quote's amounts",
    )?;
    let got = w
        .client
        .quotes()
        .get(&q.id, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(
        got.id == q.id && got.receive_amount == q.receive_amount,
        "the quote read back",
    )
}

async fn token(w: &World) -> Outcome {
    let (token, manage, _, _) = w.grant_now(&incoming_access(vec![IncomingPaymentAction::Read])).await?;
    let rotated = w
        .client
        .token()
        .rotate(&manage, Some(&token))
        .await
        .map_err(|e| fail("rotate", e))?;
    check(rotated.access_token.value != token, "a new token value")?;
    w.client
        .token()
        .revoke(&rotated.access_token.manage, Some(&rotated.access_token.value))
        .await
        .map_err(|e| fail("revoke", e))
}

async fn outgoing_payment(w: &World) -> Outcome {
    let (token, p) = w.outgoing().await?;
    check(p.wallet_address == w.alice && !p.failed, "the created payment")?;
    let got = w
        .client
        .outgoing_payments()
        .get(&p.id, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(got.id == p.id, "read back")?;
    let list = w
        .client
        .outgoing_payments()
        .list(&w.rs, &w.alice, None, Some(10), None, Some(&token))
        .await
        .map_err(|e| fail("list", e))?;
    check(list.result.iter().any(|x| x.id == p.id), "listed")
}

async fn wallet_address_get(w: &World) -> Outcome {
    let bob = w.open.wallet_address().get(&w.bob).await.map_err(|e| fail("get", e))?;
    check(bob.id == w.bob && bob.asset_code == w.asset.0, "bob's wallet address")
}

async fn wallet_address_get_keys(w: &World) -> Outcome {
    let me = w
        .open
        .wallet_address()
        .get(&format!("{}/demo-client", w.server.base))
        .await
        .map_err(|e| fail("get", e))?;
    let keys = w
        .open
        .wallet_address()
        .get_keys(&me)
        .await
        .map_err(|e| fail("keys", e))?;
    check(
        keys.keys
            .iter()
            .any(|k| k.crv == JwkCurve::Ed25519 && k.kty == JwkKeyType::OKP && !k.x.is_empty()),
        "the client's Ed25519 key",
    )
}

async fn grant_incoming_payment(w: &World) -> Outcome {
    use IncomingPaymentAction::*;
    let (token, ..) = w
        .grant_now(&incoming_access(vec![Create, Read, List, Complete]))
        .await?;
    check(!token.is_empty(), "a token")
}

async fn grant_quote(w: &World) -> Outcome {
    check(!w.quote_token().await?.is_empty(), "a token")
}

async fn grant_outgoing_payment(w: &World) -> Outcome {
    let (redirect, uri, token) = w.outgoing_pending().await?;
    check(
        redirect.starts_with(&w.server.base) && !uri.is_empty(),
        "an interaction",
    )?;
    // Leave nothing pending for the next case.
    w.client
        .grant()
        .cancel(&uri, Some(&token))
        .await
        .map_err(|e| fail("cancel", e))
}

async fn grant_continuation(w: &World) -> Outcome {
    check(
        !w.outgoing_token().await?.is_empty(),
        "a token after the operator's consent",
    )
}

async fn grant_cancel(w: &World) -> Outcome {
    let (_, _, uri, cont) = w.grant_now(&incoming_access(vec![IncomingPaymentAction::Read])).await?;
    w.client
        .grant()
        .cancel(&uri, Some(&cont))
        .await
        .map_err(|e| fail("cancel", e))?;
    // Cancelled: the continuation is gone.
    let again = w.client.grant().cancel(&uri, Some(&cont)).await;
    check(again.is_err(), "a cancelled grant cannot be cancelled again")
}

async fn incoming_payment_create(w: &World) -> Outcome {
    let url = w.bob_incoming("250").await?;
    check(url.starts_with(&w.rs), "an incoming payment URL")
}

async fn incoming_payment_get(w: &World) -> Outcome {
    let url = w.bob_incoming("250").await?;
    let token = w.incoming_token().await?;
    let p = w
        .client
        .incoming_payments()
        .get(&url, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(
        p.incoming_amount.as_ref().is_some_and(|a| a.value == "250") && p.received_amount.value == "0",
        "its amounts",
    )?;
    let public = w
        .open
        .public_incoming_payments()
        .get(&url)
        .await
        .map_err(|e| fail("public get", e))?;
    check(public.auth_server == w.auth, "the public view names the AS")
}

async fn incoming_payment_list(w: &World) -> Outcome {
    let token = w.incoming_token().await?;
    let list = w
        .client
        .incoming_payments()
        .list(&w.rs, &w.bob, None, Some(2), None, Some(&token))
        .await
        .map_err(|e| fail("list", e))?;
    check(list.result.len() <= 2, "a page of at most two")?;
    if let (true, Some(end)) = (list.pagination.has_next_page, list.pagination.end_cursor.as_deref()) {
        let next = w
            .client
            .incoming_payments()
            .list(&w.rs, &w.bob, Some(end), Some(2), None, Some(&token))
            .await
            .map_err(|e| fail("next page", e))?;
        check(
            next.result.iter().all(|p| list.result.iter().all(|q| q.id != p.id)),
            "pages do not overlap",
        )?;
    }
    Ok(())
}

async fn incoming_payment_complete(w: &World) -> Outcome {
    let url = w.bob_incoming("250").await?;
    let token = w.incoming_token().await?;
    let p = w
        .client
        .incoming_payments()
        .complete(&url, Some(&token))
        .await
        .map_err(|e| fail("complete", e))?;
    check(p.completed, "completed")
}

async fn quote_create(w: &World, debit: Option<bool>) -> Outcome {
    let amount = debit.map(|d| (d, "200"));
    let (_, q) = w.quote(amount).await?;
    match debit {
        Some(true) => check(q.debit_amount.value == "200", "the debit amount fixed"),
        Some(false) => check(q.receive_amount.value == "200", "the receive amount fixed"),
        // No amount: the incoming payment's (500) is what is received.
        None => check(q.receive_amount.value == "500", "the incoming amount received"),
    }
}

async fn quote_get(w: &World) -> Outcome {
    let (token, q) = w.quote(Some((false, "300"))).await?;
    let got = w
        .client
        .quotes()
        .get(&q.id, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(got == q, "the same quote")
}

async fn outgoing_payment_create(w: &World) -> Outcome {
    let (_, p) = w.outgoing().await?;
    check(
        p.debit_amount.value == "120" && p.grant_spent_debit_amount.is_some(),
        "the payment, with what the grant has spent",
    )?;
    // From an incoming payment, without a quote: refused or made, never a 5xx.
    let receiver = w.bob_incoming("100").await?;
    let token = w.outgoing_token().await?;
    let r = w
        .client
        .outgoing_payments()
        .create(
            &w.rs,
            &CreateOutgoingPaymentRequest::FromIncomingPayment {
                wallet_address: w.alice.clone(),
                incoming_payment_id: receiver,
                debit_amount: usd(w, "100"),
                metadata: None,
            },
            Some(&token),
        )
        .await;
    match r {
        Ok(_) => Ok(()),
        Err(e) => check(
            !format!("{e:?}").contains("code: Some(5"),
            &format!("not a server error: {e:?}"),
        ),
    }
}

async fn outgoing_payment_get(w: &World) -> Outcome {
    let (token, p) = w.outgoing().await?;
    let got = w
        .client
        .outgoing_payments()
        .get(&p.id, Some(&token))
        .await
        .map_err(|e| fail("get", e))?;
    check(got.id == p.id && got.debit_amount == p.debit_amount, "read back")
}

async fn outgoing_payment_list(w: &World) -> Outcome {
    let (token, p) = w.outgoing().await?;
    let list = w
        .client
        .outgoing_payments()
        .list(&w.rs, &w.alice, None, Some(20), None, Some(&token))
        .await
        .map_err(|e| fail("list", e))?;
    check(list.result.iter().any(|x| x.id == p.id), "listed")
}

async fn token_rotate(w: &World) -> Outcome {
    let (token, manage, ..) = w.grant_now(&incoming_access(vec![IncomingPaymentAction::List])).await?;
    let rotated = w
        .client
        .token()
        .rotate(&manage, Some(&token))
        .await
        .map_err(|e| fail("rotate", e))?;
    // The old value no longer works; the new one does.
    let old = w
        .client
        .incoming_payments()
        .list(&w.rs, &w.bob, None, Some(1), None, Some(&token))
        .await;
    check(old.is_err(), "the rotated-away token is refused")?;
    w.client
        .incoming_payments()
        .list(&w.rs, &w.bob, None, Some(1), None, Some(&rotated.access_token.value))
        .await
        .map(|_| ())
        .map_err(|e| fail("list with the new token", e))
}

async fn token_revoke(w: &World) -> Outcome {
    let (token, manage, ..) = w.grant_now(&incoming_access(vec![IncomingPaymentAction::List])).await?;
    w.client
        .token()
        .revoke(&manage, Some(&token))
        .await
        .map_err(|e| fail("revoke", e))?;
    let after = w
        .client
        .incoming_payments()
        .list(&w.rs, &w.bob, None, Some(1), None, Some(&token))
        .await;
    check(after.is_err(), "a revoked token is refused")
}
