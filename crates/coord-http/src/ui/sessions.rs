//! The dashboard's browser sessions. A browser never holds the API key: signing in with
//! an operator key (or following `coord ui`'s one-time link) starts a session whose
//! random token travels in an `HttpOnly; SameSite=Strict` cookie, with a second random
//! token the page sends back in `X-CSRF-Token` on every change it asks for. Sessions
//! live in this process's memory (a restart signs everyone out) and expire.

use coord_domain::Caller;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const COOKIE: &str = "coord_ui";
/// How long a sign-in lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// How long `coord ui`'s link may wait to be opened.
pub const LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// Sessions one process keeps (the oldest go first beyond it).
const MAX_SESSIONS: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Who acts: the operator's name, agent type `dashboard`, with an operator credential.
    pub who: Caller,
    pub csrf: String,
    pub expires: Instant,
}

#[derive(Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, Session>>,
    /// One-time sign-in links (`coord ui`): token → who, until when.
    links: Mutex<HashMap<String, (Caller, Instant)>>,
}

impl std::fmt::Debug for Sessions {
    // Tokens are secrets: never in a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sessions")
    }
}

/// 244 random bits from the OS (two v4 UUIDs), as hex.
pub fn random_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

impl Sessions {
    /// Starts a session; answers its cookie token and its CSRF token.
    pub fn start(&self, who: Caller, now: Instant) -> (String, String) {
        let token = random_token();
        let csrf = random_token();
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        live.retain(|_, s| s.expires > now);
        if live.len() >= MAX_SESSIONS
            && let Some(oldest) = live.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        {
            live.remove(&oldest);
        }
        live.insert(
            token.clone(),
            Session {
                who,
                csrf: csrf.clone(),
                expires: now + SESSION_TTL,
            },
        );
        (token, csrf)
    }

    /// The live session of a cookie token.
    pub fn get(&self, token: &str, now: Instant) -> Option<Session> {
        let mut live = self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match live.get(token) {
            Some(s) if s.expires > now => Some(s.clone()),
            Some(_) => {
                live.remove(token);
                None
            }
            None => None,
        }
    }

    pub fn end(&self, token: &str) {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(token);
    }

    /// A one-time sign-in link's token for `who`.
    pub fn link(&self, who: Caller, now: Instant) -> String {
        let token = random_token();
        let mut links = self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        links.retain(|_, (_, until)| *until > now);
        links.insert(token.clone(), (who, now + LINK_TTL));
        token
    }

    /// Spends a link: who it signs in, once.
    pub fn redeem(&self, token: &str, now: Instant) -> Option<Caller> {
        let mut links = self.links.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match links.remove(token) {
            Some((who, until)) if until > now => Some(who),
            _ => None,
        }
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

/// Whether two secrets are equal, in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_expire_and_end() {
        let s = Sessions::default();
        let t0 = Instant::now();
        let (token, csrf) = s.start(Caller::new("ops", "dashboard"), t0);
        assert_ne!(token, csrf);
        assert_eq!(token.len(), 64);
        let got = s.get(&token, t0 + Duration::from_secs(60)).unwrap();
        assert_eq!((got.who.agent_id.as_str(), got.csrf.as_str()), ("ops", csrf.as_str()));
        assert!(s.get(&token, t0 + SESSION_TTL).is_none(), "expired");
        assert!(s.get(&token, t0).is_none(), "an expired session is gone");
        let (token, _) = s.start(Caller::new("ops", "dashboard"), t0);
        s.end(&token);
        assert!(s.get(&token, t0).is_none());
        assert!(s.get("nope", t0).is_none());
    }

    #[test]
    fn links_work_once_and_expire() {
        let s = Sessions::default();
        let t0 = Instant::now();
        let link = s.link(Caller::new("me", "dashboard"), t0);
        assert_eq!(s.redeem(&link, t0).map(|c| c.agent_id), Some("me".to_string()));
        assert!(s.redeem(&link, t0).is_none(), "once");
        let link = s.link(Caller::new("me", "dashboard"), t0);
        assert!(s.redeem(&link, t0 + LINK_TTL).is_none(), "expired");
    }

    #[test]
    fn cookies_and_secrets() {
        let cases = [
            ("coord_ui=abc", Some("abc")),
            ("a=1; coord_ui=abc; b=2", Some("abc")),
            ("coord_uix=abc", None),
            ("", None),
            ("coord_ui", None),
            ("x=coord_ui=abc", None),
        ];
        for (header, want) in cases {
            assert_eq!(cookie(header, COOKIE), want, "{header}");
        }
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
    }
}
