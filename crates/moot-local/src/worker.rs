//! The worker thread: owns llama.cpp's backend, model and context, and runs every request as a
//! sequence of one context, advancing all of them with one `decode` per step.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use moot_backends::{BackendError, ChatMessage, Completion, FinishReason, SamplingParams, Usage};
use tokio::sync::mpsc;

use crate::error::LocalError;
use crate::job::{Job, Reply};
use crate::options::{LocalOptions, DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE};
use crate::slots::{choose_slot, prefix_source, reusable_prefix, Choice, Offer, SlotView, Source};
use crate::stats::{LocalModelInfo, LocalStats};
use crate::utf8::Utf8Accumulator;

/// llama.cpp's backend may be initialised once per process; every model shares it.
static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

fn backend() -> Result<&'static LlamaBackend, LocalError> {
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| LocalError::Backend(e.clone()))
}

/// The thread's body: load, report readiness, serve until every handle is dropped.
pub(crate) fn run(
    path: PathBuf,
    options: LocalOptions,
    ready: std::sync::mpsc::SyncSender<Result<LocalModelInfo, LocalError>>,
    jobs: mpsc::UnboundedReceiver<Job>,
    stats: Arc<Mutex<LocalStats>>,
) {
    let loaded = (|| {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default())
            .map_err(|source| LocalError::Load {
                path: path.clone(),
                source,
            })?;
        Ok((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(loaded) => loaded,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let engine = match Engine::new(backend, &model, &path, &options, stats) {
        Ok(engine) => engine,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    if ready.send(Ok(engine.info.clone())).is_err() {
        return;
    }
    engine.serve(jobs);
}

/// A request ready to run: rendered, tokenized and checked against the context.
struct Prepared {
    reply: Reply,
    conversation: Option<String>,
    prompt: Vec<LlamaToken>,
    params: SamplingParams,
}

/// A request running in a slot.
struct Running {
    reply: Reply,
    prompt: Vec<LlamaToken>,
    processed: usize,
    sampler: LlamaSampler,
    max_tokens: usize,
    /// Tokens generated so far.
    generated: usize,
    /// Sampled but not yet decoded: it goes into the next step's batch.
    pending: Option<LlamaToken>,
    text: Utf8Accumulator,
    /// The log-probability of each generated token, only when the request asked for them: a
    /// softmax over the whole vocabulary costs about as much per token as sampling does.
    logprobs: Option<Vec<f32>>,
}

struct Slot {
    seq: i32,
    /// Exactly the tokens in this sequence's KV cache, in position order.
    cached: Vec<LlamaToken>,
    conversation: Option<String>,
    last_used: u64,
    running: Option<Running>,
}

struct Engine<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: LlamaChatTemplate,
    info: LocalModelInfo,
    slots: Vec<Slot>,
    pending: VecDeque<Prepared>,
    batch: LlamaBatch<'static>,
    batch_size: usize,
    n_ctx_seq: usize,
    share_prefixes: bool,
    kv_unified: bool,
    clock: u64,
    stats: Arc<Mutex<LocalStats>>,
}

/// Fewest prompt tokens a copy from another sequence must save. With split KV streams a copy
/// moves a whole stream (for the 0.5B default model at 4,096 cells, 48 MB: a few ms, about what
/// prefilling two or three tokens costs here), so short gains are computed instead; with a
/// unified cache a copy is only bookkeeping.
const MIN_COPY_GAIN_SPLIT: usize = 16;
const MIN_COPY_GAIN_UNIFIED: usize = 1;

impl<'m> Engine<'m> {
    fn new(
        backend: &LlamaBackend,
        model: &'m LlamaModel,
        path: &std::path::Path,
        options: &LocalOptions,
        stats: Arc<Mutex<LocalStats>>,
    ) -> Result<Engine<'m>, LocalError> {
        // No sequence gets more context than the model was trained with.
        let n_ctx = match model.n_ctx_train() {
            0 => options.n_ctx,
            trained => options.n_ctx.min(trained.max(64)),
        };
        // n_ctx cells per sequence: its own stream of them with split KV, its share of one buffer
        // with unified KV. `validate` checked the product and the thread count.
        let total = n_ctx.saturating_mul(options.max_sequences);
        let threads = i32::try_from(options.threads).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(total))
            .with_n_batch(options.batch_size)
            .with_n_ubatch(options.batch_size.min(512))
            .with_n_seq_max(options.max_sequences)
            .with_n_threads(threads)
            .with_n_threads_batch(threads)
            .with_kv_unified(options.kv_unified);
        let ctx = model
            .new_context(backend, params)
            .map_err(|source| LocalError::Context {
                n_ctx,
                sequences: options.max_sequences,
                source,
            })?;
        let n_ctx_seq = ctx.n_ctx() / options.max_sequences;
        let (template, template_name) = chat_template(model)?;
        let info = LocalModelInfo {
            path: path.to_path_buf(),
            n_ctx_per_sequence: n_ctx_seq,
            max_sequences: options.max_sequences,
            threads: options.threads,
            n_ctx_train: model.n_ctx_train(),
            n_vocab: u32::try_from(model.n_vocab()).unwrap_or(0),
            chat_template: template_name,
        };
        let slots = (0..options.max_sequences)
            .map(|i| Slot {
                seq: i32::try_from(i).unwrap_or(0),
                cached: Vec::new(),
                conversation: None,
                last_used: 0,
                running: None,
            })
            .collect();
        let batch_size = options.batch_size as usize;
        Ok(Engine {
            model,
            ctx,
            template,
            info,
            slots,
            pending: VecDeque::new(),
            batch: LlamaBatch::new(batch_size, 1),
            batch_size,
            n_ctx_seq: n_ctx_seq as usize,
            share_prefixes: options.share_prefixes,
            kv_unified: options.kv_unified,
            clock: 0,
            stats,
        })
    }

    fn serve(mut self, mut jobs: mpsc::UnboundedReceiver<Job>) {
        loop {
            let idle = self.pending.is_empty() && self.slots.iter().all(|s| s.running.is_none());
            if idle {
                // Blocking here is fine: this is a plain thread, never a runtime worker.
                match jobs.blocking_recv() {
                    Some(job) => self.intake(job),
                    None => return,
                }
            }
            // Whatever else arrived joins before the next step. A closed channel only means no
            // new work; what is running finishes (or is cancelled) first.
            while let Ok(job) = jobs.try_recv() {
                self.intake(job);
            }
            self.drop_cancelled();
            self.admit();
            self.step();
        }
    }

    fn update_stats(&self, f: impl FnOnce(&mut LocalStats)) {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Renders and tokenizes a new request; failures are answered at once.
    fn intake(&mut self, job: Job) {
        let Job { request, reply } = job;
        match self.tokenize_prompt(&request.messages) {
            Ok(prompt) => self.pending.push_back(Prepared {
                reply,
                conversation: request.conversation,
                prompt,
                params: request.params,
            }),
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
    }

    fn tokenize_prompt(&self, messages: &[ChatMessage]) -> Result<Vec<LlamaToken>, BackendError> {
        if messages.is_empty() {
            return Err(BackendError::Model(
                "a request needs at least one message".into(),
            ));
        }
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.as_str().to_string(), m.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                BackendError::Model(format!("message cannot be passed to the model: {e}"))
            })?;
        // llama.cpp's tokenizer takes an i32 length; a prompt anywhere near that is far past any
        // context anyway.
        let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
        if bytes > (i32::MAX / 4) as usize {
            return Err(BackendError::Model(format!(
                "prompt of {bytes} bytes exceeds the context of {}",
                self.n_ctx_seq
            )));
        }
        let text = self
            .model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|e| BackendError::Model(format!("applying the chat template: {e}")))?;
        let prompt = self.model.vocab().tokenize(text.as_bytes(), true, true);
        if prompt.is_empty() {
            return Err(BackendError::Model("the prompt has no tokens".into()));
        }
        // At least one position must stay free for the first generated token.
        if prompt.len() >= self.n_ctx_seq {
            return Err(BackendError::Model(format!(
                "prompt of {} tokens exceeds the context of {}",
                prompt.len(),
                self.n_ctx_seq
            )));
        }
        Ok(prompt)
    }

    /// Forgets requests whose caller has gone away.
    fn drop_cancelled(&mut self) {
        let before = self.pending.len();
        self.pending.retain(|p| !p.reply.is_closed());
        let mut cancelled = (before - self.pending.len()) as u64;
        let now = self.tick();
        for slot in &mut self.slots {
            if slot.running.as_ref().is_some_and(|r| r.reply.is_closed()) {
                // The cache keeps what was decoded (and matches `cached`), so a conversation's next
                // call still reuses it.
                slot.running = None;
                slot.last_used = now;
                cancelled += 1;
            }
        }
        if cancelled > 0 {
            self.update_stats(|s| s.cancelled += cancelled);
        }
    }

    /// Moves waiting requests into slots, in arrival order where possible.
    fn admit(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            let choice = {
                let views: Vec<SlotView<'_>> = self
                    .slots
                    .iter()
                    .map(|s| SlotView {
                        conversation: s.conversation.as_deref(),
                        busy: s.running.is_some(),
                        last_used: s.last_used,
                    })
                    .collect();
                choose_slot(&views, self.pending[i].conversation.as_deref())
            };
            let index = match choice {
                Choice::Wait => {
                    i += 1;
                    continue;
                }
                Choice::Reuse(index) | Choice::Fresh(index) => index,
            };
            let source = self.prefix_source(index, &self.pending[i].prompt);
            if source == Source::Wait {
                i += 1;
                continue;
            }
            if let Some(job) = self.pending.remove(i) {
                if matches!(choice, Choice::Fresh(_)) {
                    self.slots[index].conversation = job.conversation.clone();
                }
                self.start(index, job, source);
            }
        }
    }

    /// Where the prompt of a request about to run in slot `target` starts from: what the slot
    /// holds already, a copy of a longer prefix another slot holds, or (waiting) one another
    /// slot is prefilling. A slot's cache is valid whoever owned it, so a slot taken over from
    /// an evicted conversation still keeps what the new prompt shares with it.
    fn prefix_source(&self, target: usize, prompt: &[LlamaToken]) -> Source {
        if !self.share_prefixes {
            return Source::Own;
        }
        let own = reusable_prefix(&self.slots[target].cached, prompt);
        let offers: Vec<Offer> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != target)
            .map(|(slot, s)| Offer {
                slot,
                cached: reusable_prefix(&s.cached, prompt),
                planned: s
                    .running
                    .as_ref()
                    .map_or(0, |r| reusable_prefix(&r.prompt, prompt)),
            })
            .collect();
        let min_gain = if self.kv_unified {
            MIN_COPY_GAIN_UNIFIED
        } else {
            MIN_COPY_GAIN_SPLIT
        };
        prefix_source(own, &offers, min_gain)
    }

    /// Makes slot `to`'s sequence hold exactly the first `tokens` cached tokens of slot `from`'s;
    /// false (and `to` empty) when llama.cpp refuses.
    fn copy_prefix(&mut self, from: usize, to: usize, tokens: usize) -> bool {
        let (src, dst) = (self.slots[from].seq, self.slots[to].seq);
        // `tokens` < prompt length < n_ctx, so it fits in a u32.
        let end = u32::try_from(tokens).unwrap_or(0);
        let copied = if self.kv_unified {
            // Cells of one buffer gain a sequence: nothing is moved.
            self.ctx
                .clear_kv_cache_seq(u32::try_from(dst).ok(), None, None)
                .is_ok()
                && self
                    .ctx
                    .kv_cache_seq_cp(src, dst, Some(0), Some(end))
                    .is_ok()
        } else {
            // Across streams llama.cpp copies only whole streams (at the next decode, before
            // anything is computed), so the copy is cut back to the prefix afterwards.
            self.ctx.kv_cache_seq_cp(src, dst, None, None).is_ok()
                && self.ctx.kv_cache_seq_rm(dst, Some(end), None).is_ok()
        };
        if copied {
            let prefix = self.slots[from].cached[..tokens].to_vec();
            self.slots[to].cached = prefix;
        } else {
            let _ = self
                .ctx
                .clear_kv_cache_seq(u32::try_from(dst).ok(), None, None);
            self.slots[to].cached.clear();
        }
        copied
    }

    fn start(&mut self, index: usize, job: Prepared, source: Source) {
        let now = self.tick();
        let mut shared = 0;
        if let Source::Copy { slot, tokens } = source {
            if self.copy_prefix(slot, index, tokens) {
                shared = tokens;
                self.slots[slot].last_used = now;
            }
        }
        let slot = &mut self.slots[index];
        let mut keep = reusable_prefix(&slot.cached, &job.prompt);
        // `keep` < prompt length < n_ctx, so it fits in a u32.
        let from = u32::try_from(keep).unwrap_or(0);
        if self
            .ctx
            .kv_cache_seq_rm(slot.seq, Some(from), None)
            .is_err()
        {
            // Some caches refuse partial removal: start the sequence over.
            let _ = self
                .ctx
                .clear_kv_cache_seq(Some(slot.seq as u32), None, None);
            keep = 0;
            shared = 0;
        }
        slot.cached.truncate(keep);
        slot.last_used = now;
        let prompt_len = job.prompt.len();
        let processed = prompt_len - keep;
        let max_tokens = job.params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize;
        slot.running = Some(Running {
            reply: job.reply,
            prompt: job.prompt,
            processed,
            sampler: sampler(&job.params),
            max_tokens,
            generated: 0,
            pending: None,
            text: Utf8Accumulator::default(),
            logprobs: job.params.logprobs.then(Vec::new),
        });
        self.update_stats(|s| {
            s.prompt_tokens += prompt_len as u64;
            s.processed_prompt_tokens += processed as u64;
            if shared > 0 {
                s.prefix_copies += 1;
                s.shared_prompt_tokens += shared as u64;
            }
        });
    }

    /// One decode for every running sequence: each generating sequence feeds its last sampled
    /// token, prefilling sequences feed the next chunk of their prompt; then each sequence whose
    /// logits came back samples its next token.
    fn step(&mut self) {
        self.batch.clear();
        // (slot index, batch row whose logits it samples from)
        let mut rows: Vec<(usize, i32)> = Vec::new();
        let mut members: Vec<usize> = Vec::new();
        let mut prompt_tokens = 0usize;
        // Generated tokens first: one each, so they never wait behind a long prompt.
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(token) = slot.running.as_mut().and_then(|r| r.pending.take()) else {
                continue;
            };
            let row = self.batch.n_tokens();
            let pos = slot.cached.len() as i32;
            if self.batch.add(token, pos, &[slot.seq], true).is_err() {
                // Cannot happen: the batch holds more tokens than there are sequences.
                if let Some(running) = slot.running.as_mut() {
                    running.pending = Some(token);
                }
                continue;
            }
            slot.cached.push(token);
            rows.push((index, row));
            members.push(index);
        }
        // Then prompt chunks, in the remaining room.
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(running) = slot.running.as_ref() else {
                continue;
            };
            let done = slot.cached.len();
            if done >= running.prompt.len() || running.pending.is_some() {
                continue;
            }
            let room = self.batch_size - self.batch.n_tokens() as usize;
            if room == 0 {
                break;
            }
            let end = running.prompt.len().min(done + room);
            let mut added = 0;
            for (pos, &token) in running.prompt.iter().enumerate().take(end).skip(done) {
                let last = pos + 1 == running.prompt.len();
                let row = self.batch.n_tokens();
                if self
                    .batch
                    .add(token, pos as i32, &[slot.seq], last)
                    .is_err()
                {
                    break;
                }
                slot.cached.push(token);
                added += 1;
                if last {
                    rows.push((index, row));
                }
            }
            if added > 0 {
                members.push(index);
                prompt_tokens += added;
            }
        }
        if self.batch.n_tokens() == 0 {
            return;
        }

        let started = Instant::now();
        let decoded = self.ctx.decode(&mut self.batch);
        let elapsed = started.elapsed();
        let n_tokens = self.batch.n_tokens() as u64;
        self.update_stats(|s| {
            s.decode_steps += 1;
            if prompt_tokens > 0 {
                s.prefill_time += elapsed;
            } else {
                s.generation_time += elapsed;
                s.generation_step_tokens += n_tokens;
            }
        });
        if let Err(e) = decoded {
            // The cache state of these sequences is unknown now: fail them and start them over.
            for index in members {
                let slot = &mut self.slots[index];
                let _ = self
                    .ctx
                    .clear_kv_cache_seq(Some(slot.seq as u32), None, None);
                slot.cached.clear();
                slot.conversation = None;
                if let Some(running) = slot.running.take() {
                    let _ = running.reply.send(Err(BackendError::Model(format!(
                        "llama.cpp decode failed: {e}"
                    ))));
                }
                self.update_stats(|s| s.requests += 1);
            }
            return;
        }

        let model = self.model;
        let vocab = model.vocab();
        let mut generated = 0u64;
        for (index, row) in rows {
            let slot = &mut self.slots[index];
            let Some(running) = slot.running.as_mut() else {
                continue;
            };
            if running.generated >= running.max_tokens {
                // max_tokens == 0: the prompt is cached, nothing is generated.
                self.finish(index, FinishReason::Length);
                continue;
            }
            let token = running.sampler.sample(&self.ctx, row);
            if vocab.is_eog(token) {
                self.finish(index, FinishReason::Stop);
                continue;
            }
            if let Some(logprobs) = running.logprobs.as_mut() {
                logprobs.push(log_softmax_at(self.ctx.get_logits_ith(row), token));
            }
            running.text.push(&vocab.token_to_piece(token, false, None));
            running.generated += 1;
            generated += 1;
            // The token is decoded next step at position cached.len(), which must exist.
            if running.generated >= running.max_tokens || slot.cached.len() >= self.n_ctx_seq {
                self.finish(index, FinishReason::Length);
            } else {
                running.pending = Some(token);
            }
        }
        if generated > 0 {
            self.update_stats(|s| s.generated_tokens += generated);
        }
    }

    fn finish(&mut self, index: usize, finish: FinishReason) {
        let now = self.tick();
        let slot = &mut self.slots[index];
        slot.last_used = now;
        let Some(running) = slot.running.take() else {
            return;
        };
        let output_tokens = running.generated as u64;
        let completion = Completion {
            text: running.text.finish(),
            usage: Usage {
                input_tokens: running.prompt.len() as u64,
                output_tokens,
                processed_input_tokens: Some(running.processed as u64),
                cache_write_input_tokens: None,
            },
            logprobs: running.logprobs,
            finish,
            retries: Vec::new(),
        };
        // The caller may be gone by now; then there is nobody to tell.
        let _ = running.reply.send(Ok(completion));
        self.update_stats(|s| s.requests += 1);
    }
}

