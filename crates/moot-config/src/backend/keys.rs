//! The keys backends read, as an agent's table in a file holds them: each [`Key`] is of a
//! [`Kind`], which says how its value is read (by the file's own reader, so that its errors and
//! its typing are the format's, as for any other key) and when it counts as set. An agent's
//! backend keys are held in [`Keys`] until its backend reads them.

use std::fmt;
use std::path::{Path, PathBuf};

use moot_backends::sim::SimAgent;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// One key of a backend's agents.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
    /// Whether no other backend could ever read it, so that an agent of another backend that
    /// sets it is told whose key it is (`dialect`: only `openai` speaks to servers of several
    /// dialects).
    pub owned: bool,
}

impl Key {
    pub const fn new(name: &'static str, kind: Kind) -> Key {
        Key {
            name,
            kind,
            owned: false,
        }
    }

    /// A key only this backend reads (see [`Key::owned`]).
    pub const fn owned(name: &'static str, kind: Kind) -> Key {
        Key {
            name,
            kind,
            owned: true,
        }
    }
}

/// What a key's value is. A key of a new kind of value is a new variant here, with its reading
/// in `read_value` and its example.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A string (`null`: unset).
    Text,
    /// A string that `check` accepts, held as the spelling `check` gives it, and refused
    /// otherwise with its message as the file's reader reports any bad value (`dialect`);
    /// `example` is one it accepts.
    Choice {
        check: fn(&str) -> Result<String, String>,
        example: &'static str,
    },
    /// A list of strings; an empty one is unset.
    Texts,
    /// `true` or `false`; `false` is unset (configurations stored by moot once wrote it for
    /// every agent).
    Flag,
    /// `true` or `false`, set either way (`null`: unset).
    Switch,
    /// A path (`null`: unset).
    Path,
    /// A simulated agent's table ([`SimAgent`]; `null`: unset).
    Sim,
}

impl Kind {
    /// A TOML value of this kind that sets the key.
    pub fn example(&self) -> String {
        match self {
            Kind::Text => "\"x\"".into(),
            Kind::Choice { example, .. } => format!("{example:?}"),
            Kind::Texts => "[\"x\"]".into(),
            Kind::Flag => "true".into(),
            Kind::Switch => "false".into(),
            Kind::Path => "\"/tmp\"".into(),
            Kind::Sim => "{ accuracy = 0.5 }".into(),
        }
    }
}

/// A set key's value.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue {
    Text(String),
    Texts(Vec<String>),
    Bool(bool),
    Path(PathBuf),
    Sim(SimAgent),
}

impl Serialize for KeyValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            KeyValue::Text(v) => v.serialize(s),
            KeyValue::Texts(v) => v.serialize(s),
            KeyValue::Bool(v) => v.serialize(s),
            KeyValue::Path(v) => v.serialize(s),
            KeyValue::Sim(v) => v.serialize(s),
        }
    }
}

