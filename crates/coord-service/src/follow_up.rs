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

use crate::Coordinator;
use crate::ops::{keys::RevokeApiKey, profiles::UnassignProfile, queue::CompleteWork, sessions::EndSessionOp};
use crate::ops::{spawn::SpawnAgent, workflows};
use coord_domain::access::Principal;
use coord_domain::agents::spawn::{self, SpawnAgentRequest, SpawnStatus, SpawnUpdate};
use coord_domain::keys::RevokeApiKeyRequest;
use coord_domain::profiles::UnassignProfileRequest;
use coord_domain::queue::CompleteWorkRequest;
use coord_domain::sessions::EndSessionRequest;
use coord_domain::{Caller, CoordResult};

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

impl Coordinator {
    /// Runs the follow-ups, and theirs, until none is left. Never fails: what could not
    /// be done is logged (and, for an act of the pipeline, audited as refused); a
    /// workflow left behind catches up on its next status read.
    pub(crate) async fn follow(&self, first: Vec<FollowUp>) -> Followed {
        let mut followed = Followed::default();
        let mut todo: Vec<FollowUp> = first.into_iter().rev().collect();
        while let Some(next) = todo.pop() {
            let more = self.follow_one(next, &mut followed).await;
            todo.extend(more.into_iter().rev());
        }
        followed
    }

    async fn follow_one(&self, next: FollowUp, followed: &mut Followed) -> Vec<FollowUp> {
        match next {
            FollowUp::WorkflowMoves(id) => {
                let mut more = Vec::new();
                if let Err(e) = workflows::moved_on(self, &id, &mut more).await {
                    tracing::warn!(workflow = %id, error = %e, "could not move the workflow on");
                }
                more
            }
            FollowUp::Spawn {
                by,
                label,
                workflow,
                request,
            } => {
                let (answer, more) = self.run_only::<SpawnAgent>(&by, *request).await;
                let agent = answer.map(|s| s.agent_id);
                followed.spawned.push(Spawned { label, workflow, agent });
                more
            }
            FollowUp::RecordSpawned { workflow_id, nodes } => {
                // Each node's latest spawn: its batch's spawns ran just before this.
                let outcomes: Vec<(String, Result<String, String>)> = nodes
                    .iter()
                    .filter_map(|node| {
                        let spawned = followed
                            .spawned
                            .iter()
                            .rev()
                            .find(|s| s.workflow.as_ref() == Some(&workflow_id) && &s.label == node)?;
                        Some((node.clone(), workflows::spawn_outcome(&spawned.agent)))
                    })
                    .collect();
                workflows::record_spawned(self, &workflow_id, &outcomes).await;
                Vec::new()
            }
            FollowUp::NotStarted { agent_id, task_id, why } => self.not_started(agent_id, task_id, why).await,
            FollowUp::Reclaim { agent_id, key_id } => self.reclaim(agent_id, key_id).await,
        }
    }

    async fn not_started(&self, agent_id: String, task_id: String, why: String) -> Vec<FollowUp> {
        let failed = CompleteWorkRequest {
            task_id,
            success: false,
            result: None,
            error_message: Some(why.clone()),
            changes: None,
            skill: None,
        };
        let (done, mut more) = self.run_only::<CompleteWork>(&as_agent(&agent_id), failed).await;
        if let Err(e) = done {
            tracing::warn!(agent = %agent_id, error = %e, "could not fail the task of an agent that did not start");
        }
        let ended = SpawnUpdate::Ended {
            status: SpawnStatus::Failed,
            exit_code: None,
            result: None,
            error: Some(why),
            permission_denials: Vec::new(),
            worktree: None,
        };
        if let Err(e) = self.record_agent_run(&agent_id, ended).await {
            tracing::warn!(agent = %agent_id, error = %e, "could not end the record of an agent that did not start");
        }
        more.extend(self.unassign(&agent_id).await);
        more
    }

    async fn reclaim(&self, agent_id: String, key_id: Option<String>) -> Vec<FollowUp> {
        let end = EndSessionRequest {
            release_locks: Some(true),
            handoff: None,
            requeue_tasks: Some(true),
            if_session: None,
        };
        let (ended, mut more) = self.run_only::<EndSessionOp>(&as_agent(&agent_id), end).await;
        if let Err(e) = ended {
            tracing::warn!(agent = %agent_id, error = %e, "could not end the session of a reclaimed agent");
        }
        if let Some(key_id) = key_id {
            let (revoked, then) = self
                .run_only::<RevokeApiKey>(&supervisor(), RevokeApiKeyRequest { key_id })
                .await;
            if let Err(e) = revoked {
                tracing::warn!(agent = %agent_id, error = %e, "could not revoke the key of a reclaimed agent");
            }
            more.extend(then);
        }
        more.extend(self.unassign(&agent_id).await);
        more
    }

    /// Removes the worker profile of an agent whose run is over.
    async fn unassign(&self, agent_id: &str) -> Vec<FollowUp> {
        let req = UnassignProfileRequest {
            target_agent_id: Some(agent_id.to_string()),
            target_agent_type: None,
        };
        let (done, more) = self.run_only::<UnassignProfile>(&supervisor(), req).await;
        if let Err(e) = done {
            tracing::warn!(agent = %agent_id, error = %e, "could not remove the profile of an ended agent");
        }
        more
    }
}

/// A spawned agent, acting locally (coord settling its run for it).
fn as_agent(agent_id: &str) -> Principal {
    Principal::local(Caller::new(agent_id.to_string(), spawn::AGENT_TYPE))
}

/// The identity supervisors (and coord settling for a dead one) act as.
fn supervisor() -> Principal {
    Principal::local(Caller::new(spawn::SUPERVISOR.0, spawn::SUPERVISOR.1))
}
