//! Spawned agents (`spawn_agent`, docs/agents.md "Spawning"): the record coord keeps of
//! each launch it supervises, its life cycle, and the rules a spawn must pass — the
//! parent's own spawn depth, the concurrency cap, and a child never holding more than
//! its parent (trust, operations, tools). Pure; the stores keep the record and run
//! [`admit`] in the spawn's own transaction.

use super::isolation::{IsolatedWorktree, Isolation};
use super::{AgentDefinition, Runtime, WorkerProfile};
use crate::profiles::{Need, Permission, Profile};
use crate::{CoordError, CoordResult, ErrorCode, Timestamp};
use serde::{Deserialize, Serialize};

/// The agent type of every agent coord launches.
pub const AGENT_TYPE: &str = "worker";
/// How deep spawns may nest: an orchestrator's children are depth 1, theirs depth 2.
pub const DEFAULT_DEPTH_LIMIT: u32 = 2;
/// Spawned agents running at once on one coordinator, whoever spawned them.
pub const DEFAULT_MAX_RUNNING: i64 = 8;
/// The deadline of a spawn whose profile sets no `max_execution_time`.
pub const DEFAULT_DEADLINE_MINUTES: i64 = 30;
/// The task type of a spawn's task when the request names none.
pub const DEFAULT_TASK_TYPE: &str = "agent_task";
/// The largest task text (it becomes the agent's prompt).
pub const MAX_TASK_BYTES: usize = 32 * 1024;
/// How long past its deadline a run may go unreported before any coordinator takes its
/// supervisor for dead (the supervisor's own grace to stop the agent is 10 s).
pub const REPORT_GRACE_MINUTES: i64 = 10;
/// The identity supervisors act and report as (type `cli`: the local operator's profile,
/// which issues and revokes keys).
pub const SUPERVISOR: (&str, &str) = ("coord-supervisor", "cli");

/// Where a spawned agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpawnStatus {
    /// Registered, its supervisor being started.
    Starting,
    /// Its supervisor runs it.
    Running,
    /// It ended with a final answer; its task is completed.
    Completed,
    /// It ended with an error, or its supervisor could not start it; its task failed
    /// (an error answer) or went back to the queue (no answer).
    Failed,
    /// `stop_agent` stopped it; its task went back to the queue.
    Stopped,
    /// It ran past its deadline and was stopped; its task went back to the queue.
    TimedOut,
    /// Its supervisor died without saying how the run ended; coord ended its session
    /// (locks released, task back in the queue) and revoked its key.
    Lost,
}

impl SpawnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
            Self::TimedOut => "timed_out",
            Self::Lost => "lost",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Starting,
            Self::Running,
            Self::Completed,
            Self::Failed,
            Self::Stopped,
            Self::TimedOut,
            Self::Lost,
        ]
        .into_iter()
        .find(|x| x.as_str() == s)
    }

    /// Whether the agent may still act (spec 000's activation check).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Starting | Self::Running)
    }
}

/// What coord keeps of one spawned agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpawnedAgent {
    pub agent_id: String,
    /// Who spawned it.
    pub parent_agent_id: String,
    /// 1 for an agent spawned by one that was not spawned itself.
    pub depth: u32,
    pub status: SpawnStatus,
    /// Its definition as it was judged (later edits of the file do not change a spawn).
    pub definition: AgentDefinition,
    pub runtime: Runtime,
    pub task_id: String,
    pub task: String,
    pub deadline_minutes: i64,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// The machine and process id of its supervisor (`coord agent supervise`), and the
    /// process's start time there (a pid is reused; the pair is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_started: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
    /// The key issued to it (revoked when it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Its final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why it failed, was stopped or was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tool calls its runtime refused, as the runtime reported them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<serde_json::Value>,
    #[serde(default)]
    pub stop_requested: bool,
    /// Where it works: the coordinator's checkout (shared) or a worktree of its own.
    #[serde(default)]
    pub isolation: Isolation,
    /// Keep its worktree when it ends (isolation worktree only).
    #[serde(default)]
    pub keep_worktree: bool,
    /// Its worktree, once its supervisor made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<IsolatedWorktree>,
}

