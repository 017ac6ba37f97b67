//! The loop that runs follow-ups ([`super`]): each act through the pipeline as whom it
//! is for, the follow-ups of those acts back on the list, depth first.

use super::{FollowUp, Followed, Spawned};
use crate::Coordinator;
use crate::ops::{keys::RevokeApiKey, profiles::UnassignProfile, queue::CompleteWork, sessions::EndSessionOp};
use crate::ops::{spawn::SpawnAgent, workflows};
use coord_domain::Caller;
use coord_domain::access::Principal;
use coord_domain::agents::spawn::{self, SpawnStatus, SpawnUpdate};
use coord_domain::keys::RevokeApiKeyRequest;
use coord_domain::profiles::UnassignProfileRequest;
use coord_domain::queue::CompleteWorkRequest;
use coord_domain::sessions::EndSessionRequest;

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
