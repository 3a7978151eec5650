//! A one-line text editor for the console's prompts: the text, a cursor by character, and the editing
//! operations of a shell line (move by character and word, Home/End, Ctrl-W/U/K, Delete, pasted text made
//! one clean line). It owns no drawing and knows nothing of what the text is for.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The longest text a prompt takes (in characters).
pub const MAX_CHARS: usize = 200;

/// A line being edited; `cursor` counts characters from the start (0..=len).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineEdit {
    text: String,
    cursor: usize,
}

impl LineEdit {
    /// `text` (cleaned to one line) with the cursor at its end.
    pub fn new(text: &str) -> Self {
        let mut e = Self::default();
        e.insert_str(text);
        e
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, in characters from the start.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    fn len(&self) -> usize {
        self.text.chars().count()
    }

    /// The byte offset of character `i`.
    fn byte(&self, i: usize) -> usize {
        self.text.char_indices().nth(i).map_or(self.text.len(), |(b, _)| b)
    }

    /// Replaces the whole text (cursor at the end).
    pub fn set(&mut self, text: &str) {
        *self = Self::new(text);
    }

    /// Inserts `s` at the cursor: line breaks and tabs become spaces, other control characters are dropped,
    /// and the line stops growing at [`MAX_CHARS`].
    pub fn insert_str(&mut self, s: &str) {
        for c in s.chars() {
            let c = match c {
                '\r' | '\n' | '\t' => ' ',
                c if c.is_control() => continue,
                c => c,
            };
            if self.len() >= MAX_CHARS {
                break;
            }
            let at = self.byte(self.cursor);
            self.text.insert(at, c);
            self.cursor += 1;
        }
    }

    pub fn left(&mut self) {
        self.cursor = self.cursor.saturating_sub(1);
    }

    pub fn right(&mut self) {
        self.cursor = (self.cursor + 1).min(self.len());
    }

    pub fn home(&mut self) {
        self.cursor = 0;
    }

    pub fn end(&mut self) {
        self.cursor = self.len();
    }

    /// Where the word before the cursor starts (spaces before the cursor are skipped first).
    fn word_start(&self) -> usize {
        let chars: Vec<char> = self.text.chars().collect();
        let mut i = self.cursor;
        while i > 0 && chars[i - 1].is_whitespace() {
            i -= 1;
        }
        while i > 0 && !chars[i - 1].is_whitespace() {
            i -= 1;
        }
        i
    }

    /// Where the word after the cursor ends.
    fn word_end(&self) -> usize {
        let chars: Vec<char> = self.text.chars().collect();
        let mut i = self.cursor;
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        while i < chars.len() && !chars[i].is_whitespace() {
            i += 1;
        }
        i
    }

    pub fn word_left(&mut self) {
        self.cursor = self.word_start();
    }

    pub fn word_right(&mut self) {
        self.cursor = self.word_end();
    }

    /// Removes characters `from..to` (character positions) and puts the cursor at `from`.
    fn remove(&mut self, from: usize, to: usize) {
        let (a, b) = (self.byte(from), self.byte(to));
        self.text.replace_range(a..b, "");
        self.cursor = from;
    }

    pub fn backspace(&mut self) {
        if self.cursor > 0 {
            self.remove(self.cursor - 1, self.cursor);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.len() {
            self.remove(self.cursor, self.cursor + 1);
        }
    }

    /// Ctrl-W: deletes the word before the cursor.
    pub fn delete_word(&mut self) {
        self.remove(self.word_start(), self.cursor);
    }

    /// Ctrl-U: deletes from the start to the cursor.
    pub fn kill_to_start(&mut self) {
        self.remove(0, self.cursor);
    }

    /// Ctrl-K: deletes from the cursor to the end.
    pub fn kill_to_end(&mut self) {
        let end = self.len();
        let at = self.cursor;
        self.remove(at, end);
    }

    /// Applies an editing key; false when the key is not an editing key (Enter, Esc, Tab, ↑ … are the
    /// prompt's).
    pub fn on_key(&mut self, k: &KeyEvent) -> bool {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        match k.code {
            KeyCode::Left if ctrl || alt => self.word_left(),
            KeyCode::Right if ctrl || alt => self.word_right(),
            KeyCode::Left => self.left(),
            KeyCode::Right => self.right(),
            KeyCode::Home => self.home(),
            KeyCode::End => self.end(),
            KeyCode::Backspace if ctrl || alt => self.delete_word(),
            KeyCode::Backspace => self.backspace(),
            KeyCode::Delete => self.delete(),
            KeyCode::Char(c) if ctrl => match c {
                'a' => self.home(),
                'e' => self.end(),
                'b' => self.left(),
                'f' => self.right(),
                'w' => self.delete_word(),
                'h' => self.backspace(),
                'u' => self.kill_to_start(),
                'k' => self.kill_to_end(),
                'd' => self.delete(),
                _ => return false,
            },
            KeyCode::Char(c) if alt => match c {
                'b' => self.word_left(),
                'f' => self.word_right(),
                'd' => {
                    let (from, to) = (self.cursor, self.word_end());
                    self.remove(from, to);
                }
                _ => return false,
            },
            KeyCode::Char(c) => self.insert_str(c.encode_utf8(&mut [0; 4])),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, cursor: usize) -> LineEdit {
        let mut e = LineEdit::new(text);
        e.cursor = cursor;
        e
    }

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn typing_inserts_at_the_cursor_and_moves_it() {
        let mut e = at("outgoing", 0);
        e.insert_str(":");
        assert_eq!((e.text(), e.cursor()), (":outgoing", 1));
        e.end();
        e.insert_str(" failed");
        assert_eq!((e.text(), e.cursor()), (":outgoing failed", 16));
        e.home();
        e.delete();
        assert_eq!((e.text(), e.cursor()), ("outgoing failed", 0));
    }

    #[test]
    fn cursor_moves_by_character_not_byte() {
        let mut e = LineEdit::new("zürich€");
        assert_eq!(e.cursor(), 7);
        e.left();
        e.left();
        e.backspace();
        assert_eq!((e.text(), e.cursor()), ("zürih€", 4), "the c before the cursor went");
        e.right();
        e.right();
        e.right();
        assert_eq!(e.cursor(), 6, "stops at the end");
        e.home();
        e.left();
        assert_eq!(e.cursor(), 0, "stops at the start");
        e.backspace();
        assert_eq!(e.text(), "zürih€");
    }

    #[test]
    fn ctrl_w_deletes_the_word_before_the_cursor_and_its_trailing_spaces() {
        let mut e = LineEdit::new("outgoing failed  ");
        e.delete_word();
        assert_eq!((e.text(), e.cursor()), ("outgoing ", 9));
        let mut e = at("webhooks dead now", 13);
        e.delete_word();
        assert_eq!((e.text(), e.cursor()), ("webhooks  now", 9));
        let mut e = at("x", 0);
        e.delete_word();
        assert_eq!(e.text(), "x", "nothing before the cursor: nothing deleted");
    }

    #[test]
    fn ctrl_u_and_ctrl_k_kill_to_either_end() {
        let mut e = at("alice USD 2", 6);
        e.kill_to_end();
        assert_eq!((e.text(), e.cursor()), ("alice ", 6));
        let mut e = at("alice USD 2", 6);
        e.kill_to_start();
        assert_eq!((e.text(), e.cursor()), ("USD 2", 0));
    }

    #[test]
    fn word_moves_skip_spaces() {
        let mut e = at("desk  happy-life now", 20);
        e.word_left();
        assert_eq!(e.cursor(), 17);
        e.word_left();
        assert_eq!(e.cursor(), 6);
        e.word_right();
        assert_eq!(e.cursor(), 16);
    }

    #[test]
    fn pasted_text_becomes_one_clean_line_within_the_limit() {
        let mut e = at("ab", 1);
        e.insert_str("x\r\ny\tz\u{1b}[2J\u{7}");
        assert_eq!(e.text(), "ax  y z[2Jb");
        assert_eq!(e.cursor(), 10);
        let mut e = LineEdit::default();
        e.insert_str(&"9".repeat(500));
        assert_eq!(e.text().len(), MAX_CHARS);
    }

    #[test]
    fn keys_map_to_the_operations() {
        let none = KeyModifiers::NONE;
        let ctrl = KeyModifiers::CONTROL;
        let alt = KeyModifiers::ALT;
        let mut e = LineEdit::new("grants pending");
        assert!(e.on_key(&key(KeyCode::Char('a'), ctrl)));
        assert_eq!(e.cursor(), 0);
        assert!(e.on_key(&key(KeyCode::Char('f'), alt)));
        assert_eq!(e.cursor(), 6);
        assert!(e.on_key(&key(KeyCode::Char('k'), ctrl)));
        assert_eq!(e.text(), "grants");
        assert!(e.on_key(&key(KeyCode::Char('!'), none)));
        assert!(e.on_key(&key(KeyCode::Left, none)));
        assert!(e.on_key(&key(KeyCode::Delete, none)));
        assert_eq!(e.text(), "grants");
        assert!(e.on_key(&key(KeyCode::Char('e'), ctrl)));
        assert!(e.on_key(&key(KeyCode::Char('w'), ctrl)));
        assert_eq!(e.text(), "");
        for k in [KeyCode::Enter, KeyCode::Esc, KeyCode::Tab, KeyCode::Up] {
            assert!(!e.on_key(&key(k, none)), "{k:?} is the prompt's");
        }
        assert!(!e.on_key(&key(KeyCode::Char('z'), ctrl)));
    }
}
