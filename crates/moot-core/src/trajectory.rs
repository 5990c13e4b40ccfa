//! The trajectory: every agent's answer in every round, what decision rules read (see
//! docs/architecture.md, Trajectory).

use crate::answer::Answer;

/// One agent's outcome in one round.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// The agent gave no response this round (timeout, cut off by a fault, cancelled). It is
    /// never read as a kept answer.
    Missing,
    /// The agent responded; `None` when no answer could be extracted from the response.
    Answered(Option<Answer>),
}

impl Cell {
    /// The answer, when the agent responded with one.
    pub fn answer(&self) -> Option<&Answer> {
        match self {
            Cell::Answered(a) => a.as_ref(),
            Cell::Missing => None,
        }
    }

    pub fn responded(&self) -> bool {
        matches!(self, Cell::Answered(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrajectoryError {
    #[error("the trajectory has no agents")]
    NoAgents,
    // Agents are named from 1 (the first row is agent 1), as every command numbers them.
    #[error("agent {} has no rounds", agent + 1)]
    NoRounds { agent: usize },
    #[error(
        "agent {} has {} but agent 1 has {expected} (rows must be equally long)",
        agent + 1,
        crate::text::plural(*.len, "round")
    )]
    Ragged {
        agent: usize,
        len: usize,
        expected: usize,
    },
}

/// An N agents × (R+1) rounds matrix of [`Cell`]s; round 0 is independent generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Trajectory {
    rows: Vec<Vec<Cell>>,
}

impl Trajectory {
    /// Builds a trajectory from one row per agent, each with one cell per round.
    pub fn new(rows: Vec<Vec<Cell>>) -> Result<Trajectory, TrajectoryError> {
        let expected = rows.first().ok_or(TrajectoryError::NoAgents)?.len();
        for (agent, row) in rows.iter().enumerate() {
            if row.is_empty() {
                return Err(TrajectoryError::NoRounds { agent });
            }
            if row.len() != expected {
                return Err(TrajectoryError::Ragged {
                    agent,
                    len: row.len(),
                    expected,
                });
            }
        }
        Ok(Trajectory { rows })
    }

    /// A trajectory in which every agent responded in every round.
    pub fn from_answers(rows: Vec<Vec<Option<Answer>>>) -> Result<Trajectory, TrajectoryError> {
        Trajectory::new(
            rows.into_iter()
                .map(|r| r.into_iter().map(Cell::Answered).collect())
                .collect(),
        )
    }

    pub fn agents(&self) -> usize {
        self.rows.len()
    }

    /// The same trajectory with every answer `drop` selects read as no answer (the agent still
    /// responded). Validation uses it to make failing code lose before any rule scores.
    pub fn without(&self, drop: impl Fn(&Answer) -> bool) -> Trajectory {
        let rows = self
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|cell| match cell {
                        Cell::Answered(Some(a)) if drop(a) => Cell::Answered(None),
                        other => other.clone(),
                    })
                    .collect()
            })
            .collect();
        Trajectory { rows }
    }

    /// Number of rounds including round 0 (R + 1).
    pub fn rounds(&self) -> usize {
        self.rows[0].len()
    }

    pub fn cell(&self, agent: usize, round: usize) -> &Cell {
        &self.rows[agent][round]
    }

    /// The cells of one round, in agent order.
    pub fn round(&self, round: usize) -> impl Iterator<Item = &Cell> + '_ {
        self.rows.iter().map(move |r| &r[round])
    }

    pub fn last_round(&self) -> usize {
        self.rounds() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_and_ragged() {
        assert_eq!(Trajectory::new(vec![]), Err(TrajectoryError::NoAgents));
        assert_eq!(
            Trajectory::new(vec![vec![]]),
            Err(TrajectoryError::NoRounds { agent: 0 })
        );
        assert_eq!(
            Trajectory::new(vec![
                vec![Cell::Missing],
                vec![Cell::Missing, Cell::Missing]
            ]),
            Err(TrajectoryError::Ragged {
                agent: 1,
                len: 2,
                expected: 1
            })
        );
    }
}
