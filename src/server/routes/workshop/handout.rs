//! A seat's handout over HTTP, served by the workshop's happy-life desk: `GET /workshop/handout` asks for the
//! code printed on the seat's card (a plain form: the code never travels in a URL); `POST` with the code shows
//! the seat's card and its files, each downloaded by a form that posts the code again (`POST
//! /workshop/handout/file`, `file=` one name or `zip` for all of them in `seatNN.zip`). Codes are compared
//! case-insensitively; wrong ones are counted per address and refused past the limit
//! ([`crate::control::classroom::Room::handout`]). No JavaScript; the interaction page's strict policy.

use std::net::{IpAddr, SocketAddr};

use axum::{
    Extension, Form,
    extract::{ConnectInfo, State},
    http::{HeaderValue, StatusCode, header},
    response::{Html, IntoResponse, Response},
};
use serde::Deserialize;

use crate::{
    control::classroom::{Handout, HandoutRefusal},
    server::{
        AppState,
        routes::interaction::{escape, guard},
    },
};

/// The pages' one style sheet (allowed by its hash, nothing else).
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;\
line-height:1.5}input{font-size:1.2rem;padding:.4rem;text-transform:uppercase;letter-spacing:.1em}\
button{font-size:1rem;padding:.4rem 1rem;margin:.25rem .5rem .25rem 0}pre{background:#f4f4f4;padding:1rem;\
overflow-x:auto}.notice{padding:.75rem 1rem;border-left:4px solid #b00;background:#fbeaea}\
form.file{display:inline}";

/// What the forms post.
#[derive(Debug, Deserialize)]
pub struct CodeForm {
    code: String,
    #[serde(default)]
    file: Option<String>,
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head>\
         <body><h1>{t}</h1>{body}</body></html>",
        t = escape(title)
    );
    guard((status, Html(html)).into_response(), STYLE)
}

fn ask(notice: Option<&str>) -> String {
    let notice = notice
        .map(|n| format!("<p class=\"notice\" role=\"alert\">{}</p>", escape(n)))
        .unwrap_or_default();
    format!(
        "{notice}<form method=\"post\" action=\"/workshop/handout\"><p><label for=\"code\">Type the handout code \
         printed on your seat's card:</label></p><input id=\"code\" name=\"code\" autocomplete=\"off\" \
         autocapitalize=\"characters\" spellcheck=\"false\" required autofocus> <button type=\"submit\">Open my \
         handout</button></form>"
    )
}

/// `GET /workshop/handout`: the form asking for the code.
pub async fn form() -> Response {
    page(StatusCode::OK, "Your workshop handout", &ask(None))
}

fn peer(info: Option<Extension<ConnectInfo<SocketAddr>>>) -> IpAddr {
    info.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(ConnectInfo(a))| a.ip())
}

fn refused(r: HandoutRefusal) -> Response {
    let status = match r {
        HandoutRefusal::NoClass => StatusCode::NOT_FOUND,
        HandoutRefusal::WrongCode => StatusCode::UNAUTHORIZED,
        HandoutRefusal::TooMany => StatusCode::TOO_MANY_REQUESTS,
    };
    let words = match r {
        HandoutRefusal::WrongCode => "That code opens no handout. Check it against your card and try again.",
        HandoutRefusal::TooMany => "Too many wrong codes from this computer. Wait ten minutes, or ask the instructor.",
        HandoutRefusal::NoClass => "No class is seated here.",
    };
    page(status, "Your workshop handout", &ask(Some(words)))
}

/// A download button: a form posting the code and the file's name.
fn button(code: &str, file: &str, label: &str) -> String {
    format!(
        "<form class=\"file\" method=\"post\" action=\"/workshop/handout/file\">\
         <input type=\"hidden\" name=\"code\" value=\"{}\"><input type=\"hidden\" name=\"file\" value=\"{}\">\
         <button type=\"submit\">{}</button></form>",
        escape(code),
        escape(file),
        escape(label)
    )
}

fn shown(h: &Handout, code: &str) -> Response {
    let mut body = format!(
        "<p>This is <strong>{}</strong>'s handout. Download everything as one zip, or each file:</p><p>{}",
        escape(&h.seat),
        button(code, "zip", &format!("{}.zip (all files)", h.seat))
    );
    for (name, _) in &h.files {
        body.push_str(&button(code, name, name));
    }
    body.push_str(&format!(
        "</p><p>Unzip it into a folder of its own: <code>.env</code> names <code>private.key</code> by a path \
         relative to that folder.</p><h2>Your card</h2><pre>{}</pre>",
        escape(&h.card)
    ));
    page(StatusCode::OK, &format!("Handout of {}", h.seat), &body)
}

