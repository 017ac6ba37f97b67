//! What follows an operation, run by one mechanism the coordinator owns. No operation
//! runs another: an operation names the follow-ups of what it did, either in its answer
//! ([`Operation::follow_ups`](crate::op::Operation::follow_ups): a workflow node's task
//! ended, an agent whose supervisor did not start), run once it answered and before the
//! door sees the answer; or, when its own answer needs their outcome (a workflow's
//! first agents, a swarm's members, an agent reclaimed before its status is shown), by
//! handing them to [`Coordinator::follow`] itself.
//!
//! Each act a follow-up takes on someone's behalf (a spawn as the workflow's creator, a
//! failed completion as the agent, a key revoked as the supervisor) runs through the
//! pipeline as that identity: refused and audited as such, exactly as a call of theirs.
//! The follow-ups of those acts go back on the same list, depth first (right after the
//! follow-up whose act caused them, before the next one), so the chain a completion
//! starts (a workflow moves on, spawns an agent, which fails to start, which fails its
//! task) is a loop here rather than operations nesting each other.
//!
//! This module holds what a follow-up is; `runner` holds the loop, which reaches the
//! operations it runs, so that no operation's file needs to import it.

mod runner;

use coord_domain::CoordResult;
use coord_domain::access::Principal;
use coord_domain::agents::spawn::SpawnAgentRequest;

/// Something left to do after an operation.
#[derive(Debug)]
pub enum FollowUp {
    /// A task of a workflow's node ended: the workflow moves on (`workflows::moved_on`).
    WorkflowMoves(String),
    /// An agent spawned as `by` with spawn_agent's every rule; its outcome is kept under
    /// `label` (and `workflow`, when it is a node's) in [`Followed::spawned`].
    Spawn {
        by: Principal,
        label: String,
        workflow: Option<String>,
        /// Boxed: the largest variant by far, and follow-ups wait in a list.
        request: Box<SpawnAgentRequest>,
    },
    /// The outcomes of the spawns for these nodes, recorded on the workflow's nodes.
    RecordSpawned { workflow_id: String, nodes: Vec<String> },
    /// An agent registered whose supervisor could not be started: its task failed with
    /// the reason, its record ended as failed, its worker profile removed.
    NotStarted {
        agent_id: String,
        task_id: String,
        why: String,
    },
    /// An agent whose supervisor cannot end it (gone, overdue, stopped): its session ended
    /// (locks released, claimed tasks back in the queue), its key revoked, its profile
    /// removed. Its record is ended by the caller, which answers with it.
    Reclaim { agent_id: String, key_id: Option<String> },
}

/// One spawn a follow-up made, or why it could not.
#[derive(Debug)]
pub(crate) struct Spawned {
    pub label: String,
    pub workflow: Option<String>,
    pub agent: CoordResult<String>,
}

/// What the follow-ups did that their caller answers with.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    pub spawned: Vec<Spawned>,
}
