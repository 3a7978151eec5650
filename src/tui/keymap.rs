//! The keymap: one table of bindings (keys, scope, action, description, dangerous) that drives dispatch,
//! the hint bar and the `?` help overlay — the global keys, declared here, and each pane's own, which the
//! pane declares ([`PaneKey`], `panes::keys_of`). Users override keys in `config.toml` under `[keys]`
//! (`approve = "A"`); bad entries become warnings, never crashes.

use std::collections::BTreeMap;

use ratatui::crossterm::event::KeyCode;

pub use super::key::{Binding, Key, PaneKey, Scope};
use super::{action::Action, pane::Pane, panes};

/// The keymap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    pub bindings: Vec<Binding>,
}

fn b(keys: &[Key], scope: Scope, action: Action, description: &'static str, dangerous: bool, hint: bool) -> Binding {
    Binding {
        keys: keys.to_vec(),
        scope,
        action,
        description,
        dangerous,
        hint,
    }
}

impl Default for Keymap {
    fn default() -> Self {
        use Action::*;
        use KeyCode as K;
        use Scope::Global as G;
        let mut v = vec![
            b(&[Key::ch('?')], G, Help, "show or hide this help", false, true),
            b(
                &[Key::ch(':')],
                G,
                Command,
                "command prompt (:incoming, :outgoing failed, :grants, :q …)",
                false,
                true,
            ),
            b(
                &[Key::ch('/')],
                G,
                Filter,
                "filter the current table (! inverts, Esc clears)",
                false,
                true,
            ),
            b(&[Key::plain(K::Tab)], G, NextPane, "next pane", false, false),
            b(&[Key::plain(K::BackTab)], G, PrevPane, "previous pane", false, false),
            b(&[Key::ch('j'), Key::plain(K::Down)], G, Down, "move down", false, false),
            b(&[Key::ch('k'), Key::plain(K::Up)], G, Up, "move up", false, false),
            b(
                &[Key::ch('g'), Key::plain(K::Home)],
                G,
                Top,
                "go to the top",
                false,
                false,
            ),
            b(
                &[Key::ch('G'), Key::plain(K::End)],
                G,
                Bottom,
                "go to the bottom",
                false,
                false,
            ),
            b(&[Key::plain(K::PageUp)], G, PageUp, "page up", false, false),
            b(&[Key::plain(K::PageDown)], G, PageDown, "page down", false, false),
            b(&[Key::ctrl('u')], G, HalfPageUp, "half a page up", false, false),
            b(&[Key::ctrl('d')], G, HalfPageDown, "half a page down", false, false),
            b(&[Key::plain(K::Enter)], G, Open, "open the detail view", false, true),
            b(
                &[Key::plain(K::Esc)],
                G,
                Back,
                "back one step (closes dialogs, details, filters)",
                false,
                false,
            ),
            b(
                &[Key::ch('f')],
                G,
                Freeze,
                "freeze or resume live updates (events are still counted)",
                false,
                true,
            ),
            b(&[Key::ch('r')], G, Resync, "resync from the store", false, false),
            b(&[Key::ch('y')], G, RawJson, "raw JSON of the selection", false, false),
            b(&[Key::ch('q'), Key::ctrl('c')], G, Quit, "quit", false, true),
            b(
                &[Key::ctrl('z')],
                G,
                Suspend,
                "suspend an attached console to the shell (fg comes back)",
                false,
                false,
            ),
            b(
                &[Key::ch('D')],
                G,
                Demo,
                "run the demo scenario against the server",
                false,
                false,
            ),
        ];
        for (p, digit) in Pane::ALL.iter().filter_map(|p| Some((p, p.digit()?))) {
            v.push(Binding {
                keys: vec![Key::ch(digit)],
                scope: G,
                action: Goto(*p),
                description: match p {
                    Pane::Overview => "go to Overview",
                    Pane::Wallets => "go to Wallets",
                    Pane::Incoming => "go to Incoming",
                    Pane::Grants => "go to Grants",
                    Pane::Outgoing => "go to Outgoing",
                    Pane::Quotes => "go to Quotes",
                    Pane::Requests => "go to Requests",
                    Pane::Log => "go to Log",
                    Pane::Webhooks => "go to Webhooks",
                    Pane::Peers => "go to Peers (liquidity, credit, settlements, traffic)",
                    Pane::Classroom => "go to Classroom",
                },
                dangerous: false,
                hint: false,
            });
        }
        // a console over several desks (`opdesk workshop`): the next one; `:desk NAME` picks one
        v.push(b(
            &[Key::plain(K::F(2))],
            G,
            NextDesk,
            "switch to the next desk (opdesk workshop; :desk NAME picks one)",
            false,
            false,
        ));
        // each pane's own keys, as the pane declares them
        for pane in Pane::EVERY {
            v.extend(panes::keys_of(pane).iter().map(|k| Binding {
                keys: k.keys.to_vec(),
                scope: Scope::Pane(pane),
                action: k.action,
                description: k.description,
                dangerous: k.dangerous,
                hint: k.hint,
            }));
        }
        Self { bindings: v }
    }
}