/// The model's own chat template when llama.cpp's built-in engine can render it, else ChatML.
fn chat_template(model: &LlamaModel) -> Result<(LlamaChatTemplate, &'static str), LocalError> {
    if let Ok(template) = model.chat_template(None) {
        let probe = [
            LlamaChatMessage::new("system".into(), "s".into()),
            LlamaChatMessage::new("user".into(), "u".into()),
        ]
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| LocalError::Template(e.to_string()))?;
        if model.apply_chat_template(&template, &probe, true).is_ok() {
            return Ok((template, "model"));
        }
    }
    let chatml =
        LlamaChatTemplate::new("chatml").map_err(|e| LocalError::Template(e.to_string()))?;
    Ok((chatml, "chatml"))
}

/// The per-request sampler: greedy at temperature 0, else temperature → top-p → seeded draw
/// (temperature first, as OpenAI-style APIs define top-p).
fn sampler(params: &SamplingParams) -> LlamaSampler {
    let temperature = params.temperature.unwrap_or(DEFAULT_TEMPERATURE);
    if temperature.is_nan() || temperature <= 0.0 {
        // Zero, negative or NaN: the most likely token.
        return LlamaSampler::greedy();
    }
    let mut chain = vec![LlamaSampler::temp(temperature)];
    if let Some(p) = params.top_p.filter(|p| *p < 1.0) {
        chain.push(LlamaSampler::top_p(p.max(0.0), 1));
    }
    chain.push(LlamaSampler::dist(seed32(params.seed)));
    LlamaSampler::chain_simple(chain)
}

