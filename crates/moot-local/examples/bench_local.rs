//! moot's side of `scripts/bench-local`: runs a workload (a JSON file the script writes, the same
//! one llama.cpp's reference server is given) on the embedded backend and prints one JSON line
//! per measured phase.
//!
//! ```sh
//! cargo run --release -p moot-local --example bench_local -- --info [--model SPEC]
//! cargo run --release -p moot-local --example bench_local -- --workload FILE [--model SPEC]
//!     [--threads N] [--sequences N] [--n-ctx N] [--run K] [--logprobs] [--kv-unified]
//!     [--no-sharing]
//! ```
//!
//! `--info` pulls the model if needed and prints its path, moot's default options and the CPU
//! features llama.cpp was built with, without running anything. MODEL is a known model name
//! (default: the default model) or a .gguf path. `--logprobs` asks every call for its token
//! logprobs (as protocols that read them do), to see what they cost. `--kv-unified` runs with
//! one KV buffer for all sequences, `--no-sharing` without prefixes copied across sequences.
//!
//! The workload: `{"max_tokens": M, "warmup": [messages], "single": [messages],
//! "batch": [[messages], ...], "debate": {"round1": [[messages], ...], "followup_head": S,
//! "followup_tail": S}}`. Phases: `single_prefill` and `batch_prefill` (the same calls with
//! `max_tokens` 1, to time the prompt alone), `single`, `batch` (concurrent calls, no session, so
//! every prompt token is decoded), `debate_r1` (one session per agent) and `debate_r2` (each
//! agent's round-1 conversation, its own answer, then the others' answers: only the new tail
//! should be decoded).

use std::error::Error;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use moot_backends::models::{default_model, ModelRef};
use moot_backends::{ChatMessage, Completion, CompletionRequest, LanguageModel};
use moot_local::{LocalModel, LocalOptions, LocalStats};
use serde_json::{json, Value};

type Messages = Vec<ChatMessage>;

/// `--logprobs`: every call asks for its token logprobs.
static LOGPROBS: AtomicBool = AtomicBool::new(false);

struct Args {
    info: bool,
    model: String,
    workload: Option<String>,
    options: LocalOptions,
    run: u32,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        info: false,
        model: default_model().name.to_string(),
        workload: None,
        options: LocalOptions::default(),
        run: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--info" => args.info = true,
            "--model" => args.model = value()?,
            "--workload" => args.workload = Some(value()?),
            "--threads" => args.options.threads = value()?.parse()?,
            "--sequences" => args.options.max_sequences = value()?.parse()?,
            "--n-ctx" => args.options.n_ctx = value()?.parse()?,
            "--run" => args.run = value()?.parse()?,
            "--logprobs" => LOGPROBS.store(true, Ordering::Relaxed),
            "--kv-unified" => args.options.kv_unified = true,
            "--no-sharing" => args.options.share_prefixes = false,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    Ok(args)
}

fn request(messages: &Messages, session: Option<String>, max_tokens: u32) -> CompletionRequest {
    let mut request = CompletionRequest::new(messages.clone());
    request.params.temperature = Some(0.0);
    request.params.max_tokens = Some(max_tokens);
    request.params.logprobs = LOGPROBS.load(Ordering::Relaxed);
    request.conversation = session;
    request
}

/// Runs `requests` at once and returns their answers (in order) and the wall time from the
/// first send to the last answer.
async fn concurrently(
    model: &Arc<LocalModel>,
    requests: Vec<CompletionRequest>,
) -> Result<(Vec<Completion>, Duration), Box<dyn Error>> {
    let started = Instant::now();
    let handles: Vec<_> = requests
        .into_iter()
        .map(|r| {
            let model = Arc::clone(model);
            tokio::spawn(async move { model.complete(r).await })
        })
        .collect();
    let mut completions = Vec::with_capacity(handles.len());
    for handle in handles {
        completions.push(handle.await??);
    }
    Ok((completions, started.elapsed()))
}

