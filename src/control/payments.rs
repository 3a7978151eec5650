//! Payments as the operator sees them: pages of incoming, outgoing payments and quotes; completing an
//! incoming payment; cancelling and retrying an outgoing one.

use super::{
    Error, Services,
    dto::{Listed, PaymentFilter},
};
use crate::{
    ase::{
        incoming::IncomingView,
        outgoing::{OutgoingError, OutgoingView},
        quotes::QuoteDto,
    },
    store::payments::{Page, PageQuery},
};

fn page_of(f: &PaymentFilter) -> Result<PageQuery, Error> {
    if let Some(c) = &f.cursor
        && !crate::ids::is_id(c)
    {
        return Err(Error::invalid("invalid_request", "cursor is not an id"));
    }
    let limit = f.first.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Error::invalid("invalid_request", "first must be from 1 to 500"));
    }
    if f.q.as_ref().is_some_and(|q| q.chars().count() > 200) {
        return Err(Error::invalid("invalid_request", "q is longer than 200 characters"));
    }
    Ok(PageQuery {
        cursor: f.cursor.clone(),
        backward: false,
        limit,
        search: f.q.clone().filter(|q| !q.is_empty()),
    })
}

async fn wallet_id(s: &Services, f: &PaymentFilter) -> Result<Option<String>, Error> {
    match &f.wallet {
        None => Ok(None),
        Some(name) => Ok(Some(s.wallets.get(name).await?.id.into())),
    }
}

fn listed<R, T>(page: Page<R>, id: impl Fn(&R) -> String, view: impl Fn(&R) -> T) -> Listed<T> {
    let next_cursor = if page.has_next {
        page.items.last().map(&id)
    } else {
        None
    };
    Listed {
        items: page.items.iter().map(view).collect(),
        next_cursor,
    }
}

pub async fn list_incoming(s: &Services, f: PaymentFilter) -> Result<Listed<IncomingView>, Error> {
    let wallet = wallet_id(s, &f).await?;
    let page = s
        .incoming
        .list(wallet.as_deref(), None, f.state.as_deref(), page_of(&f)?)
        .await?;
    let methods = f.methods.unwrap_or(true);
    Ok(listed(page, |r| r.id.clone().into(), |r| s.incoming.view(r, methods)))
}

pub async fn show_incoming(s: &Services, id: &str) -> Result<IncomingView, Error> {
    Ok(s.incoming.view(&s.incoming.get(id).await?, true))
}

pub async fn complete_incoming(s: &Services, id: &str) -> Result<IncomingView, Error> {
    Ok(s.incoming.view(&s.incoming.complete(id).await?, true))
}

pub async fn list_outgoing(s: &Services, f: PaymentFilter) -> Result<Listed<OutgoingView>, Error> {
    let wallet = wallet_id(s, &f).await?;
    let page = s
        .outgoing
        .list(wallet.as_deref(), None, f.state.clone(), page_of(&f)?)
        .await?;
    Ok(listed(page, |r| r.id.clone().into(), |r| s.outgoing.view(r)))
}

pub async fn show_outgoing(s: &Services, id: &str) -> Result<OutgoingView, Error> {
    Ok(s.outgoing.view(&s.outgoing.get(id).await?))
}

pub async fn cancel_outgoing(s: &Services, id: &str) -> Result<OutgoingView, Error> {
    let p = s.outgoing.get(id).await?;
    let p = s.engine.cancel(&p.id).await.map_err(OutgoingError::from)?;
    Ok(s.outgoing.view(&p))
}

pub async fn retry_outgoing(s: &Services, id: &str) -> Result<OutgoingView, Error> {
    let p = s.outgoing.get(id).await?;
    let p = s.engine.retry(&p.id).await.map_err(OutgoingError::from)?;
    Ok(s.outgoing.view(&p))
}

pub async fn list_quotes(s: &Services, f: PaymentFilter) -> Result<Listed<QuoteDto>, Error> {
    if f.state.is_some() {
        return Err(Error::invalid("invalid_request", "quotes have no state filter"));
    }
    let wallet = wallet_id(s, &f).await?;
    let page = s.quotes.list(wallet.as_deref(), page_of(&f)?).await?;
    Ok(listed(page, |r| r.id.clone().into(), |r| s.quotes.dto(r)))
}

pub async fn show_quote(s: &Services, id: &str) -> Result<QuoteDto, Error> {
    Ok(s.quotes.dto(&s.quotes.get(id).await?))
}
