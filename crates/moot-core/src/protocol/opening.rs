//! The opening every protocol shares: the system message (persona, default instructions, the
//! saboteur's instruction), the round-0 prompt, and the round-0 call built from them.

use super::notes::CallNotes;
use super::plan::PlannedCall;
use crate::chat::{CallMode, ChatMessage};
use crate::contract::ReplyContract;
use crate::debate::{DebateSpec, Slot};
use crate::faults::Faults;

/// System message: the agent's persona, if any, then the default instructions, then the
/// saboteur's instruction when the `malicious` fault turned this agent.
pub(crate) fn system_message(spec: &DebateSpec, faults: &Faults, agent: usize) -> ChatMessage {
    let persona = spec.agents.get(agent).and_then(|a| a.persona.as_deref());
    let mut text = match persona {
        Some(p) => format!("{p}\n\n{}", crate::prompts::SYSTEM_DEFAULT),
        None => crate::prompts::SYSTEM_DEFAULT.to_string(),
    };
    if let Some(answer) = faults.malicious_target(agent, spec.agents.len(), spec.seed) {
        text.push_str("\n\n");
        text.push_str(&crate::prompts::render(
            crate::prompts::MALICIOUS,
            &[("answer", answer)],
        ));
    }
    ChatMessage::system(text)
}

/// The round-0 user prompt (with a confidence request when `confidence` is set).
pub(crate) fn initial_prompt(spec: &DebateSpec) -> String {
    crate::prompts::render(
        crate::prompts::INITIAL,
        &[
            ("question", &spec.debater_question()),
            ("options", &crate::prompts::options_block(&spec.choices)),
            ("format", crate::prompts::format_instruction(spec.kind)),
        ],
    )
}

/// The round-0 call every protocol starts with (freemad's layout for agents on its contract).
pub(crate) fn initial_call(
    spec: &DebateSpec,
    faults: &Faults,
    agent: usize,
    extra_instruction: Option<&str>,
) -> PlannedCall {
    if spec.contract(agent) == ReplyContract::Freemad {
        return freemad_initial_call(spec, faults, 0, agent);
    }
    let mut prompt = initial_prompt(spec);
    if let Some(extra) = extra_instruction {
        prompt.push(' ');
        prompt.push_str(extra);
    }
    PlannedCall {
        round: 0,
        agent,
        slot: Slot::Answer,
        mode: CallMode::Generate,
        messages: vec![
            system_message(spec, faults, agent),
            ChatMessage::user(prompt),
        ],
        peers: vec![],
        template: "initial",
        template_hash: crate::prompts::template_hash(crate::prompts::INITIAL),
        notes: CallNotes::for_agent(spec, faults, agent),
    }
}

/// A first answer under freemad's contract in `round`: one message, the requirement and the
/// layout (freemad's agents get no system prompt).
pub(crate) fn freemad_initial_call(
    spec: &DebateSpec,
    faults: &Faults,
    round: usize,
    agent: usize,
) -> PlannedCall {
    let prompt = crate::prompts::render(
        crate::prompts::FREEMAD_INITIAL,
        &[
            ("question", &spec.debater_question()),
            ("options", &crate::prompts::options_block(&spec.choices)),
        ],
    );
    PlannedCall {
        round,
        agent,
        slot: Slot::Answer,
        mode: CallMode::Generate,
        messages: vec![ChatMessage::user(prompt)],
        peers: vec![],
        template: "freemad-initial",
        template_hash: crate::prompts::template_hash(crate::prompts::FREEMAD_INITIAL),
        notes: CallNotes::for_agent(spec, faults, agent),
    }
}