/// A change to a spawned agent's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SpawnUpdate {
    /// Its supervisor was started (by the coordinator that registered it).
    Launched {
        host: String,
        pid: u32,
        pid_started: Option<u64>,
    },
    /// Its supervisor runs it.
    Started {
        host: String,
        pid: u32,
        run_dir: String,
        key_id: String,
        /// The worktree it runs in (isolation worktree).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<IsolatedWorktree>,
    },
    /// `stop_agent` asked for it to stop.
    StopRequested { reason: Option<String> },
    /// The run is over.
    Ended {
        status: SpawnStatus,
        exit_code: Option<i32>,
        result: Option<String>,
        error: Option<String>,
        #[serde(default)]
        permission_denials: Vec<serde_json::Value>,
        /// What became of its worktree (isolation worktree).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<IsolatedWorktree>,
    },
}

impl SpawnedAgent {
    /// A record not yet registered: `starting`, its depth and deadline still to be
    /// decided by the spawn's transaction.
    pub fn new(
        agent_id: &str,
        parent_agent_id: &str,
        definition: AgentDefinition,
        runtime: Runtime,
        task_id: &str,
        task: &str,
    ) -> Self {
        SpawnedAgent {
            agent_id: agent_id.into(),
            parent_agent_id: parent_agent_id.into(),
            depth: 0,
            status: SpawnStatus::Starting,
            definition,
            runtime,
            task_id: task_id.into(),
            task: task.into(),
            deadline_minutes: 0,
            created_at: chrono::Utc::now(),
            started_at: None,
            ended_at: None,
            host: None,
            pid: None,
            pid_started: None,
            run_dir: None,
            key_id: None,
            exit_code: None,
            result: None,
            error: None,
            permission_denials: Vec::new(),
            stop_requested: false,
            isolation: Isolation::Shared,
            keep_worktree: false,
            worktree: None,
        }
    }

    /// When any coordinator may take its supervisor for dead: its deadline and
    /// [`REPORT_GRACE_MINUTES`] after it was registered.
    pub fn expires_at(&self) -> Timestamp {
        self.created_at + chrono::Duration::minutes(self.deadline_minutes + REPORT_GRACE_MINUTES)
    }

    /// Still active past [`SpawnedAgent::expires_at`]: its supervisor never reported the end.
    pub fn overdue(&self, now: Timestamp) -> bool {
        self.status.is_active() && now > self.expires_at()
    }

    /// The record after `update` at `now`. An ended run stays as it ended (a late report
    /// changes nothing and says so); a stop is only for a running agent.
    pub fn apply(&self, update: &SpawnUpdate, now: Timestamp) -> CoordResult<SpawnedAgent> {
        if !self.status.is_active() {
            return Err(CoordError::new(
                ErrorCode::AgentNotRunning,
                format!("agent {} already ended ({})", self.agent_id, self.status.as_str()),
            )
            .with_detail("status", self.status.as_str()));
        }
        let mut next = self.clone();
        let not_starting = |what: &str| {
            CoordError::new(
                ErrorCode::AgentNotRunning,
                format!(
                    "agent {} cannot be {what}: it is {}",
                    self.agent_id,
                    self.status.as_str()
                ),
            )
            .with_detail("status", self.status.as_str())
        };
        match update {
            SpawnUpdate::Launched { host, pid, pid_started } => {
                if self.status != SpawnStatus::Starting {
                    return Err(not_starting("launched again"));
                }
                next.host = Some(host.clone());
                next.pid = Some(*pid);
                next.pid_started = *pid_started;
            }
            // One supervisor, once; and none after a stop was asked for.
            SpawnUpdate::Started { .. } if self.status != SpawnStatus::Starting => {
                return Err(not_starting("started again"));
            }
            SpawnUpdate::Started { .. } if self.stop_requested => {
                return Err(not_starting("started: a stop was asked for"));
            }
            SpawnUpdate::Started {
                host,
                pid,
                run_dir,
                key_id,
                worktree,
            } => {
                next.worktree = worktree.clone();
                next.status = SpawnStatus::Running;
                next.started_at = Some(now);
                next.host = Some(host.clone());
                next.pid = Some(*pid);
                next.run_dir = Some(run_dir.clone());
                next.key_id = Some(key_id.clone());
            }
            SpawnUpdate::StopRequested { reason } => {
                next.stop_requested = true;
                next.error = Some(reason.clone().unwrap_or_else(|| "stopped by stop_agent".into()));
            }
            SpawnUpdate::Ended {
                status,
                exit_code,
                result,
                error,
                permission_denials,
                worktree,
            } => {
                if status.is_active() {
                    return Err(CoordError::new(
                        ErrorCode::InvalidArgument,
                        format!(
                            "a run ends as completed, failed, stopped, timed_out or lost, not {}",
                            status.as_str()
                        ),
                    ));
                }
                next.status = *status;
                next.ended_at = Some(now);
                next.exit_code = *exit_code;
                next.result = result.clone();
                // A stop keeps the reason it was asked for with.
                next.error = match (status, self.stop_requested) {
                    (SpawnStatus::Stopped, true) => next.error.or(error.clone()),
                    _ => error.clone().or(next.error),
                };
                next.permission_denials = permission_denials.clone();
                if worktree.is_some() {
                    next.worktree = worktree.clone();
                }
            }
        }
        Ok(next)
    }
}