/// `POST /workshop/handout`: the code opens the seat's handout page.
pub async fn open(
    State(state): State<AppState>,
    info: Option<Extension<ConnectInfo<SocketAddr>>>,
    Form(form): Form<CodeForm>,
) -> Response {
    match state.room.handout(&form.code, peer(info)) {
        Ok(h) => shown(&h, &form.code),
        Err(r) => refused(r),
    }
}

/// `POST /workshop/handout/file`: one file of the handout, or `zip` for all of them.
pub async fn file(
    State(state): State<AppState>,
    info: Option<Extension<ConnectInfo<SocketAddr>>>,
    Form(form): Form<CodeForm>,
) -> Response {
    let h = match state.room.handout(&form.code, peer(info)) {
        Ok(h) => h,
        Err(r) => return refused(r),
    };
    let (name, bytes, kind) = match form.file.as_deref() {
        Some("zip") => (format!("{}.zip", h.seat), zip(&h.seat, &h.files), "application/zip"),
        Some(f) => match h.files.iter().find(|(n, _)| n == f) {
            Some((n, b)) => (n.clone(), b.clone(), "application/octet-stream"),
            None => {
                return page(
                    StatusCode::NOT_FOUND,
                    "No such file",
                    "<p>The handout has no such file.</p>",
                );
            }
        },
        None => return page(StatusCode::BAD_REQUEST, "Which file?", "<p>Name a file.</p>"),
    };
    let mut res = (StatusCode::OK, bytes).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    // the names are the workshop's own (`seat07.zip`, `.env`, …): no quoting is needed
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    guard(res, STYLE)
}

/// CRC-32 (IEEE), as zip entries carry it.
fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// `files` stored (not compressed) in a zip under the folder `folder/`, each readable by its owner only.
pub fn zip(folder: &str, files: &[(String, Vec<u8>)]) -> Vec<u8> {
    // 1980-01-01 00:00, the zip format's first day
    const DATE: u16 = (1 << 5) | 1;
    let le16 = |out: &mut Vec<u8>, v: u16| out.extend_from_slice(&v.to_le_bytes());
    let le32 = |out: &mut Vec<u8>, v: u32| out.extend_from_slice(&v.to_le_bytes());
    let mut out = Vec::new();
    let mut central = Vec::new();
    let mut count = 0u16;
    for (name, data) in files {
        let name = format!("{folder}/{name}");
        let (Ok(len), Ok(name_len), Ok(offset)) = (
            u32::try_from(data.len()),
            u16::try_from(name.len()),
            u32::try_from(out.len()),
        ) else {
            continue;
        };
        let crc = crc32(data);
        le32(&mut out, 0x0403_4b50);
        for v in [20, 0, 0, 0, DATE] {
            le16(&mut out, v);
        }
        for v in [crc, len, len] {
            le32(&mut out, v);
        }
        le16(&mut out, name_len);
        le16(&mut out, 0);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        le32(&mut central, 0x0201_4b50);
        // made by Unix (3), spec 2.0; needs 2.0; no flags; stored
        for v in [0x0314, 20, 0, 0, 0, DATE] {
            le16(&mut central, v);
        }
        for v in [crc, len, len] {
            le32(&mut central, v);
        }
        for v in [name_len, 0, 0, 0, 0] {
            le16(&mut central, v);
        }
        le32(&mut central, 0o100_600 << 16);
        le32(&mut central, offset);
        central.extend_from_slice(name.as_bytes());
        count = count.saturating_add(1);
    }
    let (Ok(at), Ok(size)) = (u32::try_from(out.len()), u32::try_from(central.len())) else {
        return Vec::new();
    };
    out.extend_from_slice(&central);
    le32(&mut out, 0x0605_4b50);
    for v in [0, 0, count, count] {
        le16(&mut out, v);
    }
    le32(&mut out, size);
    le32(&mut out, at);
    le16(&mut out, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_the_ieee_one() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn a_zip_lists_its_files_under_the_folder() {
        let z = zip(
            "seat07",
            &[(".env".into(), b"A=1\n".to_vec()), ("card.txt".into(), b"hi".to_vec())],
        );
        assert_eq!(&z[..4], b"PK\x03\x04");
        let end = z.len() - 22;
        assert_eq!(&z[end..end + 4], b"PK\x05\x06");
        assert_eq!(u16::from_le_bytes([z[end + 10], z[end + 11]]), 2);
        assert!(z.windows(11).any(|w| w == b"seat07/.env"));
    }
}
