//! `som`, `free-mad-n`, `free-mad-c`: every agent answers, then reads every other agent's latest
//! response each round (all-to-all), with a conformity or anti-conformity prompt.
//!
//! Each agent's prompt is its own conversation: round 0's question, its own answer, then one user
//! turn per debate round with the peers' previous-round responses. Keeping the agent's history as
//! real turns lets a backend reuse its cached prefix. A round in which the agent gave no response
//! is left out of its conversation (so turns still alternate); a peer without a response in the
//! previous round is not shown.

use super::{initial_prompt, system_message, PlannedCall, Protocol};
use crate::chat::{CallMode, ChatMessage};
use crate::debate::{DebateSpec, Outcome, Transcript};
use crate::prompts;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptStyle {
    /// "Use the other agents' solutions as additional information" (Du et al.; FREE-MAD-C).
    Conformity,
    /// FREE-MAD-N's five-step critique.
    AntiConformity,
}

impl PromptStyle {
    fn template(self) -> (&'static str, &'static str) {
        match self {
            PromptStyle::Conformity => ("conformity", prompts::CONFORMITY),
            PromptStyle::AntiConformity => ("anti-conformity", prompts::ANTI_CONFORMITY),
        }
    }
}

#[derive(Debug, Clone)]
pub struct RoundTable {
    name: &'static str,
    style: PromptStyle,
    default_rule: &'static str,
}

impl RoundTable {
    pub fn new(name: &'static str, style: PromptStyle, default_rule: &'static str) -> RoundTable {
        RoundTable {
            name,
            style,
            default_rule,
        }
    }

    /// The debate-round user prompt for `agent` in `round` (≥ 1) and the peers it shows.
    fn debate_prompt(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> (String, Vec<usize>) {
        let mut peers = Vec::new();
        let mut blocks = Vec::new();
        for peer in (0..t.agents()).filter(|&p| p != agent) {
            if let Some(Outcome::Responded { text, .. }) = t.get(round - 1, peer) {
                blocks.push(format!("Agent {}'s solution:\n{}", peer + 1, text.trim()));
                peers.push(peer);
            }
        }
        let peers_text = if blocks.is_empty() {
            "(no other agent's solution arrived this round)".to_string()
        } else {
            blocks.join("\n\n")
        };
        let (_, template) = self.style.template();
        let prompt = prompts::render(
            template,
            &[
                ("peers", &peers_text),
                ("question", &spec.question),
                ("options", &prompts::options_block(&spec.options)),
                ("format", prompts::format_instruction(spec.kind)),
            ],
        );
        (prompt, peers)
    }
}

impl Protocol for RoundTable {
    fn name(&self) -> &'static str {
        self.name
    }

