//! A pane's list: its loaded page of rows, the cursor, the `/` filter and where the store continues
//! ([`Table`]), and the same seen through [`List`] by the chrome, which moves the cursor, sets filters and
//! pages without knowing the row type.

use serde::Serialize;

use crate::{
    control::dto::PaymentFilter,
    tui::{pane::Pane, widgets::table::TableView},
};

/// Rows a pane loads at a time.
pub const PAGE: u32 = 200;

/// The filter of a page of payments or quotes: after `cursor`, matching `q`, without credentials (no list
/// shows them, and generating them was most of a page's cost).
pub fn page_of(cursor: Option<String>, q: Option<String>) -> PaymentFilter {
    PaymentFilter {
        wallet: None,
        state: None,
        cursor,
        first: Some(PAGE),
        q,
        methods: Some(false),
    }
}

/// A text filter on a pane (`/`), optionally inverted (`!`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    pub text: String,
    pub invert: bool,
}

impl Filter {
    pub fn parse(s: &str) -> Option<Self> {
        let (invert, text) = match s.strip_prefix('!') {
            Some(t) => (true, t),
            None => (false, s),
        };
        (!text.is_empty()).then(|| Self {
            text: text.to_lowercase(),
            invert,
        })
    }

    pub fn keeps(&self, haystack: &str) -> bool {
        haystack.to_lowercase().contains(&self.text) != self.invert
    }

    /// As typed: `!text` when inverted.
    pub fn typed(&self) -> String {
        format!("{}{}", if self.invert { "!" } else { "" }, self.text)
    }
}

/// A row a pane lists: the text a `/` filter matches, and what keeps the cursor on it across reloads.
pub trait Row: Serialize {
    fn haystack(&self) -> String;
    fn key(&self) -> String;
}

/// A page of rows, the cursor (a position among the rows the filter keeps) and where the store continues.
#[derive(Debug, Clone, PartialEq)]
pub struct Table<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
    pub selected: usize,
    pub loading: bool,
    pub loaded: bool,
    pub filter: Option<Filter>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            next_cursor: None,
            selected: 0,
            loading: false,
            loaded: false,
            filter: None,
        }
    }
}

impl<T: Row> Table<T> {
    /// A list fed by the console itself (requests, log lines): loaded from the start.
    pub fn live() -> Self {
        Self {
            loaded: true,
            ..Self::default()
        }
    }

    /// Indices of the rows the filter keeps.
    pub fn visible(&self) -> Vec<usize> {
        match &self.filter {
            None => (0..self.items.len()).collect(),
            Some(f) => (0..self.items.len())
                .filter(|&i| f.keeps(&self.items[i].haystack()))
                .collect(),
        }
    }

    /// The row under the cursor.
    pub fn selection(&self) -> Option<&T> {
        match &self.filter {
            None => self.items.get(self.selected),
            Some(_) => self.visible().get(self.selected).and_then(|&i| self.items.get(i)),
        }
    }

    /// A loaded page: replaces the rows (the cursor stays on its row) or, with `append`, extends them.
    pub fn set(&mut self, items: Vec<T>, next: Option<String>, append: bool) {
        let keep = self.items.get(self.selected).map(Row::key);
        if append {
            self.items.extend(items);
        } else {
            self.items = items;
            if let Some(k) = keep {
                self.selected = self.items.iter().position(|x| x.key() == k).unwrap_or(self.selected);
            }
        }
        self.selected = self.selected.min(self.items.len().saturating_sub(1));
        self.next_cursor = next;
        self.loading = false;
        self.loaded = true;
    }

    /// What the table widget shows: `pane`'s title with `tags` and the filter, whether the store has more,
    /// what it says when empty (`empty`, unless a filter hides every row), the rows kept and the cursor.
    pub fn view(&self, pane: Pane, tags: &[String], empty: &'static str) -> TableView {
        let mut title = format!(" {} ", pane.title());
        for t in tags {
            title.push_str(&format!("[{t}] "));
        }
        if let Some(f) = &self.filter {
            title.push_str(&format!("[/{}] ", f.typed()));
        }
        TableView {
            title,
            more: self.next_cursor.is_some(),
            empty: if self.filter.is_some() {
                "nothing matches the filter (Esc clears it)"
            } else {
                empty
            },
            visible: self.visible(),
            selected: self.selected,
        }
    }
}

/// A pane's list as the chrome sees it, whatever its rows.
pub trait List {
    /// Rows the filter keeps.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn selected(&self) -> usize;
    fn select(&mut self, at: usize);
    fn has_selection(&self) -> bool;
    fn next_cursor(&self) -> Option<String>;
    fn filter(&self) -> Option<&Filter>;
    fn set_filter(&mut self, f: Option<Filter>);
    fn loading(&self) -> bool;
    fn start_loading(&mut self);
    /// The selection as JSON (the `y` overlay).
    fn selection_json(&self) -> Option<serde_json::Value>;
}

impl<T: Row> List for Table<T> {
    fn len(&self) -> usize {
        match self.filter {
            None => self.items.len(),
            Some(_) => self.visible().len(),
        }
    }
    fn selected(&self) -> usize {
        self.selected
    }
    fn select(&mut self, at: usize) {
        self.selected = at;
    }
    fn has_selection(&self) -> bool {
        self.selection().is_some()
    }
    fn next_cursor(&self) -> Option<String> {
        self.next_cursor.clone()
    }
    fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }
    fn set_filter(&mut self, f: Option<Filter>) {
        self.filter = f;
        self.selected = 0;
    }
    fn loading(&self) -> bool {
        self.loading
    }
    fn start_loading(&mut self) {
        self.loading = true;
    }
    fn selection_json(&self) -> Option<serde_json::Value> {
        self.selection().and_then(|r| serde_json::to_value(r).ok())
    }
}

impl Row for String {
    fn haystack(&self) -> String {
        self.clone()
    }
    fn key(&self) -> String {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_keeps_rows_and_the_cursor_moves_among_them() {
        let mut t: Table<String> = Table::live();
        t.set(vec!["apple".into(), "banana".into(), "cherry".into()], None, false);
        t.set_filter(Filter::parse("an"));
        assert_eq!(t.visible(), vec![1]);
        assert_eq!(t.selection().map(String::as_str), Some("banana"));
        t.set_filter(Filter::parse("!an"));
        assert_eq!(List::len(&t), 2);
        t.select(1);
        assert_eq!(t.selection().map(String::as_str), Some("cherry"));
        assert_eq!(t.view(Pane::Log, &["x".into()], "none").title, " Log [x] [/!an] ");
    }

    #[test]
    fn a_reload_keeps_the_cursor_on_its_row() {
        let mut t: Table<String> = Table::default();
        t.set(vec!["b".into(), "c".into()], None, false);
        t.select(1);
        t.set(vec!["a".into(), "b".into(), "c".into()], Some("c".into()), false);
        assert_eq!(t.selection().map(String::as_str), Some("c"));
        assert_eq!(List::next_cursor(&t).as_deref(), Some("c"));
    }
}
