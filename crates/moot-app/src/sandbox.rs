//! The code sandbox as a command's configuration asks for it (`[validation]`).

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use moot_config::{Config, Field, Via};
use moot_sandbox::Sandbox;

use crate::error::InputError;

/// The sandbox that checks a debate's code answers: `None` when no answer is code or
/// `validation.sandbox` is off. It is started once here (an empty program), so that a machine
/// without bubblewrap or user namespaces is told before any model is asked, not after.
///
/// `tests` names where the debate's tests come from (`--tests FILE`, a dataset), if it has
/// any. Tests, or `validation.require_passing`, with the sandbox off is an error: nothing
/// could run them, and every program would silently count as failing (or, for
/// require-passing, as passing unchecked). `via` is the front end whose request may have set
/// require-passing.
pub async fn for_code(
    config: &Config,
    has_code: bool,
    tests: Option<&str>,
    via: Via,
) -> Result<Option<Arc<Sandbox>>> {
    let v = &config.validation;
    if !has_code {
        return Ok(None);
    }
    if !v.sandbox {
        let needs = match (tests, v.require_passing) {
            (Some(tests), _) => Some(tests.to_string()),
            (None, true) => Some(format!(
                "validation.require_passing ({})",
                via.name(Field::RequirePassing)
            )),
            (None, false) => None,
        };
        if let Some(needs) = needs {
            return Err(InputError(format!(
                "validation.sandbox = false, but {needs} needs the sandbox to run code answers: \
                 set validation.sandbox = true (it needs bubblewrap; scripts/setup.sh installs \
                 it), or drop {needs}"
            ))
            .into());
        }
        return Ok(None);
    }
    let off = "or set validation.sandbox = false to compare code answers without running them";
    let fail =
        |e: moot_sandbox::SandboxError| InputError(format!("validation.sandbox: {e} ({off})"));
    let mut sandbox = Sandbox::new(v.limits()).map_err(fail)?;
    if let Some(python) = &v.python {
        sandbox = sandbox.with_python(Path::new(python)).map_err(fail)?;
    }
    sandbox.probe().await.map_err(fail)?;
    Ok(Some(Arc::new(sandbox)))
}
