//! `cli`: a local program with freemad's agent contract (`command args… generate|critique`),
//! run as `[security]` allows.

use std::path::PathBuf;
use std::sync::Arc;

use moot_backends::cli::{CliConfig, CliModel};
use moot_backends::LanguageModel;

use super::entry::{Backend, BackendEntry, BackendSettings, BuildAgent, BuildError, Building};
use super::keys::{Key, Keys, Kind};
use crate::error::{fail, invalid, ConfigError};
use crate::program::program_problem;
use crate::security::SecuritySection;

pub const ENTRY: BackendEntry = BackendEntry {
    name: "cli",
    summary: "a local program with freemad's agent contract",
    keys: &[
        Key::new("command", Kind::Text),
        Key::new("args", Kind::Texts),
        Key::new("mode_arg", Kind::Switch),
        Key::new("args_after_mode", Kind::Texts),
        Key::new("working_dir", Kind::Path),
    ],
    refuses: &[],
    samples: false,
    max_temperature: 2.0,
    example: "command = \"/bin/true\"\n",
    retries: true,
    always_logprobs: false,
    in_process: false,
    health_checks: "the command is in security.cli_allowed_commands, exists and can be run \
                    (from working_dir)",
    read,
};

/// The program and how it is called.
#[derive(Debug, Clone, PartialEq)]
pub struct Cli {
    pub command: String,
    /// Arguments before the mode word.
    pub args: Vec<String>,
    /// Whether the mode word (`generate` / `critique`) is passed (default: yes).
    pub mode_arg: bool,
    /// Arguments after the mode word.
    pub args_after_mode: Vec<String>,
    pub working_dir: Option<PathBuf>,
}

impl Cli {
    /// A program called with `args` and the mode word, in moot's working directory.
    pub fn new(command: impl Into<String>, args: Vec<String>) -> Cli {
        Cli {
            command: command.into(),
            args,
            mode_arg: true,
            args_after_mode: Vec::new(),
            working_dir: None,
        }
    }

    /// How it is run under `security`: its command and arguments, and the limits.
    pub fn run_config(&self, security: &SecuritySection) -> CliConfig {
        let mut c = CliConfig::new(self.command.clone(), self.args.clone());
        c.mode_arg = self.mode_arg;
        c.args_after_mode = self.args_after_mode.clone();
        c.allowed_commands = security.cli_allowed_commands.clone();
        c.env = security.cli_env;
        c.env_allow = security.cli_env_allow.clone();
        c.max_output_bytes = security.cli_max_output_bytes;
        c.max_input_bytes = security.cli_max_input_bytes;
        c.working_dir = self.working_dir.clone();
        c
    }
}

fn read(keys: &Keys, at: &str) -> Result<Backend, ConfigError> {
    let Some(command) = keys.text("command") else {
        return fail(
            at,
            "command",
            format!("{at}: backend \"cli\" needs command"),
        );
    };
    Ok(Backend::new(Cli {
        command: command.to_string(),
        args: keys.texts("args").to_vec(),
        mode_arg: keys.switch("mode_arg").unwrap_or(true),
        args_after_mode: keys.texts("args_after_mode").to_vec(),
        working_dir: keys.path("working_dir").map(PathBuf::from),
    }))
}

impl BackendSettings for Cli {
    fn entry(&self) -> &'static BackendEntry {
        &ENTRY
    }

    fn write_back(&self, keys: &mut Keys) {
        keys.set_text("command", Some(self.command.clone()));
        keys.set_texts("args", self.args.clone());
        // The default is left unwritten, so configurations keep the shape they had.
        keys.set_switch("mode_arg", (!self.mode_arg).then_some(false));
        keys.set_texts("args_after_mode", self.args_after_mode.clone());
        keys.set_path("working_dir", self.working_dir.clone());
    }

    fn build(
        &self,
        b: &mut Building<'_>,
        agent: &BuildAgent<'_>,
    ) -> Result<Arc<dyn LanguageModel>, BuildError> {
        let model = CliModel::new(self.run_config(b.security))
            .map_err(|e| BuildError::failed(agent.label(), e))?;
        Ok(Arc::new(model))
    }

    fn api_key_env(&self) -> Option<&str> {
        None
    }

    /// A program of this machine's.
    fn self_contained(&self) -> bool {
        false
    }

    /// Its command is allowed, and can be started from its working directory.
    fn check_can_run(
        &self,
        security: &SecuritySection,
        at: &str,
        id: &str,
    ) -> Result<(), ConfigError> {
        let command = &self.command;
        if !security.allows(command) {
            return invalid(
                format!("{at}.command"),
                format!("{at}.command = {command:?} is not in security.cli_allowed_commands"),
            );
        }
        if let Some(dir) = &self.working_dir {
            if !dir.is_dir() {
                return invalid(
                    format!("{at}.working_dir"),
                    format!("{at}.working_dir = {} is not a directory", dir.display()),
                );
            }
        }
        match program_problem(command, self.working_dir.as_deref()) {
            Some(problem) => invalid(
                format!("{at}.command"),
                format!("{at} (id {id:?}): {problem}"),
            ),
            None => Ok(()),
        }
    }
}
