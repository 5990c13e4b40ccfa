//! Generation speed of the embedded backend, alone and with three conversations batched together,
//! plus one arithmetic answer as a sanity check.
//!
//! ```sh
//! cargo run --release -p moot-local --example throughput [-- MODEL]
//! ```
//!
//! MODEL is a known model name (default: the default model, pulled if missing) or a .gguf path.

use std::error::Error;
use std::time::{Duration, Instant};

use moot_backends::models::{default_model, ModelRef};
use moot_backends::{ChatMessage, Completion, CompletionRequest, LanguageModel};
use moot_local::{LocalModel, LocalOptions, LocalStats};

const MAX_TOKENS: u32 = 128;

const PROMPTS: [&str; 3] = [
    "Write a Python class for a binary search tree with insert, delete, search and in-order \
     traversal. Add a docstring to every method.",
    "Write a Rust function that parses a CSV line with quoted fields, and explain how it handles \
     escaped quotes.",
    "Write a JavaScript module implementing an LRU cache with get, set and delete, with comments.",
];

fn greedy(prompt: &str, conversation: &str, max_tokens: u32) -> CompletionRequest {
    let mut request = CompletionRequest::new(vec![ChatMessage::user(prompt)]);
    request.params.temperature = Some(0.0);
    request.params.max_tokens = Some(max_tokens);
    request.conversation = Some(conversation.to_string());
    request
}

fn report(label: &str, completions: &[Completion], wall: Duration, stats: &LocalStats) {
    let output: u64 = completions.iter().map(|c| c.usage.output_tokens).sum();
    let prompt: u64 = completions.iter().map(|c| c.usage.input_tokens).sum();
    let secs = wall.as_secs_f64();
    println!("{label}:");
    println!(
        "  {} call(s), {prompt} prompt tokens, {output} generated tokens in {secs:.2} s",
        completions.len()
    );
    println!(
        "  end to end:  {:.1} generated tok/s overall, {:.1} tok/s per conversation",
        output as f64 / secs,
        output as f64 / secs / completions.len() as f64
    );
    if let Some(rate) = stats.generation_tokens_per_second() {
        println!(
            "  decode only: {rate:.1} tok/s in generation steps ({} steps, {:.2} s); prefill {:.2} s",
            stats.decode_steps,
            stats.generation_time.as_secs_f64(),
            stats.prefill_time.as_secs_f64()
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn Error>> {
    let spec = std::env::args()
        .nth(1)
        .unwrap_or_else(|| default_model().name.to_string());
    let path = ModelRef::parse(&spec)?.ensure(&mut |msg| eprintln!("{msg}"))?;
    let started = Instant::now();
    let model =
        tokio::task::spawn_blocking(move || LocalModel::load(&path, LocalOptions::default()))
            .await??;
    let info = model.info();
    println!(
        "{} loaded in {:.2} s: {} sequences × {} tokens, {} threads, {} chat template",
        model.name(),
        started.elapsed().as_secs_f64(),
        info.max_sequences,
        info.n_ctx_per_sequence,
        info.threads,
        info.chat_template
    );

    // Warm-up: first-touch of the weights, thread pool start.
    model.complete(greedy("Hi", "warm-up", 4)).await?;

    let before = model.stats();
    let t = Instant::now();
    let solo = model
        .complete(greedy(PROMPTS[0], "solo", MAX_TOKENS))
        .await?;
    report(
        "1 conversation",
        std::slice::from_ref(&solo),
        t.elapsed(),
        &model.stats().since(&before),
    );

    let before = model.stats();
    let t = Instant::now();
    let (a, b, c) = tokio::join!(
        model.complete(greedy(PROMPTS[0], "a", MAX_TOKENS)),
        model.complete(greedy(PROMPTS[1], "b", MAX_TOKENS)),
        model.complete(greedy(PROMPTS[2], "c", MAX_TOKENS)),
    );
    let wall = t.elapsed();
    let three = [a?, b?, c?];
    report(
        "3 concurrent conversations",
        &three,
        wall,
        &model.stats().since(&before),
    );

    let question = "What is 17 * 24? Answer with a number.";
    let answer = model.complete(greedy(question, "math", 32)).await?;
    println!("{question} -> {:?} ({:?})", answer.text, answer.finish);

    let total = model.stats();
    println!(
        "totals: {} prompt tokens sent, {} decoded; {} generated; {:.2} s in decode",
        total.prompt_tokens,
        total.processed_prompt_tokens,
        total.generated_tokens,
        total.decode_time().as_secs_f64()
    );
    Ok(())
}