/// The spawn limits of a coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnLimits {
    pub depth_limit: u32,
    pub max_running: i64,
}

impl Default for SpawnLimits {
    fn default() -> Self {
        SpawnLimits {
            depth_limit: DEFAULT_DEPTH_LIMIT,
            max_running: DEFAULT_MAX_RUNNING,
        }
    }
}

/// The checks a spawn must pass that depend on what is running, in the spawn's own
/// transaction: `parent` is the spawner's own record (none for an agent coord did not
/// spawn), `running` the spawned agents active now. Answers the child's depth.
pub fn admit(
    parent: Option<&SpawnedAgent>,
    child: &AgentDefinition,
    running: i64,
    limits: SpawnLimits,
) -> CoordResult<u32> {
    let depth = parent.map_or(1, |p| p.depth + 1);
    if let Some(p) = parent {
        if !p.status.is_active() {
            return Err(tool_execution_denied(
                &p.agent_id,
                "spawn_agent",
                "the spawning agent is not active",
            ));
        }
        if !p.definition.may_delegate_to(child) {
            return Err(tool_execution_denied(
                &p.agent_id,
                "spawn_agent",
                &format!(
                    "its definition {} does not delegate to {} (delegates_to: [{}]{})",
                    p.definition.name,
                    child.name,
                    p.definition.delegates_to.join(", "),
                    if p.definition.children.is_empty() {
                        String::new()
                    } else {
                        format!("; children: {}", p.definition.children.join(", "))
                    }
                ),
            )
            .with_field("agent"));
        }
        if let Some(extra) = child.tools.iter().find(|t| !p.definition.tools.contains(t)) {
            return Err(CoordError::new(
                ErrorCode::OperationNotPermitted,
                format!(
                    "a child may not have a tool its parent lacks: {extra} is not among {}'s tools ({})",
                    p.agent_id,
                    p.definition.tools.join(", ")
                ),
            )
            .with_field("agent")
            .with_detail("tool", extra.as_str()));
        }
    }
    if depth > limits.depth_limit {
        return Err(CoordError::new(
            ErrorCode::ResourceLimitExceeded,
            format!(
                "spawn depth {depth} is over the limit of {}: an agent spawned by a spawned agent may not spawn again",
                limits.depth_limit
            ),
        )
        .with_detail("resource", "spawn_depth")
        .with_detail("max", limits.depth_limit));
    }
    if running >= limits.max_running {
        return Err(CoordError::new(
            ErrorCode::ResourceLimitExceeded,
            format!(
                "{running} spawned agents are running, the most this coordinator runs at once \
                 (COORD_MAX_RUNNING_AGENTS): wait for one to end or stop one"
            ),
        )
        .with_detail("resource", "max_running_agents")
        .with_detail("max", limits.max_running));
    }
    Ok(depth)
}

/// What a spawn's transaction decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub depth: u32,
    /// The agent's deadline: the request's timeout, at most its profile's
    /// `max_execution_time`, else [`DEFAULT_DEADLINE_MINUTES`].
    pub deadline_minutes: i64,
    /// Its task's claim: the deadline and five minutes for the supervisor to report.
    pub lease_minutes: i64,
}

