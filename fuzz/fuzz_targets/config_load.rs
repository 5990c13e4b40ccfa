//! Configuration files in every dialect (moot's TOML, YAML and JSON; freemad's YAML and JSON),
//! then validation: any text is either a configuration or an error message, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use moot_config::dialect::{from_json, from_yaml, native::from_toml};

fuzz_target!(|text: &str| {
    let parsed = [
        from_toml(text),
        from_yaml(text).map(|(c, _)| c),
        from_json(text).map(|(c, _)| c),
    ];
    for config in parsed.into_iter().flatten() {
        if config.validate().is_ok() {
            // What validates must also yield its derived settings without panicking.
            let _ = config.decision();
            let _ = config.engine();
            let _ = config.protocol_options();
            let _ = config.redactor();
        }
    }
});