/// llama.cpp seeds are u32, with u32::MAX meaning "random".
fn seed32(seed: Option<u64>) -> u32 {
    const RANDOM: u32 = u32::MAX;
    match seed {
        None => RANDOM,
        Some(seed) => {
            let folded = (seed ^ (seed >> 32)) as u32;
            if folded == RANDOM {
                RANDOM - 1
            } else {
                folded
            }
        }
    }
}

/// log p(token) under the softmax of `logits`.
fn log_softmax_at(logits: &[f32], token: LlamaToken) -> f32 {
    let Some(&chosen) = usize::try_from(token.0).ok().and_then(|i| logits.get(i)) else {
        return f32::NEG_INFINITY;
    };
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    ((f64::from(chosen - max)) - sum.ln()) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_matches_the_definition() {
        let logits = [1.0f32, 2.0, 3.0];
        let z: f32 = logits.iter().map(|l| l.exp()).sum();
        for (i, l) in logits.iter().enumerate() {
            let lp = log_softmax_at(&logits, LlamaToken(i as i32));
            assert!((lp - (l.exp() / z).ln()).abs() < 1e-5);
            assert!(lp <= 0.0);
        }
        assert_eq!(log_softmax_at(&logits, LlamaToken(7)), f32::NEG_INFINITY);
        // Large logits do not overflow.
        let big = [1000.0f32, 1000.0];
        assert!((log_softmax_at(&big, LlamaToken(0)) - 0.5f32.ln()).abs() < 1e-5);
    }

    #[test]
    fn seeds_fold_into_u32_without_meaning_random() {
        assert_eq!(seed32(None), u32::MAX);
        assert_eq!(seed32(Some(42)), 42);
        assert_ne!(seed32(Some(u64::from(u32::MAX))), u32::MAX);
        assert_ne!(seed32(Some(1 << 40)), seed32(Some(1 << 41)));
    }
}
