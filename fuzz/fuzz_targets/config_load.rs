//! Configuration files, TOML and YAML, then validation: any text is either a configuration or an
//! error message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_config::dialect::native::{from_toml, from_yaml};

fuzz_target!(|text: &str| {
    for parsed in [from_toml(text), from_yaml(text)] {
        if let Ok(config) = parsed {
            if config.validate().is_ok() {
                // What validates must also yield its derived settings without panicking.
                let _ = config.decision();
                let _ = config.engine();
                let _ = config.protocol_options();
                let _ = config.redactor();
            }
        }
    }
});
