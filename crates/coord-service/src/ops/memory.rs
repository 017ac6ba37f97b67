//! Agent memory: episodic (`remember`, `recall`, `memory_feedback`, `forget`),
//! procedural (`record_skill_use`, `get_skills`) and working memory.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::memory::retention::{self, PruneMemoriesRequest, PruneMemoriesResult};
use coord_domain::memory::skills::{
    GetSkillsRequest, GetSkillsResult, RecordSkillUseRequest, RecordSkillUseResult, SkillQuery, SkillUse, validate_get,
    validate_skill_use,
};
use coord_domain::memory::working::{
    GetWorkingMemoryRequest, UpdateWorkingMemoryRequest, WorkingMemoryResult, WorkingUpdate, validate_update,
};
use coord_domain::memory::{
    ForgetRequest, ForgetResult, MemoryFeedbackRequest, MemoryFeedbackResult, NewMemory, RecallQuery, RecallRequest,
    RecallResult, RememberRequest, RememberResult, validate_memory_id, validate_recall, validate_remember,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct Remember;
impl Operation for Remember {
    const NAME: &'static str = "remember";
    const SUMMARY: &'static str = "Store an episodic memory";
    const DESCRIPTION: &'static str = "Store what happened so that later sessions (yours or other agents') can \
        learn from it: event_type (error, fix, decision, test_failure, ...), a one-sentence summary, optional \
        details (string or object), outcome (positive, negative, neutral), lessons (what to do next time) and \
        tags. Use it after a failure you diagnosed, a fix that worked or a decision with reasons. Storing the same \
        event_type and summary again within an hour merges into that memory (merged:true, occurrences counted, \
        lessons and tags added). Answers {success:true, memory_id, merged, occurrences}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/memory")];
    const EXAMPLE: &'static str = "{\"event_type\": \"error\", \"summary\": \"migration 0042 failed: ALTER TYPE ... ADD VALUE cannot run inside a transaction\", \"outcome\": \"negative\", \"lessons\": [\"put enum changes in their own non-transactional migration\"], \"tags\": [\"postgres\", \"migrations\"]}";
    type Request = RememberRequest;
    type Response = RememberResult;
    type Args = NewMemory;

    fn validate(_: &Coordinator, _: &Identity, req: RememberRequest) -> CoordResult<NewMemory> {
        validate_remember(req, crate::new_id())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, m: NewMemory) -> CoordResult<RememberResult> {
        c.store().remember(ctx, m).await
    }
}

pub struct Recall;
impl Operation for Recall {
    const NAME: &'static str = "recall";
    const SUMMARY: &'static str = "Recall the memories relevant to a task";
    const DESCRIPTION: &'static str = "Before starting a task, ask what this project's agents learnt that bears on \
        it: task_description in your own words (name the files, tools, tables and errors involved), optional tags, \
        limit (default 5). Answers {memories:[{memory_type (episodic or procedural), memory_id, content, relevance, \
        ...}]} most relevant first; relevance (0..1) weighs text match, shared tags, recency, lessons and \
        other agents' feedback. Tell coord whether a memory helped with memory_feedback.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::post("/memory/recall")];
    const EXAMPLE: &'static str = "{\"task_description\": \"add a 'refunded' value to the payment_status enum\", \"tags\": [\"postgres\"], \"limit\": 5}";
    type Request = RecallRequest;
    type Response = RecallResult;
    type Args = RecallQuery;

    fn validate(_: &Coordinator, _: &Identity, req: RecallRequest) -> CoordResult<RecallQuery> {
        validate_recall(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, q: RecallQuery) -> CoordResult<RecallResult> {
        c.store().recall(ctx, q, c.config().rank_params()).await
    }
}

pub struct MemoryFeedback;
impl Operation for MemoryFeedback {
    const NAME: &'static str = "memory_feedback";
    const SUMMARY: &'static str = "Say whether a recalled memory helped";
    const DESCRIPTION: &'static str = "After using (or discarding) a memory that recall returned, say whether it \
        was useful for your task: useful memories rank higher for everyone, memories found useless lower. One \
        vote per agent and memory; voting again replaces your vote. Answers {success:true, memory_id, \
        useful_count, not_useful_count}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/memory/feedback").errors(&[404])];
    const EXAMPLE: &'static str = "{\"memory_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\", \"useful\": true}";
    type Request = MemoryFeedbackRequest;
    type Response = MemoryFeedbackResult;
    type Args = (String, bool);