    fn default_rule(&self) -> &'static str {
        self.default_rule
    }

    fn shape(&self, agents: usize, rounds: usize) -> (usize, usize) {
        (agents, rounds)
    }

    fn plan_call(
        &self,
        spec: &DebateSpec,
        t: &Transcript,
        round: usize,
        agent: usize,
    ) -> PlannedCall {
        let mut messages = vec![system_message(spec, agent)];
        // Whether the conversation so far holds one of the agent's answers. Until it does, the
        // question itself leads the prompt.
        let mut answered_before = false;
        let mut peers = Vec::new();
        for past in 0..=round {
            let mut prompt = if past == 0 {
                initial_prompt(spec)
            } else {
                let (prompt, shown) = self.debate_prompt(spec, t, past, agent);
                peers = shown;
                if answered_before {
                    prompt
                } else {
                    format!("{}\n\n{prompt}", initial_prompt(spec))
                }
            };
            if past == round {
                messages.push(ChatMessage::user(std::mem::take(&mut prompt)));
                break;
            }
            // A round the agent did not answer is left out, so turns keep alternating.
            if let Some(text) = t.get(past, agent).and_then(Outcome::text) {
                messages.push(ChatMessage::user(prompt));
                messages.push(ChatMessage::assistant(text));
                answered_before = true;
            }
        }
        let (mode, template, text) = if round == 0 {
            (CallMode::Generate, "initial", prompts::INITIAL)
        } else {
            let (name, text) = self.style.template();
            (CallMode::Critique, name, text)
        };
        PlannedCall {
            round,
            agent,
            mode,
            messages,
            peers,
            template,
            template_hash: prompts::template_hash(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::Role;
    use crate::protocol::test_support::{respond, spec};
    use crate::protocol::Step;

    fn roles(c: &PlannedCall) -> Vec<Role> {
        c.messages.iter().map(|m| m.role).collect()
    }

    #[test]
    fn all_to_all_rounds_with_history() {
        let p = RoundTable::new("free-mad-n", PromptStyle::AntiConformity, "free-mad");
        let s = spec(3, 2);
        let mut t = Transcript::new(3, 2);
        for a in 0..3 {
            respond(
                &s,
                &mut t,
                0,
                a,
                &format!("I think {}.\nFinal answer: {}", 400 + a, 400 + a),
            );
        }
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 1);
        assert_eq!(calls[0].peers, vec![1, 2]);
        assert_eq!(calls[1].peers, vec![0, 2]);
        assert_eq!(calls[0].mode, CallMode::Critique);
        assert_eq!(
            roles(&calls[0]),
            vec![Role::System, Role::User, Role::Assistant, Role::User]
        );
        let last = &calls[0].messages[3].content;
        assert!(last.contains("Agent 2's solution:\nI think 401."));
        assert!(last.contains("Agent 3's solution"));
        assert!(
            !last.contains("Agent 1's solution"),
            "never shown its own response as a peer's"
        );
        assert!(last.contains("not evidence"));
        assert_eq!(calls[0].template, "anti-conformity");
        // Round 2: agent 1 missed round 1; its peers see only agents that answered.
        respond(&s, &mut t, 1, 0, "Final answer: 408");
        t.set(
            1,
            1,
            Outcome::Missing {
                reason: "timeout".into(),
            },
        );
        respond(&s, &mut t, 1, 2, "Final answer: 408");
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 2);
        assert_eq!(calls[0].peers, vec![2]);
        assert_eq!(
            roles(&calls[0]),
            vec![
                Role::System,
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        // Agent 1's unanswered round-1 prompt is dropped, so turns alternate.
        assert_eq!(
            roles(&calls[1]),
            vec![Role::System, Role::User, Role::Assistant, Role::User]
        );
    }

    #[test]
    fn conformity_prompt_and_resume_plans_only_open_calls() {
        let p = RoundTable::new("som", PromptStyle::Conformity, "majority-last");
        let s = spec(3, 1);
        let mut t = Transcript::new(3, 1);
        respond(&s, &mut t, 0, 1, "Final answer: 1");
        let Step::Round { round, calls } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(round, 0);
        assert_eq!(
            calls.iter().map(|c| c.agent).collect::<Vec<_>>(),
            vec![0, 2]
        );
        respond(&s, &mut t, 0, 0, "Final answer: 1");
        respond(&s, &mut t, 0, 2, "Final answer: 2");
        let Step::Round { calls, .. } = p.next(&s, &t) else {
            panic!()
        };
        assert!(calls[0]
            .messages
            .last()
            .unwrap()
            .content
            .contains("additional information"));
    }

    #[test]
    fn agent_without_round0_answer_restarts_from_the_question() {
        let p = RoundTable::new("som", PromptStyle::Conformity, "majority-last");
        let s = spec(2, 1);
        let mut t = Transcript::new(2, 1);
        t.set(
            0,
            0,
            Outcome::Missing {
                reason: "error".into(),
            },
        );
        respond(&s, &mut t, 0, 1, "Final answer: 5");
        let Step::Round { calls, .. } = p.next(&s, &t) else {
            panic!()
        };
        assert_eq!(roles(&calls[0]), vec![Role::System, Role::User]);
        assert!(calls[0].messages[1].content.contains("Solve the problem"));
        assert!(calls[0].messages[1].content.contains("Agent 2's solution"));
    }
}
