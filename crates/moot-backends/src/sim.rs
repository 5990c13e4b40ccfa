//! `sim`: a simulated agent population for research and tests (DESIGN §6).
//!
//! Each simulated agent has an independent accuracy `p` (its chance of the gold answer when it
//! answers alone), a distractor distribution (the wrong answers it falls for), a conformity `β`
//! (FREE-MAD eq. 4: P(r) ∝ P_in(r)·exp(β·share of peers holding r); β < 0 models the
//! anti-conformity prompt) and a robustness `α` to erroneous memories (MAD-M² assumption 2.1: with
//! probability α the agent re-derives its answer instead of trusting its previous one). It reads
//! the same prompts real agents get — its previous answer from its own last turn, its peers'
//! answers from the "Agent N's solution" blocks — and writes real response text ending in
//! "Final answer: …", with token logprobs whose mean is higher when it is right (calibrated) or
//! independent of correctness (hallucinating). It needs the gold answer, so it is for benchmarks
//! and tests, not for `moot ask`.

use std::hash::{DefaultHasher, Hash, Hasher};

use async_trait::async_trait;
use moot_core::answer::{Answer, AnswerKind, ExtractContext};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{BackendError, Capabilities, Completion, CompletionRequest, LanguageModel, Role};

#[derive(Debug, Clone, PartialEq)]
pub struct SimAgent {
    /// Chance of the gold answer when answering alone.
    pub accuracy: f64,
    /// Wrong answers, in the order the agent falls for them (weights decrease geometrically).
    pub distractors: Vec<String>,
    /// Conformity: > 0 follows the peers' majority, < 0 resists it.
    pub beta: f64,
    /// Robustness to erroneous memories: chance to re-derive rather than keep a previous answer.
    pub alpha: f64,
    /// Whether logprob signals track correctness.
    pub calibrated: bool,
}