    fn validate(_: &Coordinator, _: &Identity, req: MemoryFeedbackRequest) -> CoordResult<(String, bool)> {
        Ok((validate_memory_id(&req.memory_id)?, req.useful))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (id, useful): (String, bool)) -> CoordResult<MemoryFeedbackResult> {
        c.store().memory_feedback(ctx, id, useful).await
    }
}

pub struct Forget;
impl Operation for Forget {
    const NAME: &'static str = "forget";
    const SUMMARY: &'static str = "Delete a memory";
    const DESCRIPTION: &'static str = "Delete a memory that is wrong or harmful (an outdated decision is better \
        superseded by a newer memory, which ranks above it). Only its author or an administrator may. Answers \
        {success:true, memory_id}; not_found for an unknown id, forbidden for another agent's memory.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/memory/forget").errors(&[403, 404])];
    const EXAMPLE: &'static str = "{\"memory_id\": \"5b0c6a1e-8f2d-4c1a-9a57-3f7e2d1c0b9a\"}";
    type Request = ForgetRequest;
    type Response = ForgetResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: ForgetRequest) -> CoordResult<String> {
        validate_memory_id(&req.memory_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, id: String) -> CoordResult<ForgetResult> {
        // An administrator: an operator key, or a profile that manages the audit trail
        // (implied at trust 4).
        let admin = ctx.audit_admin;
        c.store().forget_memory(ctx, id, admin).await
    }
}

pub struct PruneMemories;
impl Operation for PruneMemories {
    const NAME: &'static str = "prune_memories";
    const SUMMARY: &'static str = "Remove memories nobody has met for the retention period";
    const DESCRIPTION: &'static str = "Remove episodic memories last seen more than older_than_days ago (default: \
        the server's retention, 365 days) — except those whose votes say they helped more often than not; skills \
        stay. At most 1000 per call, oldest first (more:true says to call again); dry_run only counts. For \
        administrators (trust 4, an operator key); coord serve runs it every hour. Answers {success:true, cutoff, \
        pruned, kept_useful, more, dry_run}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManageAudit);
    const HTTP: &'static [Http] = &[Http::post("/memory/prune")];
    const EXAMPLE: &'static str = "{\"older_than_days\": 180, \"dry_run\": true}";
    type Request = PruneMemoriesRequest;
    type Response = PruneMemoriesResult;
    type Args = retention::PruneMemories;

    fn validate(c: &Coordinator, _: &Identity, req: PruneMemoriesRequest) -> CoordResult<retention::PruneMemories> {
        retention::validate_prune(req, c.config().memory_retention_days)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, p: retention::PruneMemories) -> CoordResult<PruneMemoriesResult> {
        c.store().prune_memories(ctx, p).await
    }
}

pub struct RecordSkillUse;
impl Operation for RecordSkillUse {
    const NAME: &'static str = "record_skill_use";
    const SUMMARY: &'static str = "Count a use of a skill";
    const DESCRIPTION: &'static str = "Record that you used a skill (a reusable technique, in words) for a kind \
        of task, and whether it worked: its effectiveness (the 95% lower bound of its success rate, honest about \
        few uses) ranks it in get_skills and recall. complete_work with skill does the same for a queue task. \
        Answers {success:true, memory_id, skill, task_type, successes, failures, effectiveness, ...}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/memory/skills")];
    const EXAMPLE: &'static str = "{\"skill\": \"run the flaky test alone with --test-threads=1 and RUST_LOG=debug\", \"task_type\": \"flaky-test\", \"success\": true}";
    type Request = RecordSkillUseRequest;
    type Response = RecordSkillUseResult;
    type Args = SkillUse;

