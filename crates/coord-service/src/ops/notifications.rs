//! The security channel: what elevated operations reported, and whether the webhook
//! has it yet.

use crate::Coordinator;
use crate::op::{Http, Operation};
use coord_domain::access::{Access, Effect};
use coord_domain::notifications::{
    ListNotificationsRequest, ListNotificationsResult, NotificationFilter, validate_list,
};
use coord_domain::profiles::{Need, Permission};
use coord_domain::{CoordResult, Identity};
use coord_store::OpCtx;

pub struct ListNotifications;
impl Operation for ListNotifications {
    const NAME: &'static str = "list_notifications";
    const SUMMARY: &'static str = "List security-channel notifications (elevated operations)";
    const DESCRIPTION: &'static str = "List the notifications of the security channel, newest first: every \
        destructive operation an agent ran as an elevated operation of its profile, with its delivery state to \
        the webhook (COORD_SECURITY_WEBHOOK_URL): delivered_at, attempts, last_error. undelivered:true lists only \
        those the webhook has not accepted. Administrators only. Answers {notifications:[...]}.";
    const ACCESS: Access = Access::Agent;
    const EFFECT: Effect = Effect::Read;
    const NEED: Need = Need::admin(Permission::ManageAudit);
    const HTTP: &'static [Http] = &[Http::get("/notifications")];
    const EXAMPLE: &'static str = "{\"undelivered\": true}";
    type Request = ListNotificationsRequest;
    type Response = ListNotificationsResult;
    type Args = NotificationFilter;

    fn validate(_: &Coordinator, _: &Identity, req: ListNotificationsRequest) -> CoordResult<NotificationFilter> {
        validate_list(req)
    }

    async fn execute(c: &Coordinator, ctx: OpCtx, f: NotificationFilter) -> CoordResult<ListNotificationsResult> {
        c.store().list_notifications(ctx, f).await
    }
}
