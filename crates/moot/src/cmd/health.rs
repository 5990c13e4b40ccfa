//! `moot health`: whether each agent of a configuration can answer, one line per agent; exits 1
//! when any agent is not healthy. What is checked is `moot_app::health`'s.

use anyhow::Result;

use moot_app::health;

#[derive(Debug, clap::Args)]
#[command(after_help = health::backend_checks())]
pub struct Args {
    #[command(flatten)]
    config: crate::flags::ConfigFile,
    /// How long each agent has to answer the probe (default: budget.max_agent_time_sec, else
    /// 60 s).
    #[arg(long, value_parser = crate::input::positive_count)]
    timeout_ms: Option<usize>,
}

pub fn run(args: Args, rt: &tokio::runtime::Runtime) -> Result<()> {
    let config = health::team_config(args.config.config.as_deref())?;
    let timeout = health::probe_timeout(&config, args.timeout_ms);
    // Each distinct error is said once: agents behind one unreachable server fail alike.
    let mut said: Vec<(String, String)> = Vec::new();
    // Ids come from the configuration, answers and errors from agents and servers: each line
    // is one line of text, never a terminal control.
    let shown = |text: &str| moot_core::escape::one_line(text).into_owned();
    let team = health::check_team(&config, timeout, rt, &mut |agent| {
        let id = shown(&agent.id);
        match &agent.verdict {
            Ok(detail) => outln!("{id}: ok ({}: {})", agent.backend, shown(detail)),
            Err(problem) => match said.iter().find(|(p, _)| p == problem) {
                Some((_, first)) => outln!(
                    "{id}: FAILED ({}: the same error as {first})",
                    agent.backend
                ),
                None => {
                    outln!("{id}: FAILED ({}: {})", agent.backend, shown(problem));
                    said.push((problem.clone(), id));
                }
            },
        }
    });
    // After the agents' lines, which scripts read one per agent.
    if let Some(environment) = &team.cli_environment {
        outln!("environment: {environment}");
    }
    let unhealthy = team.unhealthy();
    if unhealthy.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} of {} not healthy: {}",
            unhealthy.len(),
            moot_core::text::plural(team.agents.len(), "agent"),
            unhealthy.join(", ")
        )
    }
}
