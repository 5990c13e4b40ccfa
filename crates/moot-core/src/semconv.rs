//! The names moot's traces and metrics use, in one place: the OpenTelemetry GenAI semantic
//! conventions' (status: development; since late 2026 in their own repository,
//! open-telemetry/semantic-conventions-genai, and deprecated in the Rust conventions crate
//! while they move), the general ones moot needs (`error.type`), and moot's own under `moot.`
//! for what the conventions do not name (rounds, decisions, sandbox verdicts).
//!
//! Span names follow the conventions: `invoke_workflow {protocol}` for a debate,
//! `invoke_agent {agent}` for an agent's turn, `chat {model}` for one request to a model.
//! Attributes whose values are known only later (tokens, the decision) are declared empty when
//! the span starts and recorded when known. Counts are recorded as `i64`: the OpenTelemetry
//! bridge exports a `u64` as a string.

/// Span targets: every span moot makes for traces and metrics has this target, so a
/// subscriber can take them and leave other crates' spans (sqlx, hyper) out.
pub const TARGET: &str = "moot::telemetry";

/// What a span's operation is: `chat`, `invoke_agent`, `invoke_workflow`.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The provider of the model: a well-known value (`openai`, `anthropic`) where one applies.
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
/// The model asked, as configured.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
pub const GEN_AI_REQUEST_TEMPERATURE: &str = "gen_ai.request.temperature";
pub const GEN_AI_REQUEST_MAX_TOKENS: &str = "gen_ai.request.max_tokens";
/// The debate's run id: every span of one debate carries it.
pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
/// The agent's id in the debate.
pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
/// A debate is a workflow: its protocol names it (low cardinality, as the conventions ask).
pub const GEN_AI_WORKFLOW_NAME: &str = "gen_ai.workflow.name";
/// Input tokens, cached ones included (as the conventions define it).
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
/// The part of the input a provider's cache (or the embedded model's) served.
pub const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
/// Why generation stopped, as a list (one per choice; moot asks for one).
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// The prompt and the answer, only when the user opts in ([`CAPTURE_CONTENT_VARIABLE`]), and
/// only through the redactor.
pub const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
/// A failure's class: low cardinality (`timeout`, `rate_limited`, `http_500`).
pub const ERROR_TYPE: &str = "error.type";

/// The opt-in switch for prompt and response texts in spans, as OpenTelemetry's GenAI
/// instrumentations name it: `true`, `SPAN_ONLY` or `SPAN_AND_EVENT` turn it on.
pub const CAPTURE_CONTENT_VARIABLE: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

/// The operation names.
pub const OP_CHAT: &str = "chat";
pub const OP_INVOKE_AGENT: &str = "invoke_agent";
pub const OP_INVOKE_WORKFLOW: &str = "invoke_workflow";

/// Debates: how many rounds the protocol may run, the rule that decides, what it decided.
pub const MOOT_ROUNDS: &str = "moot.rounds";
pub const MOOT_ROUND: &str = "moot.round";
pub const MOOT_DECISION_RULE: &str = "moot.decision.rule";
pub const MOOT_DECISION_ANSWER: &str = "moot.decision.answer";
/// How a debate or call ended: `ok`, `error`, `timeout`, `skipped`, `cached`, `interrupted`.
pub const MOOT_OUTCOME: &str = "moot.outcome";
/// The backend kind (`openai`, `anthropic`, `local`, `sim`, `cli`), beside the provider.
pub const MOOT_BACKEND: &str = "moot.backend";
/// A call's slot in its round (`answer`, `judge`, `reask`).
pub const MOOT_SLOT: &str = "moot.slot";
/// Retries the backend made before the answer (429s, 5xx, transport errors).
pub const MOOT_RETRIES: &str = "moot.retries";
/// Answered from the request cache (or by an identical request in flight), not asked.
pub const MOOT_CACHED: &str = "moot.cached";
/// A rate-limit wait: which limit, and how long it waited (seconds).
pub const MOOT_RATE_LIMIT_KEY: &str = "moot.rate_limit.key";
/// A sandbox check of a code answer: its verdict (`passed`, `failed`, `error`, `timeout`).
pub const MOOT_SANDBOX_VERDICT: &str = "moot.sandbox.verdict";
/// A store write: what it wrote (`calls`, `outcome`, `run`).
pub const MOOT_STORE_OPERATION: &str = "moot.store.operation";
/// A benchmark: its name, and an item's id.
pub const MOOT_BENCH_NAME: &str = "moot.bench.name";
pub const MOOT_BENCH_ITEM: &str = "moot.bench.item";

/// The span names of moot's own operations (the GenAI ones are `{operation} {subject}`).
pub const SPAN_ROUND: &str = "moot.round";
pub const SPAN_RATE_LIMIT_WAIT: &str = "moot.rate_limit.wait";
pub const SPAN_SANDBOX_CHECK: &str = "moot.sandbox.check";
pub const SPAN_STORE_WRITE: &str = "moot.store.write";
pub const SPAN_BENCH: &str = "moot.bench";

/// Whether `value` of [`CAPTURE_CONTENT_VARIABLE`] turns content capture on.
pub fn capture_content(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        v.eq_ignore_ascii_case("true")
            || v.eq_ignore_ascii_case("span_only")
            || v.eq_ignore_ascii_case("span_and_event")
    })
}

/// `gen_ai.provider.name` of a backend kind and its server: the conventions' well-known value
/// when one applies, else the kind itself.
pub fn provider_name(backend: &str, base_url: Option<&str>) -> String {
    match backend {
        "anthropic" => "anthropic".into(),
        "openai" => match base_url.map(host).unwrap_or_default().as_str() {
            "api.openai.com" => "openai".into(),
            "api.groq.com" => "groq".into(),
            "api.mistral.ai" => "mistral_ai".into(),
            "api.deepseek.com" => "deepseek".into(),
            "api.x.ai" => "x_ai".into(),
            // A compatible server (vLLM, llama.cpp, Ollama, a proxy).
            _ => "openai_compatible".into(),
        },
        "local" => "moot.local".into(),
        "sim" => "moot.sim".into(),
        other => format!("moot.{other}"),
    }
}

/// The host of `url`, in lower case.
fn host(url: &str) -> String {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    host.split(':').next().unwrap_or("").to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_capture_is_on_only_for_the_switchs_on_values() {
        for on in ["true", "TRUE", " span_only ", "SPAN_AND_EVENT"] {
            assert!(capture_content(Some(on)), "{on}");
        }
        for off in ["", "false", "1", "NO_CONTENT", "EVENT_ONLY", "yes"] {
            assert!(!capture_content(Some(off)), "{off}");
        }
        assert!(!capture_content(None));
    }

    #[test]
    fn providers_are_named_by_the_conventions_well_known_values() {
        assert_eq!(provider_name("anthropic", None), "anthropic");
        assert_eq!(
            provider_name("openai", Some("https://api.openai.com/v1")),
            "openai"
        );
        // A host that only contains OpenAI's name is not OpenAI.
        assert_eq!(
            provider_name("openai", Some("https://api.openai.com.evil.example/v1")),
            "openai_compatible"
        );
        assert_eq!(
            provider_name("openai", Some("http://127.0.0.1:8080/v1")),
            "openai_compatible"
        );
        assert_eq!(
            provider_name("openai", Some("https://user@API.groq.com:443/openai/v1")),
            "groq"
        );
        assert_eq!(provider_name("local", None), "moot.local");
        assert_eq!(provider_name("cli", None), "moot.cli");
    }
}
