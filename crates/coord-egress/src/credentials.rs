//! Who a proxy request comes from: `Proxy-Authorization: Basic` with the agent id as the
//! user name and a secret only that agent was given as the password.

use async_trait::async_trait;
use base64::Engine as _;
use coord_domain::Caller;
use coord_domain::access::{Credential, Principal};
use coord_service::Server;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// Turns a presented (user, password) into the principal requests run as; `None`
/// refuses the request (407).
#[async_trait]
pub trait Credentials: Send + Sync {
    async fn principal(&self, user: &str, password: &str) -> Option<Principal>;
}

/// The user and password of a `Proxy-Authorization: Basic ...` header value.
pub fn basic(header: &str) -> Option<(String, String)> {
    let (scheme, value) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(value.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Per-run secrets: one random token per sandboxed agent (`coord sandbox run`), never
/// stored. A token is valid only with the agent id it was issued to.
#[derive(Default)]
pub struct RunTokens {
    issued: std::sync::Mutex<Vec<(String, Caller)>>,
}

impl RunTokens {
    /// A new 122-bit random token for `caller`.
    pub fn issue(&self, caller: Caller) -> String {
        let token = uuid::Uuid::new_v4().simple().to_string();
        self.issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((token.clone(), caller));
        token
    }
}

#[async_trait]
impl Credentials for RunTokens {
    async fn principal(&self, user: &str, password: &str) -> Option<Principal> {
        let issued = self.issued.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Every token is compared, in constant time each.
        let found = issued
            .iter()
            .filter(|(token, _)| bool::from(token.as_bytes().ct_eq(password.as_bytes())))
            .map(|(_, caller)| caller.clone())
            .next_back()?;
        (found.agent_id == user).then(|| Principal::new(found, Credential::Bound))
    }
}

/// Managed API keys (`coord key issue`): the key is the password, and the user must
/// be the agent it is bound to.
pub struct ManagedKeys(pub Arc<dyn Server>);

#[async_trait]
impl Credentials for ManagedKeys {
    async fn principal(&self, user: &str, password: &str) -> Option<Principal> {
        match self.0.authenticate_key(password).await {
            Ok(Some((caller, origin))) if caller.agent_id == user => {
                Some(Principal::new(caller, Credential::Bound).with_origin(Some(origin)))
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e.message, "proxy: a key could not be checked");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_headers() {
        let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            basic(&format!("Basic {}", enc("a:b:c"))),
            Some(("a".into(), "b:c".into()))
        );
        assert_eq!(
            basic(&format!("basic  {}", enc("a:"))),
            Some(("a".into(), String::new()))
        );
        assert_eq!(basic(&format!("Bearer {}", enc("a:b"))), None);
        assert_eq!(basic("Basic !!!"), None);
        assert_eq!(basic(&format!("Basic {}", enc("nocolon"))), None);
    }

    #[tokio::test]
    async fn a_token_works_only_for_its_agent() {
        let t = RunTokens::default();
        let a = t.issue(Caller::new("agent-a", "sandbox"));
        let b = t.issue(Caller::new("agent-b", "sandbox"));
        assert_eq!(t.principal("agent-a", &a).await.unwrap().caller.agent_id, "agent-a");
        assert!(t.principal("agent-b", &a).await.is_none(), "A's token with B's name");
        assert!(t.principal("agent-a", &b).await.is_none());
        assert!(t.principal("agent-a", "").await.is_none());
        assert!(t.principal("agent-a", &a[..10]).await.is_none());
    }
}