    fn validate(_: &Coordinator, _: &Identity, req: RecordSkillUseRequest) -> CoordResult<SkillUse> {
        validate_skill_use(req, crate::new_id())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, s: SkillUse) -> CoordResult<RecordSkillUseResult> {
        c.store().record_skill_use(ctx, s).await
    }
}

pub struct GetSkills;
impl Operation for GetSkills {
    const NAME: &'static str = "get_skills";
    const SUMMARY: &'static str = "The skills that worked for a kind of task";
    const DESCRIPTION: &'static str = "List the skills recorded for a task_type, most effective first \
        (effectiveness is the 95% lower bound of the success rate, so one lucky success does not outrank a \
        proven skill), with their counts. Answers {skills:[{skill, successes, failures, uses, success_rate, \
        effectiveness, ...}]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/memory/skills")];
    const EXAMPLE: &'static str = "{\"task_type\": \"flaky-test\"}";
    type Request = GetSkillsRequest;
    type Response = GetSkillsResult;
    type Args = SkillQuery;

    fn validate(_: &Coordinator, _: &Identity, req: GetSkillsRequest) -> CoordResult<SkillQuery> {
        validate_get(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, q: SkillQuery) -> CoordResult<GetSkillsResult> {
        c.store().get_skills(ctx, q).await
    }
}

pub struct UpdateWorkingMemory;
impl Operation for UpdateWorkingMemory {
    const NAME: &'static str = "update_working_memory";
    const SUMMARY: &'static str = "Write entries into this session's working memory";
    const DESCRIPTION: &'static str = "Keep your current task's context with coord, so that it survives your \
        own context compaction: entries [{key, kind (task, plan, decision, finding, error, file, note), content, \
        critical}]. Writing a key again replaces it; an empty content removes it. Over the token budget, older \
        non-critical entries are shortened, then folded into a digest (originals kept); critical and recent \
        entries stay verbatim. Scoped to your session; archived when it ends. Answers the context like \
        get_working_memory.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::COORDINATE;
    const HTTP: &'static [Http] = &[Http::post("/memory/working").errors(&[404])];
    const EXAMPLE: &'static str = "{\"entries\": [{\"key\": \"task\", \"kind\": \"task\", \"content\": \"move sessions from Redis to Postgres\", \"critical\": true}, {\"key\": \"finding-1\", \"kind\": \"finding\", \"content\": \"session ids are UUIDv7\"}]}";
    type Request = UpdateWorkingMemoryRequest;
    type Response = WorkingMemoryResult;
    type Args = WorkingUpdate;

    fn validate(c: &Coordinator, _: &Identity, req: UpdateWorkingMemoryRequest) -> CoordResult<WorkingUpdate> {
        validate_update(req, c.config().working_memory_budget)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, u: WorkingUpdate) -> CoordResult<WorkingMemoryResult> {
        c.store().update_working_memory(ctx, u).await
    }
}

pub struct GetWorkingMemory;
impl Operation for GetWorkingMemory {
    const NAME: &'static str = "get_working_memory";
    const SUMMARY: &'static str = "Read this session's working memory";
    const DESCRIPTION: &'static str = "Read your session's working memory (after your own context was compacted, \
        or to resume): the entries oldest first, tokens now and before compaction, the budget, and what was \
        compressed. include_originals adds the full text of compressed and folded entries. Answers {success:true, \
        session_id, budget, tokens, tokens_before, over_budget, entries, compressed}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::READ;
    const HTTP: &'static [Http] = &[Http::get("/memory/working").errors(&[404])];
    const EXAMPLE: &'static str = "{}";
    type Request = GetWorkingMemoryRequest;
    type Response = WorkingMemoryResult;
    type Args = bool;

    fn validate(_: &Coordinator, _: &Identity, req: GetWorkingMemoryRequest) -> CoordResult<bool> {
        Ok(req.include_originals.unwrap_or(false))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, originals: bool) -> CoordResult<WorkingMemoryResult> {
        c.store()
            .get_working_memory(ctx, c.config().working_memory_budget, originals)
            .await
    }
}