/// The backend keys an agent sets (unset ones are left out), in the order they were read or
/// written; two agents' keys are equal whatever their order.
#[derive(Debug, Clone, Default)]
pub struct Keys(Vec<(&'static str, KeyValue)>);

impl PartialEq for Keys {
    fn eq(&self, other: &Keys) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .all(|(name, value)| other.get(name) == Some(value))
    }
}

impl Keys {
    fn get(&self, name: &str) -> Option<&KeyValue> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// These keys with every text in them (texts, lists, paths) passed through `f`.
    pub fn map_texts(&self, f: &dyn Fn(&str) -> String) -> Keys {
        let map = |value: &KeyValue| match value {
            KeyValue::Text(t) => KeyValue::Text(f(t)),
            KeyValue::Texts(ts) => KeyValue::Texts(ts.iter().map(|t| f(t)).collect()),
            KeyValue::Path(p) => KeyValue::Path(f(&p.to_string_lossy()).into()),
            other => other.clone(),
        };
        Keys(self.0.iter().map(|(n, v)| (*n, map(v))).collect())
    }

    /// The first key set in either whose value is not the other's (unset in one counts).
    pub fn differing_key(&self, other: &Keys) -> Option<&'static str> {
        self.names()
            .chain(other.names())
            .find(|name| self.get(name) != other.get(name))
    }

    /// The names of the keys set, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(n, _)| *n)
    }

    /// The keys set and their values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &KeyValue)> {
        self.0.iter().map(|(n, v)| (*n, v))
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        match self.get(name) {
            Some(KeyValue::Text(v)) => Some(v),
            _ => None,
        }
    }

    /// A list's values; none when unset.
    pub fn texts(&self, name: &str) -> &[String] {
        match self.get(name) {
            Some(KeyValue::Texts(v)) => v,
            _ => &[],
        }
    }

    /// A [`Kind::Flag`]: whether it is set (true).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some(KeyValue::Bool(true)))
    }

    /// A [`Kind::Switch`]: its value when set.
    pub fn switch(&self, name: &str) -> Option<bool> {
        match self.get(name) {
            Some(KeyValue::Bool(v)) => Some(*v),
            _ => None,
        }
    }

    pub fn path(&self, name: &str) -> Option<&Path> {
        match self.get(name) {
            Some(KeyValue::Path(v)) => Some(v),
            _ => None,
        }
    }

    pub fn sim(&self, name: &str) -> Option<&SimAgent> {
        match self.get(name) {
            Some(KeyValue::Sim(v)) => Some(v),
            _ => None,
        }
    }

    /// Sets `name` to `value` (replacing any value it had).
    pub fn set(&mut self, name: &'static str, value: KeyValue) {
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, value));
    }

    /// Sets a text when there is one.
    pub fn set_text(&mut self, name: &'static str, value: Option<String>) {
        if let Some(v) = value {
            self.set(name, KeyValue::Text(v));
        }
    }

    /// Sets a list when it is not empty.
    pub fn set_texts(&mut self, name: &'static str, value: Vec<String>) {
        if !value.is_empty() {
            self.set(name, KeyValue::Texts(value));
        }
    }

    /// Sets a [`Kind::Flag`] when it is true.
    pub fn set_flag(&mut self, name: &'static str, value: bool) {
        if value {
            self.set(name, KeyValue::Bool(true));
        }
    }

    /// Sets a [`Kind::Switch`] when there is a value.
    pub fn set_switch(&mut self, name: &'static str, value: Option<bool>) {
        if let Some(v) = value {
            self.set(name, KeyValue::Bool(v));
        }
    }

    pub fn set_path(&mut self, name: &'static str, value: Option<PathBuf>) {
        if let Some(v) = value {
            self.set(name, KeyValue::Path(v));
        }
    }

    pub fn set_sim(&mut self, name: &'static str, value: Option<SimAgent>) {
        if let Some(v) = value {
            self.set(name, KeyValue::Sim(v));
        }
    }

    /// Puts the keys in the order of `order` (a backend's keys; others last), as they are
    /// written.
    pub(crate) fn order_as(&mut self, order: &[Key]) {
        let rank = |name: &str| {
            order
                .iter()
                .position(|k| k.name == name)
                .unwrap_or(usize::MAX)
        };
        self.0.sort_by_key(|(n, _)| rank(n));
    }
}

/// Reads the value of a key of `kind` from `map`, typed as the file's reader types it; `None`
/// when it is unset.
pub(crate) fn read_value<'de, A: MapAccess<'de>>(
    kind: Kind,
    map: &mut A,
) -> Result<Option<KeyValue>, A::Error> {
    Ok(match kind {
        Kind::Text => map.next_value::<Option<String>>()?.map(KeyValue::Text),
        Kind::Choice { check, .. } => map.next_value_seed(Checked(check))?.map(KeyValue::Text),
        Kind::Texts => {
            let v = map.next_value::<Vec<String>>()?;
            (!v.is_empty()).then_some(KeyValue::Texts(v))
        }
        Kind::Flag => map.next_value::<bool>()?.then_some(KeyValue::Bool(true)),
        Kind::Switch => map.next_value::<Option<bool>>()?.map(KeyValue::Bool),
        Kind::Path => map.next_value::<Option<PathBuf>>()?.map(KeyValue::Path),
        Kind::Sim => map.next_value::<Option<SimAgent>>()?.map(KeyValue::Sim),
    })
}

/// An optional string that `0` accepts, as `0` spells it: refused where it is read, as a type's
/// own conversion from a string refuses one (serde's `try_from`), so the reader's message
/// places it.
struct Checked(fn(&str) -> Result<String, String>);

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        let text = String::deserialize(d)?;
        (self.0)(&text).map(Some).map_err(serde::de::Error::custom)
    }
}
