//! The page templates, compiled into the binary.

use minijinja::Environment;

/// The templates, compiled once.
pub fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, text) in [
        ("base.html", include_str!("../templates/base.html")),
        ("runs.html", include_str!("../templates/runs.html")),
        ("run.html", include_str!("../templates/run.html")),
        ("new.html", include_str!("../templates/new.html")),
        ("config.html", include_str!("../templates/config.html")),
        ("benches.html", include_str!("../templates/benches.html")),
        ("bench.html", include_str!("../templates/bench.html")),
        ("people.html", include_str!("../templates/people.html")),
        ("person.html", include_str!("../templates/person.html")),
    ] {
        // The templates ship inside the binary; one that does not parse is a bug caught by
        // the tests, not something a user can cause.
        if let Err(e) = env.add_template(name, text) {
            panic!("template {name}: {e}");
        }
    }
    env
}