/// Every check of a spawn in its own transaction ([`check_privileges`], then [`admit`]),
/// and its deadline.
pub fn admit_spawn(
    parent_profile: &Profile,
    child_profile: &Profile,
    parent: Option<&SpawnedAgent>,
    child: &AgentDefinition,
    running: i64,
    limits: SpawnLimits,
    timeout_minutes: Option<i64>,
) -> CoordResult<Admitted> {
    check_privileges(parent_profile, child_profile)?;
    let depth = admit(parent, child, running, limits)?;
    let most = child_profile
        .resource_limits
        .max_execution_time
        .max()
        .map(|d| i64::try_from(d.as_secs().div_ceil(60)).unwrap_or(i64::MAX));
    let deadline_minutes = match (timeout_minutes, most) {
        (Some(t), Some(m)) => t.min(m),
        (Some(t), None) => t,
        (None, Some(m)) => m,
        (None, None) => DEFAULT_DEADLINE_MINUTES,
    }
    .max(1);
    Ok(Admitted {
        depth,
        deadline_minutes,
        lease_minutes: deadline_minutes + 5,
    })
}

/// Whether the parent's profile holds everything the child's grants: trust no higher,
/// and every operation the child may run one the parent may run too.
pub fn check_privileges(parent: &Profile, child: &Profile) -> CoordResult<()> {
    if child.trust_level > parent.trust_level {
        return Err(CoordError::new(
            ErrorCode::InsufficientTrustLevel,
            format!(
                "a child may not have more trust than its parent: {} has trust {}, the child's profile {} has {}",
                parent.name, parent.trust_level, child.name, child.trust_level
            ),
        )
        .with_detail("parent_trust_level", parent.trust_level)
        .with_detail("child_trust_level", child.trust_level));
    }
    for p in &child.allowed_operations {
        // Reading, analysing and commenting on what one may read are one capability:
        // a parent that reads may have children that analyse and comment.
        let as_needed = match p {
            Permission::Analyze | Permission::Comment => Permission::Read,
            other => *other,
        };
        if crate::profiles::decide(parent, "spawn_agent", Need::new(as_needed, 0)).is_err() {
            return Err(CoordError::new(
                ErrorCode::OperationNotPermitted,
                format!(
                    "a child may not do what its parent may not: {} grants {}, {} does not",
                    child.name,
                    p.as_str(),
                    parent.name
                ),
            )
            .with_detail("permission", p.as_str()));
        }
    }
    Ok(())
}

/// A spawned agent's profile with what its definition adds: `spawn_agent` (which
/// `delegate_task` needs too) when it delegates to anyone (`delegates_to`, children), so
/// a worker profile without it still delegates as its definition says; `admit` holds
/// each spawn to the definition. A profile that blocks `spawn_agent` keeps blocking it.
pub fn delegation_grant(mut profile: Profile, spawned: &SpawnedAgent) -> Profile {
    if spawned.definition.delegates() && !profile.allowed_operations.contains(&Permission::SpawnAgent) {
        profile.allowed_operations.push(Permission::SpawnAgent);
        // A budget too: a worker profile sets none, and the grant must not be unlimited.
        if profile.resource_limits.max_spawned_agents == crate::profiles::Limit::Unlimited {
            profile.resource_limits.max_spawned_agents = crate::profiles::Limit::Max(DELEGATION_BUDGET);
        }
    }
    profile
}

/// The most agents a spawned agent's definition lets it launch when its profile sets no
/// `max_spawned_agents`.
pub const DELEGATION_BUDGET: u64 = 5;

/// No spawned agent has this id.
pub fn not_spawned(agent_id: &str) -> CoordError {
    CoordError::new(ErrorCode::NotFound, format!("no agent {agent_id} was spawned")).with_field("target_agent_id")
}

/// Spec 000's refusal of a tool execution by an agent coord spawned.
pub fn tool_execution_denied(agent_id: &str, tool: &str, reason: &str) -> CoordError {
    CoordError::new(
        ErrorCode::ToolExecutionDenied,
        format!("{agent_id} may not run {tool}: {reason}"),
    )
    .with_detail("agent_id", agent_id)
    .with_detail("tool", tool)
    .with_detail("reason", reason)
}

