//! `GET /workshop/class`: the class page for the projector, served by the workshop's happy-life desk. Every
//! seat with its step and since when, and how many have paid, from both desks ([`Room::progress`]); no
//! passphrase, code, key or token. Plain HTML that reloads itself every few seconds (no JavaScript) under the
//! interaction page's strict policy.
//!
//! [`Room::progress`]: crate::control::classroom::Room::progress

use axum::{
    extract::State,
    http::StatusCode,
    response::{Html, IntoResponse, Response},
};
use time::OffsetDateTime;

use crate::{
    control::classroom::{SeatProgress, Step},
    server::{
        AppState,
        routes::interaction::{escape, guard},
    },
};

/// How often the page reloads itself, in seconds.
pub const REFRESH_SECS: u32 = 5;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem;font-size:1.4rem}\
h1{font-size:2rem;margin:0 0 .5rem}.paid{color:#060}.now{color:#555}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.2rem .8rem;border-bottom:1px solid #ddd}\
.bar{height:1rem;background:#eee;margin:.5rem 0 1rem}.bar div{height:1rem;background:#2a7}";

/// A seat's step in words for the room: what it did last, or `paid`.
fn doing(p: &SeatProgress) -> String {
    match p.next() {
        None => match p.step(Step::Paid).map(|d| d.count) {
            Some(n) if n > 1 => format!("paid ×{n}"),
            _ => "paid".to_owned(),
        },
        Some(Step::WalletRead) => "not started".to_owned(),
        Some(next) => format!("next: {}", next.title().to_lowercase()),
    }
}

/// `12:04:31` (UTC) and how long ago, from `now`.
fn since(at: Option<OffsetDateTime>, now: OffsetDateTime) -> String {
    let Some(at) = at else {
        return String::new();
    };
    let secs = (now - at).whole_seconds().max(0);
    let ago = if secs < 60 {
        format!("{secs} s ago")
    } else if secs < 3600 {
        format!("{} min ago", secs / 60)
    } else {
        format!("{} h ago", secs / 3600)
    };
    format!("{:02}:{:02}:{:02} UTC ({ago})", at.hour(), at.minute(), at.second())
}

/// The page for `seats` at `now`, and its style sheet (the bar's width is a rule of its own: the policy allows
/// no inline style).
pub fn render(seats: &[SeatProgress], now: OffsetDateTime) -> (String, String) {
    let paid = seats.iter().filter(|s| s.next().is_none()).count();
    let total = seats.len();
    let width = (paid * 100).checked_div(total).unwrap_or(0);
    let rows: String = seats
        .iter()
        .map(|s| {
            let class = if s.next().is_none() { "paid" } else { "now" };
            format!(
                "<tr><td>{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
                escape(&s.name()),
                escape(&doing(s)),
                escape(&since(s.last_at(), now))
            )
        })
        .collect();
    let style = format!("{STYLE}.bar .w{width}{{width:{width}%}}");
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\"><title>The class: {paid} of {total} paid</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{style}</style></head>\
         <body><h1>{paid} of {total} seats have paid</h1><div class=\"bar\"><div class=\"w{width}\"></div></div>\
         <table><thead><tr><th>seat</th><th>step</th><th>since</th></tr></thead><tbody>{rows}</tbody></table>\
         </body></html>"
    );
    (html, style)
}

/// `GET /workshop/class`.
pub async fn page(State(state): State<AppState>) -> Response {
    let now = state.clock.now();
    let (html, style) = match state.room.progress().await {
        Some(Ok(seats)) => render(&seats, now),
        Some(Err(e)) => {
            tracing::warn!(error = %e, "the class page could not read the class");
            return (StatusCode::SERVICE_UNAVAILABLE, "the class cannot be read just now").into_response();
        }
        None => return (StatusCode::NOT_FOUND, "no class is seated here").into_response(),
    };
    guard((StatusCode::OK, Html(html)).into_response(), &style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_counts_the_paid_seats_and_says_each_step() {
        let t = |s: &str| crate::clock::ts(s);
        let mut a: SeatProgress = serde_json::from_value(serde_json::json!({
            "seat": 1, "steps": [null, null, null, null, null, null], "approvedByOwner": 0
        }))
        .unwrap();
        let mut b = a.clone();
        b.seat = 2;
        let done = serde_json::json!({"firstAt": "2026-12-01T10:00:00Z", "count": 1});
        b.steps = std::array::from_fn(|_| Some(serde_json::from_value(done.clone()).unwrap()));
        a.steps[0] = Some(serde_json::from_value(done).unwrap());
        let (html, style) = render(&[a, b], t("2026-12-01T10:02:00Z"));
        assert!(html.contains("<h1>1 of 2 seats have paid</h1>"), "{html}");
        assert!(
            html.contains("<td>seat01</td><td class=\"now\">next: incoming</td>"),
            "{html}"
        );
        assert!(html.contains("<td>seat02</td><td class=\"paid\">paid</td><td>10:00:00 UTC (2 min ago)</td>"));
        assert!(html.contains("http-equiv=\"refresh\"") && !html.contains("<script"));
        assert!(style.ends_with(".bar .w50{width:50%}") && html.contains(&format!("<style>{style}</style>")));
    }
}
