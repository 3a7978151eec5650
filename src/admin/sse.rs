//! A small server-sent events parser (the WHATWG `text/event-stream` format) for the admin event stream:
//! bytes in, in chunks split anywhere (inside a line, a `\r\n` pair or a UTF-8 character), whole messages
//! out. Knows nothing of HTTP or of what the messages mean.

/// One dispatched message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The message's `id:` field, if it had one.
    pub id: Option<String>,
    /// The `event:` field (`message` when absent).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental parser: feed it chunks with [`Parser::push`].
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    /// The last chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    /// Past the first line (a leading byte-order mark is dropped only there).
    started: bool,
    id: Option<String>,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl Parser {
    /// Parses `chunk` and returns the messages it completes.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    fn end_line(&mut self, out: &mut Vec<Message>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {} // retry and unknown fields
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Message>) {
        let id = self.id.take();
        let event = self.event.take();
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.has_data) {
            out.push(Message {
                id,
                event: event.filter(|e| !e.is_empty()).unwrap_or_else(|| "message".into()),
                data,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "id: 42\nevent: grantApproved\ndata: {\"seq\":42,\"at\":\"t\",\"event\":{\"type\":\"grantApproved\",\"id\":\"é€\"}}\n\n: keep-alive\n\nevent: resync\ndata: {\"reason\":\"too far behind\"}\n\n";

    fn expected() -> Vec<Message> {
        vec![
            Message {
                id: Some("42".into()),
                event: "grantApproved".into(),
                data: "{\"seq\":42,\"at\":\"t\",\"event\":{\"type\":\"grantApproved\",\"id\":\"é€\"}}".into(),
            },
            Message {
                id: None,
                event: "resync".into(),
                data: "{\"reason\":\"too far behind\"}".into(),
            },
        ]
    }

    fn parse_in(chunks: &[&[u8]]) -> Vec<Message> {
        let mut p = Parser::default();
        chunks.iter().flat_map(|c| p.push(c)).collect()
    }

    #[test]
    fn whole_stream_at_once_and_byte_by_byte() {
        assert_eq!(parse_in(&[STREAM.as_bytes()]), expected());
        let bytes: Vec<&[u8]> = STREAM.as_bytes().chunks(1).collect();
        assert_eq!(parse_in(&bytes), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_messages() {
        let b = STREAM.as_bytes();
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(parse_in(&[&b[..i], &b[i..j], &b[j..]]), expected(), "split at {i}, {j}");
            }
        }
    }

    #[test]
    fn crlf_and_cr_line_ends_even_split_between_chunks() {
        let crlf = STREAM.replace('\n', "\r\n");
        let b = crlf.as_bytes();
        for i in 0..=b.len() {
            assert_eq!(parse_in(&[&b[..i], &b[i..]]), expected(), "split at {i}");
        }
        let cr = STREAM.replace('\n', "\r");
        assert_eq!(parse_in(&[cr.as_bytes()]), expected());
    }

    #[test]
    fn multi_line_data_comments_fields_without_space_and_no_data() {
        let s = "\u{feff}: hello\nretry: 10\ndata:a\ndata: b\ndata\nunknown: x\n\nevent: empty\n\nid: 7\n\ndata: last";
        let got = parse_in(&[s.as_bytes()]);
        assert_eq!(
            got,
            vec![Message {
                id: None,
                event: "message".into(),
                data: "a\nb\n".into(),
            }],
            "messages without data are not dispatched; an unterminated one waits"
        );
        let mut p = Parser::default();
        assert!(p.push(b"data: x").is_empty());
        assert!(p.push(b"\r").is_empty());
        assert_eq!(
            p.push(b"\n\n").len(),
            1,
            "the blank line after a CRLF split ends the message"
        );
    }
}
