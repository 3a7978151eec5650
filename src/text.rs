//! Text from clients and peers made safe for a person's terminal: control characters (C0, DEL, C1) and bidi
//! overrides cannot reach a screen. Displays strip them ([`sanitize`], [`sanitize_lines`]: the console, the
//! interaction page descriptions and the CLI's tables and details); logs escape them ([`escape_controls`],
//! applied to every log field by `logging`) so the record keeps what was sent.

use std::borrow::Cow;

/// Bidi embeddings, overrides and isolates: they reorder what the reader sees.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Removes control characters (ANSI escapes, BEL, C1 such as U+009B, newlines) and bidi controls.
pub fn sanitize(s: &str) -> String {
    s.chars().filter(|c| !is_unsafe(*c)).collect()
}

/// [`sanitize`] for multi-line text: every line is sanitised, the `\n` between lines stay.
pub fn sanitize_lines(s: &str) -> String {
    s.split('\n').map(sanitize).collect::<Vec<_>>().join("\n")
}

/// Escapes control characters and bidi controls as `\n`, `\u{1b}`, … (the text is unchanged when it has none).
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' | '\r' | '\t' => out.extend(c.escape_default()),
            c if is_unsafe(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "a\u{1b}[31mb\u{7}c\u{9b}2Jd\u{7f}e\r\tf\u{202e}g";

    #[test]
    fn sanitize_strips_every_control() {
        assert_eq!(sanitize(HOSTILE), "a[31mbc2Jdefg");
        assert_eq!(sanitize("plain – ünïcode ✓"), "plain – ünïcode ✓");
        assert_eq!(sanitize_lines("x\u{1b}\ny\u{7}\n"), "x\ny\n");
    }

    #[test]
    fn escape_keeps_the_text_visible() {
        assert_eq!(
            escape_controls(HOSTILE),
            "a\\u{1b}[31mb\\u{7}c\\u{9b}2Jd\\u{7f}e\\r\\tf\\u{202e}g"
        );
        assert!(matches!(escape_controls("clean"), Cow::Borrowed("clean")));
        assert_eq!(escape_controls("two\nlines"), "two\\nlines");
    }
}