impl Keymap {
    /// The default keymap with `overrides` (action name → key) applied; returns warnings for bad entries.
    pub fn with_overrides(overrides: &BTreeMap<String, String>) -> (Self, Vec<String>) {
        let mut map = Self::default();
        let mut warnings = Vec::new();
        for (name, key) in overrides {
            let Some(action) = Action::from_name(name) else {
                warnings.push(format!("[keys] {name:?} is not an action; ignored"));
                continue;
            };
            let Some(k) = Key::parse(key) else {
                warnings.push(format!("[keys] {name} = {key:?} is not a key; ignored"));
                continue;
            };
            match map.bindings.iter_mut().find(|b| b.action == action) {
                Some(b) => b.keys = vec![k],
                None => warnings.push(format!("[keys] {name} cannot be rebound")),
            }
        }
        (map, warnings)
    }

    /// The action for `key` in `pane`: pane bindings first, then global ones. Dangerous actions are
    /// unavailable when `readonly`.
    pub fn lookup(&self, key: Key, pane: Pane, readonly: bool) -> Option<Action> {
        let find = |scope: Scope| {
            self.bindings
                .iter()
                .find(|b| b.scope == scope && b.keys.contains(&key) && !(readonly && b.dangerous))
        };
        find(Scope::Pane(pane))
            .or_else(|| find(Scope::Global))
            .map(|b| b.action)
    }

    pub fn is_dangerous(&self, action: Action) -> bool {
        self.bindings.iter().any(|b| b.action == action && b.dangerous)
    }

    /// Hint bar entries for `pane`: its own bindings, then the global hints.
    pub fn hints(&self, pane: Pane, readonly: bool) -> Vec<(String, &'static str, bool)> {
        let mut out: Vec<_> = self
            .bindings
            .iter()
            .filter(|b| b.hint && b.scope == Scope::Pane(pane) && !(readonly && b.dangerous))
            .map(|b| (b.keys[0].label(), short(b.description), b.dangerous))
            .collect();
        out.extend(
            self.bindings
                .iter()
                .filter(|b| b.hint && b.scope == Scope::Global)
                .map(|b| (b.keys[0].label(), short(b.description), false)),
        );
        out
    }
}

/// The first words of a description, for the hint bar.
fn short(d: &'static str) -> &'static str {
    match d
        .find([' ', '('])
        .map(|i| d[i..].find(" the ").map_or(d.len(), |j| i + j))
    {
        Some(end) if end < d.len() => &d[..end],
        _ => d.split(" (").next().unwrap_or(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_label() {
        assert_eq!(Key::parse("ctrl-u"), Some(Key::ctrl('u')));
        assert_eq!(Key::parse("A"), Some(Key::ch('A')));
        assert_eq!(Key::parse("f5"), Some(Key::plain(KeyCode::F(5))));
        assert_eq!(Key::parse("bogus"), None);
        assert_eq!(Key::parse("f13"), None);
        assert_eq!(Key::ctrl('c').label(), "C-c");
    }

    #[test]
    fn overrides_and_warnings() {
        let o = BTreeMap::from([
            ("approve".to_owned(), "A".to_owned()),
            ("nonsense".to_owned(), "z".to_owned()),
            ("quit".to_owned(), "not-a-key".to_owned()),
        ]);
        let (map, warnings) = Keymap::with_overrides(&o);
        assert_eq!(map.lookup(Key::ch('A'), Pane::Grants, false), Some(Action::Approve));
        assert_eq!(map.lookup(Key::ch('a'), Pane::Grants, false), None);
        assert_eq!(warnings.len(), 2);
    }

    #[test]
    fn dangerous_actions_vanish_when_readonly() {
        let map = Keymap::default();
        assert_eq!(map.lookup(Key::ch('a'), Pane::Grants, false), Some(Action::Approve));
        assert_eq!(map.lookup(Key::ch('a'), Pane::Grants, true), None);
        assert!(map.hints(Pane::Grants, true).iter().all(|h| !h.2));
    }

    #[test]
    fn every_action_has_a_name_that_round_trips() {
        for b in Keymap::default().bindings {
            assert_eq!(Action::from_name(&b.action.name()), Some(b.action), "{:?}", b.action);
            assert!(!b.description.is_empty());
        }
    }
}
