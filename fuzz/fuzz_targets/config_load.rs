//! Configuration files, TOML and YAML, then validation: any text is either a configuration or an
//! error message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot::config::Config;

fuzz_target!(|text: &str| {
    for parsed in [Config::from_toml(text), Config::from_yaml(text)] {
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
