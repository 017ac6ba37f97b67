//! Managed API keys: HTTP credentials bound to an identity. The secret is returned once
//! and stored only as a hash.

use crate::Coordinator;
use crate::op::{Http, Input, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::keys::{
    CreateApiKeyRequest, CreateApiKeyResult, KEY_PREFIX, ListApiKeysResult, NewApiKey, RevokeApiKeyRequest,
    RevokeApiKeyResult, validate_key_id, validate_new_key,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordResult, Empty, Identity};
use coord_store::OpCtx;

pub struct CreateApiKey;
impl Operation for CreateApiKey {
    const NAME: &'static str = "create_api_key";
    const SUMMARY: &'static str =
        "Create an API key bound to an identity (operator keys only); the secret is shown once";
    const DESCRIPTION: &'static str = "Create an API key for a cloud agent or CI job, bound to one identity (whose \
        profile applies: an agent type with no default profile gets least privilege) \
        (bound_agent_id, bound_agent_type), optionally expiring (expires_in_minutes) and issued for one cloud \
        session (session_id) or task (task_id), which every audit row the key causes records (such a key must \
        expire within 24 h, 1440 minutes). Needs an operator \
        key or a local process. Answers {success:true, key_id, api_key, agent_id, agent_type, expires_at}; api_key \
        is shown only this once.";
    const ACCESS: Access = Access::Operator;
    const EFFECT: Effect = Effect::Write;
    const NEED: Need = Need::admin(Permission::ManageKeys);
    const HTTP: &'static [Http] = &[Http::post("/keys")];
    const EXAMPLE: &'static str = "{\"bound_agent_id\": \"codex_cloud-T-42\", \"bound_agent_type\": \"codex_cloud\", \"expires_in_minutes\": 120, \"task_id\": \"T-42\"}";
    type Request = CreateApiKeyRequest;
    type Response = CreateApiKeyResult;
    // The secret travels beside the validated key; only its hash reaches the store.
    type Args = (NewApiKey, String);

    fn validate(_: &Coordinator, _: &Identity, req: CreateApiKeyRequest) -> CoordResult<Self::Args> {
        // The request holds no secret, so it is safe to audit as given.
        let secret = format!(
            "{KEY_PREFIX}{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let key_id = format!("key_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let key = validate_new_key(req, key_id, &secret)?;
        Ok((key, secret))
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (key, secret): Self::Args) -> CoordResult<CreateApiKeyResult> {
        let info = c.store().create_api_key(ctx, key).await?;
        Ok(CreateApiKeyResult {
            success: true,
            key_id: info.key_id,
            api_key: secret,
            agent_id: info.agent_id,
            agent_type: info.agent_type,
            expires_at: info.expires_at,
            session_id: info.session_id,
            task_id: info.task_id,
        })
    }
}

pub struct ListApiKeys;
impl Operation for ListApiKeys {
    const NAME: &'static str = "list_api_keys";
    const SUMMARY: &'static str = "List API keys, without secrets (operator keys only)";
    const DESCRIPTION: &'static str = "List the managed API keys without their secrets: key_id, bound identity, \
        creator, creation, expiry and revocation times. Needs an operator key or a local process. Answers \
        {success:true, keys:[...]}.";
    const ACCESS: Access = Access::Operator;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::admin(Permission::ManageKeys);
    const HTTP: &'static [Http] = &[Http::get("/keys").input(Input::None)];
    type Request = Empty;
    type Response = ListApiKeysResult;
    type Args = ();

    fn validate(_: &Coordinator, _: &Identity, _: Empty) -> CoordResult<()> {
        Ok(())
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, (): ()) -> CoordResult<ListApiKeysResult> {
        c.store().list_api_keys(ctx).await
    }
}

pub struct RevokeApiKey;
impl Operation for RevokeApiKey {
    const NAME: &'static str = "revoke_api_key";
    const SUMMARY: &'static str = "Revoke an API key (operator keys only)";
    const DESCRIPTION: &'static str = "Revoke a managed API key by key_id: requests with it are refused from now \
        on. Revoking twice succeeds; an unknown key_id is not_found. Needs an operator key or a local process. \
        Answers {success:true, key_id}.";
    const ACCESS: Access = Access::Operator;
    const EFFECT: Effect = Effect::Destructive;
    const NEED: Need = Need::admin(Permission::ManageKeys);
    const HTTP: &'static [Http] = &[Http::post("/keys/revoke").errors(&[404])];
    const EXAMPLE: &'static str = "{\"key_id\": \"key_0123456789ab\"}";
    type Request = RevokeApiKeyRequest;
    type Response = RevokeApiKeyResult;
    type Args = String;

    fn validate(_: &Coordinator, _: &Identity, req: RevokeApiKeyRequest) -> CoordResult<String> {
        validate_key_id(&req.key_id)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, key_id: String) -> CoordResult<RevokeApiKeyResult> {
        c.store().revoke_api_key(ctx, key_id).await
    }
}