/// Spec 000's activation check of one tool call through coord by a spawned agent: it
/// must be active, and a runtime tool must be one of its declared tools (coord's own
/// MCP tools are its coordination channel and always declared).
pub fn check_activation(agent: &SpawnedAgent, tool: Option<&str>) -> CoordResult<()> {
    if !agent.status.is_active() {
        return Err(tool_execution_denied(
            &agent.agent_id,
            tool.unwrap_or("a coordination operation"),
            &format!("the agent is not active (its run {})", agent.status.as_str()),
        ));
    }
    if agent.stop_requested {
        return Err(tool_execution_denied(
            &agent.agent_id,
            tool.unwrap_or("a coordination operation"),
            "the agent is being stopped",
        ));
    }
    if let Some(tool) = tool
        && !tool.starts_with("mcp__coord__")
        && !agent.definition.tools.iter().any(|t| t == tool)
    {
        return Err(tool_execution_denied(
            &agent.agent_id,
            tool,
            &format!("not among its declared tools ({})", agent.definition.tools.join(", ")),
        ));
    }
    Ok(())
}

/// `spawn_agent`'s request.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnAgentRequest {
    /// The agent definition to launch: `.claude/agents/<agent>.md` of the coordinator's
    /// workspace (its profile, tools and system prompt). Give this or `profile`.
    #[serde(default)]
    pub agent: Option<String>,
    /// A spec 003 profile — read_only, write, verification, design — for a generic worker
    /// with all the profile's tools and no system prompt. Give this or `agent`.
    #[serde(default)]
    pub profile: Option<String>,
    /// What the agent is to do: its prompt, and the description of its task in the queue.
    pub task: String,
    /// claude (default), codex or aider.
    #[serde(default)]
    pub runtime: Option<String>,
    /// The queue task type of its task (default `agent_task`).
    #[serde(default)]
    pub task_type: Option<String>,
    /// Stop it after this many minutes (at most its profile's `max_execution_time`).
    #[serde(default)]
    pub timeout_minutes: Option<i64>,
    /// Where it works: `shared` (default: the coordinator's checkout) or `worktree` (a
    /// git worktree of its own on a new branch `coord/<agent_id>`, with its own port
    /// block; its changes are committed to that branch when it ends).
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// With isolation `worktree`: keep the worktree when it ends (default: removed,
    /// its branch kept when it holds changes).
    #[serde(default)]
    pub keep_worktree: Option<bool>,
}

/// A spawn request checked and resolved to a definition.
#[derive(Debug, Clone)]
pub struct SpawnPlan {
    pub agent_id: String,
    pub definition: AgentDefinition,
    pub runtime: Runtime,
    pub task: String,
    pub task_type: String,
    pub timeout_minutes: Option<i64>,
    pub isolation: Isolation,
    pub keep_worktree: bool,
}

/// The definition of a generic worker of `profile`: all the profile's tools.
pub fn generic_definition(profile: WorkerProfile) -> AgentDefinition {
    AgentDefinition {
        name: format!("{}-worker", profile.name().replace('_', "-")),
        description: format!("A generic {} worker", profile.name()),
        profile,
        profile_from: "profile".into(),
        tools: profile.tools().iter().map(|t| t.to_string()).collect(),
        model: None,
        max_turns: None,
        prompt: String::new(),
        display_name: None,
        runtime: None,
        delegates_to: Vec::new(),
        parent: None,
        children: Vec::new(),
    }
}

