//! A raw HTTP/1.1 request as a developer saved it from a client (request line, headers, a blank line, the
//! body), parsed for the signature debugger (`opdesk sig explain FILE`).

use http::{HeaderMap, HeaderName, HeaderValue, Method};

/// A raw HTTP/1.1 request: request line, headers, a blank line, the body (CRLF or LF line ends).
#[derive(Debug)]
pub struct RawRequest {
    pub method: Method,
    pub target_uri: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// Parses `raw`; an origin-form target gets `scheme://` plus the `Host` header.
pub fn parse(raw: &[u8], scheme: &str) -> Result<RawRequest, String> {
    let (head, body) = split_head(raw).ok_or("no blank line after the headers")?;
    let head = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(format!("not a request line: {request_line:?}"));
    };
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| format!("not a method: {method:?}"))?;
    let mut headers = HeaderMap::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("not a header line: {line:?}"));
        };
        let name =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("not a header name: {name:?}"))?;
        let value = HeaderValue::from_str(value.trim_matches([' ', '\t']))
            .map_err(|_| format!("header {name} has a value that cannot be sent"))?;
        headers.append(name, value);
    }
    let target_uri = if target.starts_with("http://") || target.starts_with("https://") {
        target.to_owned()
    } else {
        let host = headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or("an origin-form target (/path) needs a Host header")?;
        format!("{scheme}://{host}{target}")
    };
    Ok(RawRequest {
        method,
        target_uri,
        headers,
        body: body.to_vec(),
    })
}

fn split_head(raw: &[u8]) -> Option<(&[u8], &[u8])> {
    let crlf = raw.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    let lf = raw.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let (i, n) = match (crlf, lf) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (a, b) => a.or(b)?,
    };
    Some((&raw[..i], &raw[i + n..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_requests_parse_with_crlf_or_lf() {
        let crlf = b"POST /foo?a=1 HTTP/1.1\r\nHost: example.com\r\nX-A:  b \r\n\r\nbody\r\n";
        let r = parse(crlf, "https").expect("crlf");
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.target_uri, "https://example.com/foo?a=1");
        assert_eq!(r.headers["x-a"], "b");
        assert_eq!(r.body, b"body\r\n");
        let lf = b"GET http://h:8080/x HTTP/1.1\nHost: other\n\n";
        let r = parse(lf, "https").expect("lf");
        assert_eq!(r.target_uri, "http://h:8080/x");
        assert!(r.body.is_empty());
        assert!(parse(b"GET /x HTTP/1.1\n\n", "https").is_err());
        assert!(parse(b"GET /x HTTP/1.1\nHost: h\n", "https").is_err());
        assert!(parse(b"GET /x HTTP/1.1\nbad line\n\n", "https").is_err());
    }
}