/// The counters once the worker has added the `n` calls after `before` (it answers a call just
/// before it counts it).
async fn settled_stats(model: &LocalModel, before: &LocalStats, n: u64) -> LocalStats {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = model.stats();
        if now.requests >= before.requests + n || Instant::now() > deadline {
            return now.since(before);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One measured phase: `requests` run at once; prints its JSON line and returns the answers.
async fn phase(
    model: &Arc<LocalModel>,
    run: u32,
    name: &str,
    requests: Vec<CompletionRequest>,
) -> Result<Vec<Completion>, Box<dyn Error>> {
    let n = requests.len() as u64;
    let before = model.stats();
    let (completions, wall) = concurrently(model, requests).await?;
    let stats = settled_stats(model, &before, n).await;
    let calls: Vec<Value> = completions
        .iter()
        .map(|c| {
            json!({
                "input_tokens": c.usage.input_tokens,
                "processed_tokens": c.usage.processed_input_tokens.unwrap_or(c.usage.input_tokens),
                "output_tokens": c.usage.output_tokens,
                "finish": c.finish.as_str(),
                "text": c.text,
            })
        })
        .collect();
    let line = json!({
        "side": "moot",
        "run": run,
        "phase": name,
        "wall_s": wall.as_secs_f64(),
        "calls": calls,
        "engine": {
            "prompt_tps": stats.prefill_tokens_per_second(),
            "gen_tps": stats.generation_tokens_per_second(),
            "prefill_s": stats.prefill_time.as_secs_f64(),
            "generation_decode_s": stats.generation_time.as_secs_f64(),
            "decode_steps": stats.decode_steps,
            "processed_prompt_tokens": stats.processed_prompt_tokens,
            "shared_prompt_tokens": stats.shared_prompt_tokens,
        },
    });
    println!("{line}");
    Ok(completions)
}

fn messages_of(value: &Value) -> Result<Messages, Box<dyn Error>> {
    Ok(serde_json::from_value(value.clone())?)
}

fn list_of(value: &Value) -> Result<Vec<Messages>, Box<dyn Error>> {
    value
        .as_array()
        .ok_or("expected a list of conversations")?
        .iter()
        .map(messages_of)
        .collect()
}

/// Agent `i`'s second-round conversation: its first round, its own answer, then the others'.
fn round_two(first: &Messages, answers: &[String], i: usize, head: &str, tail: &str) -> Messages {
    let others: Vec<String> = answers
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(j, a)| format!("Agent {}: {a}", j + 1))
        .collect();
    let mut messages = first.clone();
    messages.push(ChatMessage::assistant(answers[i].clone()));
    messages.push(ChatMessage::user(format!(
        "{head}{}{tail}",
        others.join("\n\n")
    )));
    messages
}

fn system_info() -> String {
    // SAFETY: llama.cpp returns a pointer to a static, NUL-terminated buffer.
    unsafe { CStr::from_ptr(llama_cpp_sys_2::llama_print_system_info()) }
        .to_string_lossy()
        .trim()
        .to_string()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let path = ModelRef::parse(&args.model)?.ensure(&mut |msg| eprintln!("{msg}"))?;
    if args.info {
        let o = &args.options;
        let line = json!({
            "side": "moot",
            "phase": "info",
            "model_path": path,
            "threads": o.threads,
            "sequences": o.max_sequences,
            "n_ctx": o.n_ctx,
            "batch_size": o.batch_size,
            "system_info": system_info(),
        });
        println!("{line}");
        return Ok(());
    }
    let workload: Value = {
        let file = args
            .workload
            .as_deref()
            .ok_or("--workload FILE is needed")?;
        serde_json::from_str(&std::fs::read_to_string(file)?)?
    };
    let max_tokens = u32::try_from(workload["max_tokens"].as_u64().ok_or("max_tokens")?)?;
    let options = args.options.clone();
    let started = Instant::now();
    let model =
        Arc::new(tokio::task::spawn_blocking(move || LocalModel::load(&path, options)).await??);
    let info = model.info();
    let line = json!({
        "side": "moot",
        "run": args.run,
        "phase": "load",
        "load_s": started.elapsed().as_secs_f64(),
        "threads": info.threads,
        "sequences": info.max_sequences,
        "n_ctx_per_sequence": info.n_ctx_per_sequence,
        "chat_template": info.chat_template,
        "logprobs": LOGPROBS.load(Ordering::Relaxed),
        "system_info": system_info(),
    });
    println!("{line}");

    let run = args.run;
    // Warm-up: first touch of the weights, the thread pool.
    let warmup = messages_of(&workload["warmup"])?;
    model.complete(request(&warmup, None, 4)).await?;

    let single = messages_of(&workload["single"])?;
    phase(
        &model,
        run,
        "single_prefill",
        vec![request(&single, None, 1)],
    )
    .await?;
    phase(
        &model,
        run,
        "single",
        vec![request(&single, None, max_tokens)],
    )
    .await?;

    let batch = list_of(&workload["batch"])?;
    let all = |max: u32| batch.iter().map(|m| request(m, None, max)).collect();
    phase(&model, run, "batch_prefill", all(1)).await?;
    phase(&model, run, "batch", all(max_tokens)).await?;

    let debate = &workload["debate"];
    let first = list_of(&debate["round1"])?;
    let session = |i: usize| Some(format!("agent-{i}"));
    let answers: Vec<String> = phase(
        &model,
        run,
        "debate_r1",
        first
            .iter()
            .enumerate()
            .map(|(i, m)| request(m, session(i), max_tokens))
            .collect(),
    )
    .await?
    .into_iter()
    .map(|c| c.text)
    .collect();
    let head = debate["followup_head"].as_str().unwrap_or_default();
    let tail = debate["followup_tail"].as_str().unwrap_or_default();
    let second = (0..first.len())
        .map(|i| {
            let messages = round_two(&first[i], &answers, i, head, tail);
            request(&messages, session(i), max_tokens)
        })
        .collect();
    phase(&model, run, "debate_r2", second).await?;
    Ok(())
}