impl Default for SimAgent {
    fn default() -> Self {
        SimAgent {
            accuracy: 0.6,
            distractors: vec![],
            beta: 1.0,
            alpha: 0.5,
            calibrated: true,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SimModel {
    agent: SimAgent,
    gold: String,
    kind: AnswerKind,
    seed: u64,
}

impl SimModel {
    pub fn new(agent: SimAgent, gold: impl Into<String>, kind: AnswerKind, seed: u64) -> SimModel {
        SimModel {
            agent,
            gold: gold.into(),
            kind,
            seed,
        }
    }

    fn read(&self, text: &str) -> Option<String> {
        Answer::extract(self.kind, text, &ExtractContext::default())
            .map(|a| a.canonical().to_string())
    }

    /// The answer distribution before conformity: gold with `accuracy`, distractors share the rest.
    fn independent(&self) -> Vec<(String, f64)> {
        let mut dist = vec![(self.gold.clone(), self.agent.accuracy)];
        let wrong = 1.0 - self.agent.accuracy;
        let n = self.agent.distractors.len();
        if n == 0 {
            dist.push((format!("{}-wrong", self.gold), wrong));
        } else {
            let weights: Vec<f64> = (0..n).map(|i| 0.5f64.powi(i as i32)).collect();
            let total: f64 = weights.iter().sum();
            for (d, w) in self.agent.distractors.iter().zip(weights) {
                dist.push((d.clone(), wrong * w / total));
            }
        }
        dist
    }

    /// Chooses an answer for a request; pure given the request and the seed.
    pub fn choose(&self, request: &CompletionRequest) -> String {
        let mut h = DefaultHasher::new();
        self.seed.hash(&mut h);
        request.session.hash(&mut h);
        request.messages.len().hash(&mut h);
        let mut rng = ChaCha8Rng::seed_from_u64(h.finish());
        let previous = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .and_then(|m| self.read(&m.content));
        let last_user = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let peers: Vec<String> = last_user
            .split("'s solution:")
            .skip(1)
            .filter_map(|block| {
                // A block ends at the next peer or at the instructions after the last peer.
                let block = block.split("\n\nAgent ").next().unwrap_or(block);
                let block = ["\n\nUse these solutions", "\n\nDo not look for agreement"]
                    .iter()
                    .filter_map(|t| block.find(t))
                    .min()
                    .map_or(block, |end| &block[..end]);
                self.read(block)
            })
            .collect();
        let mut dist = self.independent();
        // A previous answer is a memory: kept unless the agent re-derives (probability α).
        if let Some(prev) = &previous {
            if !rng.random_bool(self.agent.alpha.clamp(0.0, 1.0)) {
                return prev.clone();
            }
        }
        for p in &peers {
            if !dist.iter().any(|(a, _)| a == p) {
                dist.push((p.clone(), 1e-3));
            }
        }
        if !peers.is_empty() {
            for (answer, weight) in &mut dist {
                let share =
                    peers.iter().filter(|p| *p == answer).count() as f64 / peers.len() as f64;
                *weight *= (self.agent.beta * share).exp();
            }
        }
        let total: f64 = dist.iter().map(|(_, w)| w).sum();
        let mut x = rng.random_range(0.0..total.max(f64::MIN_POSITIVE));
        for (answer, w) in &dist {
            if x < *w {
                return answer.clone();
            }
            x -= w;
        }
        dist.last().map(|(a, _)| a.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl LanguageModel for SimModel {
    fn name(&self) -> String {
        format!(
            "sim:p={},beta={},alpha={}",
            self.agent.accuracy, self.agent.beta, self.agent.alpha
        )
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            logprobs: true,
            seed: true,
            sessions: false,
        }
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, BackendError> {
        let answer = self.choose(&request);
        let right = answer == self.gold;
        let text = format!(
            "I worked through the problem and checked the other solutions I was shown.\nFinal answer: {answer}"
        );
        let n = crate::scripted::count_words(&text) as usize;
        let mean = if !self.agent.calibrated || right {
            -0.2
        } else {
            -0.9
        };
        let logprobs = vec![mean as f32; n];
        let mut completion = crate::scripted::word_counted(
            text,
            crate::scripted::count_message_words(&request.messages),
        );
        completion.logprobs = request.params.logprobs.then_some(logprobs);
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_core::chat::ChatMessage;

    fn debate_prompt(own: &str, peers: &[&str]) -> CompletionRequest {
        let blocks: Vec<String> = peers
            .iter()
            .enumerate()
            .map(|(i, p)| format!("Agent {}'s solution:\nFinal answer: {p}", i + 2))
            .collect();
        let mut r = CompletionRequest::new(vec![
            ChatMessage::user("What is 17 * 24?"),
            ChatMessage::assistant(format!("Final answer: {own}")),
            ChatMessage::user(format!(
                "Here are the latest solutions:\n\n{}\n\nUpdate.",
                blocks.join("\n\n")
            )),
        ]);
        r.session = Some("a".into());
        r
    }

    fn share_adopting(beta: f64, alpha: f64) -> f64 {
        let agent = SimAgent {
            accuracy: 0.5,
            distractors: vec!["418".into()],
            beta,
            alpha,
            calibrated: true,
        };
        let n = 400;
        let adopted = (0..n)
            .filter(|&seed| {
                SimModel::new(agent.clone(), "408", AnswerKind::Numeric, seed)
                    .choose(&debate_prompt("408", &["418", "418"]))
                    == "418"
            })
            .count();
        adopted as f64 / n as f64
    }

    #[test]
    fn conformity_pulls_towards_the_peers_majority() {
        let conformist = share_adopting(3.0, 1.0);
        let neutral = share_adopting(0.0, 1.0);
        let contrarian = share_adopting(-3.0, 1.0);
        assert!(conformist > neutral + 0.2, "{conformist} vs {neutral}");
        assert!(contrarian < neutral - 0.2, "{contrarian} vs {neutral}");
    }

    #[test]
    fn memory_robustness_keeps_or_rederives() {
        // α = 0: the agent always keeps its previous answer, whatever its peers say.
        assert_eq!(share_adopting(5.0, 0.0), 0.0);
    }

    #[tokio::test]
    async fn renders_text_the_pipeline_reads_and_calibrated_logprobs() {
        let agent = SimAgent {
            accuracy: 1.0,
            ..SimAgent::default()
        };
        let m = SimModel::new(agent, "408", AnswerKind::Numeric, 1);
        let mut req = CompletionRequest::new(vec![ChatMessage::user("What is 17 * 24?")]);
        req.params.logprobs = true;
        let c = m.complete(req.clone()).await.unwrap();
        assert_eq!(
            Answer::extract(AnswerKind::Numeric, &c.text, &ExtractContext::default())
                .unwrap()
                .canonical(),
            "408"
        );
        assert!(c.logprob_summary().unwrap().mean > -0.5);
        assert_eq!(
            m.complete(req).await.unwrap(),
            c,
            "seeded: same request, same answer"
        );
        let wrong = SimModel::new(
            SimAgent {
                accuracy: 0.0,
                distractors: vec!["7".into()],
                ..SimAgent::default()
            },
            "408",
            AnswerKind::Numeric,
            1,
        );
        let mut req = CompletionRequest::new(vec![ChatMessage::user("q")]);
        req.params.logprobs = true;
        let c = wrong.complete(req).await.unwrap();
        assert!(c.text.ends_with("Final answer: 7"));
        assert!(c.logprob_summary().unwrap().mean < -0.5);
    }
}
