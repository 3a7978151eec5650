//! List query parameters (`wallet-address`, `cursor`, `first`, `last`) and the `pagination` object, exactly as
//! the resource-server spec defines them: 1..=100 items, 20 by default, newest first, empty cursors omitted.

use std::collections::HashMap;

use serde::Serialize;

use crate::{
    ids,
    server::error::ApiError,
    store::payments::{Page, PageQuery},
};

/// A parsed list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub wallet_address: String,
    pub page: PageQuery,
}

fn bad(d: impl Into<String>) -> ApiError {
    ApiError::bad_request("invalid_request", d)
}

fn count(name: &str, v: &str) -> Result<u32, ApiError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) && !v.starts_with('0') && !v.starts_with('+') => Ok(n),
        _ => Err(bad(format!("{name} must be an integer from 1 to 100"))),
    }
}

impl ListQuery {
    pub fn parse(q: &HashMap<String, String>) -> Result<Self, ApiError> {
        let wallet_address = q
            .get("wallet-address")
            .filter(|w| !w.is_empty())
            .ok_or_else(|| bad("wallet-address is required"))?;
        let cursor = match q.get("cursor") {
            None => None,
            Some(c) if ids::is_id(c) => Some(c.clone()),
            Some(_) => return Err(bad("cursor is not a cursor this server issued")),
        };
        let first = q.get("first").map(|v| count("first", v)).transpose()?;
        let last = q.get("last").map(|v| count("last", v)).transpose()?;
        let page = match (first, last) {
            (Some(_), Some(_)) => return Err(bad("give first or last, not both")),
            (None, Some(_)) if cursor.is_none() => return Err(bad("last needs a cursor")),
            (None, Some(n)) => PageQuery {
                cursor,
                backward: true,
                limit: n,
                search: None,
            },
            (f, None) => PageQuery {
                cursor,
                backward: false,
                limit: f.unwrap_or(20),
                search: None,
            },
        };
        Ok(Self {
            wallet_address: wallet_address.clone(),
            page,
        })
    }
}

/// The spec's `page-info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
}

/// A list response: `{pagination, result}`.
#[derive(Debug, Clone, Serialize)]
pub struct ListResponse<T> {
    pub pagination: PageInfo,
    pub result: Vec<T>,
}

impl<T> ListResponse<T> {
    /// Builds the response from a page of rows, their ids and their wire form.
    pub fn from_page<R>(page: Page<R>, id: impl Fn(&R) -> String, dto: impl Fn(R) -> T) -> Self {
        let pagination = PageInfo {
            start_cursor: page.items.first().map(&id),
            end_cursor: page.items.last().map(&id),
            has_next_page: page.has_next,
            has_previous_page: page.has_previous,
        };
        Self {
            pagination,
            result: page.items.into_iter().map(dto).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> Result<ListQuery, ApiError> {
        ListQuery::parse(&pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
    }

    #[test]
    fn parses_the_spec_parameters() {
        let id = ids::new_id();
        assert_eq!(q(&[("wallet-address", "w")]).unwrap().page.limit, 20);
        let p = q(&[("wallet-address", "w"), ("last", "5"), ("cursor", &id)])
            .unwrap()
            .page;
        assert!(p.backward && p.limit == 5);
        for bad in [
            vec![],
            vec![("wallet-address", "w"), ("first", "0")],
            vec![("wallet-address", "w"), ("first", "101")],
            vec![("wallet-address", "w"), ("first", "-1")],
            vec![("wallet-address", "w"), ("first", "abc")],
            vec![("wallet-address", "w"), ("first", "1e30")],
            vec![
                ("wallet-address", "w"),
                ("first", "2"),
                ("last", "2"),
                ("cursor", id.as_str()),
            ],
            vec![("wallet-address", "w"), ("last", "2")],
            vec![("wallet-address", "w"), ("cursor", "garbage")],
        ] {
            assert!(q(&bad).is_err(), "{bad:?}");
        }
    }
}
