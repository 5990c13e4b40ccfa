//! Every backend an agent can run on. A backend is one module here and one entry in
//! [`BACKENDS`]: its [`BackendEntry`] says which keys an agent of it has ([`Key`]), how they are
//! checked and turned into its settings (`read`), and how the application runs it (retried,
//! always giving logprobs, what `moot health` checks); its settings ([`BackendSettings`]) write
//! its keys back, build its model, say what must hold before a call and what a stored agent of
//! it needs of this machine. [`entry`] says what a backend is and is given; a backend's module
//! uses it, [`keys`] and (for HTTP) [`http`], never this registry. Everything else goes
//! through the registry: reading and writing agents, the names in errors and help,
//! `moot health`, building agents (`moot_app::agents::build`), and the tests, which iterate
//! it.
//!
//! The embedded model's backend ([`local`]) builds its model with `moot-local` behind this
//! crate's `local` feature; without it, its agents are read as any other and refused with a
//! reason when built.

pub mod anthropic;
pub mod cli;
pub mod entry;
pub mod http;
pub mod human;
pub mod keys;
pub mod local;
pub mod openai;
pub mod scripted;
pub mod sim;

use crate::error::{fail, ConfigError};

pub use entry::{
    AnySettings, Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building,
    ModelSwap,
};
pub use keys::{Key, KeyValue, Keys, Kind};

/// Every backend, in the order help, errors and the README's table list them.
pub const BACKENDS: &[&BackendEntry] = &[
    &local::ENTRY,
    &openai::ENTRY,
    &anthropic::ENTRY,
    &cli::ENTRY,
    &scripted::ENTRY,
    &sim::ENTRY,
    &human::ENTRY,
];

/// The backends' names, in registry order.
pub fn backend_names() -> Vec<&'static str> {
    BACKENDS.iter().map(|b| b.name).collect()
}

/// The registry entry named `name`.
pub fn entry_named(name: &str) -> Option<&'static BackendEntry> {
    BACKENDS.iter().copied().find(|b| b.name == name)
}

/// The key of any backend named `name`.
pub(crate) fn key_named(name: &str) -> Option<&'static Key> {
    BACKENDS
        .iter()
        .flat_map(|b| b.keys.iter())
        .find(|k| k.name == name)
}

/// Every key `keys` sets is one the backend of `entry` reads; otherwise an error naming the
/// first that is not, with why: the one backend that reads it when no other could
/// ([`Key::owned`]), the backend's own reason ([`BackendEntry::refuses`]), else that the
/// backend does not use it.
pub(crate) fn check_keys(at: &str, entry: &BackendEntry, keys: &Keys) -> Result<(), ConfigError> {
    let foreign = || keys.names().filter(|k| !entry.reads(k));
    for key in foreign() {
        let owner = BACKENDS
            .iter()
            .find(|b| b.keys.iter().any(|k| k.name == key && k.owned));
        if let Some(owner) = owner {
            return fail(
                at,
                key,
                format!("{at}.{key} is only used by backend {:?}", owner.name),
            );
        }
    }
    for key in foreign() {
        if let Some((_, why)) = entry.refuses.iter().find(|(k, _)| *k == key) {
            return fail(
                at,
                key,
                format!("{at}.{key}: backend {:?} {why}", entry.name),
            );
        }
    }
    match foreign().next() {
        Some(key) => fail(
            at,
            key,
            format!("{at}.{key} is not used by backend {:?}", entry.name),
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{AgentConfig, AgentFields};

    fn read(text: &str) -> Result<AgentConfig, ConfigError> {
        let fields: AgentFields = toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        fields.into_agent(0)
    }

    fn example(entry: &BackendEntry) -> String {
        format!(
            "id = \"a\"\nbackend = \"{}\"\n{}",
            entry.name, entry.example
        )
    }

    #[test]
    fn every_backend_reads_its_example_into_its_own_settings_and_writes_it_back() {
        let mut names = std::collections::HashSet::new();
        for entry in BACKENDS {
            assert!(names.insert(entry.name), "{} twice", entry.name);
            let text = example(entry);
            let fields: AgentFields = toml::from_str(&text).unwrap();
            let agent = fields
                .clone()
                .into_agent(0)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(agent.backend.name(), entry.name, "{text}");
            assert_eq!(agent.backend.entry().name, entry.name, "{text}");
            assert_eq!(AgentFields::from(agent.clone()), fields, "{text}");
            let json = serde_json::to_value(&agent).unwrap();
            let again: AgentFields = serde_json::from_value(json).unwrap();
            assert_eq!(again.into_agent(0).unwrap(), agent, "{text}");
        }
    }

    #[test]
    fn a_key_two_backends_read_is_of_one_kind_and_no_key_is_common() {
        let all: Vec<&Key> = BACKENDS.iter().flat_map(|b| b.keys.iter()).collect();
        for key in &all {
            assert!(
                !crate::COMMON_KEYS.contains(&key.name),
                "{} is a common key",
                key.name
            );
            for other in all.iter().filter(|k| k.name == key.name) {
                assert_eq!(
                    std::mem::discriminant(&key.kind),
                    std::mem::discriminant(&other.kind),
                    "{}",
                    key.name
                );
                assert!(
                    !key.owned || std::ptr::eq(*key, *other),
                    "{} is owned by one backend but read by two",
                    key.name
                );
            }
        }
        for entry in BACKENDS {
            for (key, _) in entry.refuses {
                assert!(!entry.reads(key), "{} refuses its own {key}", entry.name);
            }
        }
    }

    #[test]
    fn every_backend_refuses_the_keys_of_others_by_name() {
        let all: Vec<&Key> = BACKENDS.iter().flat_map(|b| b.keys.iter()).collect();
        for entry in BACKENDS {
            let ok = example(entry);
            read(&ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
            for key in all.iter().filter(|k| !entry.reads(k.name)) {
                let text = format!("{ok}{} = {}\n", key.name, key.kind.example());
                let e = read(&text).unwrap_err();
                assert_eq!(e.key, format!("agents[0].{}", key.name), "{text}: {e:?}");
            }
        }
    }

    #[test]
    fn an_unknown_backend_names_every_backend() {
        let e = read("id = \"a\"\nbackend = \"gpt\"\n").unwrap_err();
        assert_eq!(e.key, "agents[0].backend");
        assert!(e.message.contains(&backend_names().join(", ")), "{e}");
    }
}