/// The identity of a spawned agent: its definition's name and a random suffix.
pub fn agent_id_for(name: &str) -> String {
    format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

/// Checks what a request says on its own (not the definition: the coordinator's
/// workspace has it). Answers the runtime, the task type, and which definition:
/// `Ok(Err(profile))` for a generic worker.
pub fn validate_request(
    req: &SpawnAgentRequest,
) -> CoordResult<(Option<Runtime>, String, Result<String, WorkerProfile>)> {
    let bad = |f: &str, m: String| CoordError::new(ErrorCode::InvalidArgument, m).with_field(f);
    let task = req.task.trim();
    if task.is_empty() {
        return Err(bad("task", "the task is empty".into()));
    }
    if req.task.len() > MAX_TASK_BYTES {
        return Err(bad("task", format!("at most {MAX_TASK_BYTES} bytes")));
    }
    let runtime = match req.runtime.as_deref() {
        None => None,
        Some(r) => {
            Some(Runtime::parse(r).ok_or_else(|| bad("runtime", format!("{r:?}: give claude, codex or aider")))?)
        }
    };
    let task_type = req.task_type.clone().unwrap_or_else(|| DEFAULT_TASK_TYPE.into());
    if let Some(t) = req.timeout_minutes
        && !(1..=24 * 60).contains(&t)
    {
        return Err(bad(
            "timeout_minutes",
            format!("timeout_minutes: {t}: give 1 to 1440 (minutes; the profile's max_execution_time caps it)"),
        ));
    }
    let which = match (&req.agent, &req.profile) {
        (Some(a), None) => {
            let a = a.trim();
            let ok =
                !a.is_empty() && a.len() <= 64 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !ok {
                return Err(bad(
                    "agent",
                    format!("{a:?}: a definition name (letters, digits, - and _)"),
                ));
            }
            Ok(a.to_string())
        }
        (None, Some(p)) => Err(WorkerProfile::parse(p).ok_or_else(|| {
            bad(
                "profile",
                format!("{p:?}: give read_only, write, verification or design"),
            )
        })?),
        (Some(_), Some(_)) => return Err(bad("profile", "give agent or profile, not both".into())),
        (None, None) => {
            return Err(bad(
                "agent",
                "give agent (a definition in .claude/agents) or profile (read_only, write, verification, design)"
                    .into(),
            ));
        }
    };
    if req.keep_worktree == Some(true) && req.isolation != Some(Isolation::Worktree) {
        return Err(bad(
            "keep_worktree",
            "keep_worktree needs isolation \"worktree\" (a shared checkout is never removed)".into(),
        ));
    }
    Ok((runtime, task_type, which))
}

/// `spawn_agent`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpawnAgentResult {
    pub success: bool,
    pub agent_id: String,
    pub task_id: String,
    pub status: SpawnStatus,
    pub depth: u32,
    /// The definition's profile (read_only, write, verification, design).
    pub profile: WorkerProfile,
    /// How the launch was validated: command, model or disabled.
    pub validator: super::preflight::Validator,
    /// Where it works: shared or worktree (its worktree is made when it starts:
    /// get_agent_status shows it).
    #[serde(default)]
    pub isolation: Isolation,
}

/// The longest `get_agent_output` waits for a run to end, in seconds.
pub const MAX_WAIT_SECONDS: u64 = 300;

/// `get_agent_output`'s request.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentOutputRequest {
    /// The spawned agent's id, as `spawn_agent` answered it.
    pub target_agent_id: String,
    /// Wait up to this many seconds (at most 300) for the run to end before answering;
    /// default 0: answer now.
    #[serde(default)]
    #[schemars(range(max = 300))]
    pub wait_seconds: Option<u64>,
}

/// `delegate_task`'s request: a spawn, and how long to wait for its answer. (The spawn's
/// fields are repeated rather than `#[serde(flatten)]`ed: flattening would accept unknown
/// fields, and unknown fields are refused.)
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegateTaskRequest {
    /// The agent definition to run (`.claude/agents/<agent>.md`). Give this or `profile`.
    #[serde(default)]
    pub agent: Option<String>,
    /// A spec 003 profile for a generic worker instead. Give this or `agent`.
    #[serde(default)]
    pub profile: Option<String>,
    /// What it is to do.
    pub task: String,
    /// claude (default), codex or aider.
    #[serde(default)]
    pub runtime: Option<String>,
    /// Stop it after this many minutes (at most its profile's `max_execution_time`).
    #[serde(default)]
    pub timeout_minutes: Option<i64>,
    /// `shared` (default) or `worktree`: a git worktree of its own (as spawn_agent).
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// With isolation `worktree`: keep the worktree when it ends.
    #[serde(default)]
    pub keep_worktree: Option<bool>,
    /// Wait up to this many seconds (default and most 300) for its final answer.
    #[serde(default)]
    #[schemars(range(max = 300))]
    pub wait_seconds: Option<u64>,
}

/// `delegate_task`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DelegateTaskResult {
    pub success: bool,
    pub agent_id: String,
    pub task_id: String,
    /// How its run ended (`running` when the wait ended first).
    pub status: SpawnStatus,
    /// Its final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `get_agent_status`, `get_agent_output` and `stop_agent` name the agent.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentRef {
    /// The spawned agent's id, as `spawn_agent` answered it.
    pub target_agent_id: String,
}

/// `list_spawned_agents`' request.
#[derive(Debug, Clone, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSpawnedAgentsRequest {
    /// Only those starting or running.
    #[serde(default)]
    pub active_only: Option<bool>,
    /// At most this many, newest first (1 to 1000, default 100).
    #[serde(default)]
    pub limit: Option<i64>,
}

/// `list_spawned_agents`' answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListSpawnedAgentsResult {
    pub success: bool,
    pub agents: Vec<AgentStatusResult>,
}

/// `stop_agent`'s request.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopAgentRequest {
    pub target_agent_id: String,
    /// Recorded with the stop.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `get_agent_status`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentStatusResult {
    pub success: bool,
    pub agent_id: String,
    pub parent_agent_id: String,
    pub agent: String,
    pub profile: WorkerProfile,
    pub runtime: Runtime,
    pub depth: u32,
    pub status: SpawnStatus,
    pub task_id: String,
    /// Its task's status in the queue now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_status: Option<crate::queue::TaskStatus>,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    pub deadline_minutes: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub stop_requested: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Where it works: shared or worktree.
    #[serde(default)]
    pub isolation: Isolation,
    /// Its worktree (isolation worktree), and what became of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<IsolatedWorktree>,
}

impl AgentStatusResult {
    pub fn of(a: &SpawnedAgent, task_status: Option<crate::queue::TaskStatus>) -> Self {
        AgentStatusResult {
            success: true,
            agent_id: a.agent_id.clone(),
            parent_agent_id: a.parent_agent_id.clone(),
            agent: a.definition.name.clone(),
            profile: a.definition.profile,
            runtime: a.runtime,
            depth: a.depth,
            status: a.status,
            task_id: a.task_id.clone(),
            task_status,
            created_at: a.created_at,
            started_at: a.started_at,
            ended_at: a.ended_at,
            deadline_minutes: a.deadline_minutes,
            exit_code: a.exit_code,
            error: a.error.clone(),
            stop_requested: a.stop_requested,
            host: a.host.clone(),
            pid: a.pid,
            isolation: a.isolation,
            worktree: a.worktree.clone(),
        }
    }
}

/// `get_agent_output`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentOutputResult {
    pub success: bool,
    pub agent_id: String,
    pub status: SpawnStatus,
    /// Its final answer, once it ended with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tool calls its runtime refused.
    #[serde(default)]
    pub permission_denials: Vec<serde_json::Value>,
    /// The end of its runtime's output so far (at most 16 KiB), when the run's directory
    /// is on the machine answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

/// `stop_agent`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StopAgentResult {
    pub success: bool,
    pub agent_id: String,
    /// Its status after the request: `running` with `stopping:true` while its supervisor
    /// stops it, or how it had already ended.
    pub status: SpawnStatus,
    pub stopping: bool,
}

/// Who may follow or stop a spawned agent: its parent, an administrator, and (to read)
/// the agent itself.
pub fn may_follow(agent: &SpawnedAgent, caller: &str, admin: bool, to_stop: bool) -> CoordResult<()> {
    if admin || agent.parent_agent_id == caller || (!to_stop && agent.agent_id == caller) {
        return Ok(());
    }
    Err(CoordError::new(
        ErrorCode::Forbidden,
        format!(
            "{} was spawned by {}: only it or an administrator may {} it",
            agent.agent_id,
            agent.parent_agent_id,
            if to_stop { "stop" } else { "follow" }
        ),
    ))
}

/// The end of a run's output, at most `max` bytes, cut at a character boundary.
pub fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
