//! Who may use the inbox: the application's [`Authenticate`] turns a
//! request into a [`Principal`] and decides, per item and [`Action`], what
//! that principal may do. Two built-ins authenticate: [`BearerTokens`] from
//! configuration and a [`TrustedHeader`] set by an authenticating proxy.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderName, header};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use tool_runtime::PendingCall;

/// Who made a request: the identity a decision is taken under, with the
/// groups the application's authentication puts them in (what an approval
/// requirement "from a group" counts). The runtime's own type.
///
/// ```
/// use tool_inbox::Principal;
///
/// let alice = Principal::new("alice").in_group("finance");
/// assert_eq!(alice.id(), "alice");
/// assert!(alice.is_in("finance"));
/// ```
pub use tool_runtime::Principal;

/// What a request does with an item, for [`Authenticate::authorize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// List it or read it.
    Read,
    /// Approve a call waiting for approval.
    Approve,
    /// Decline a call waiting for approval or for its output.
    Decline,
    /// Give a call its output without running the tool.
    Respond,
    /// Resume a suspended call with data.
    Resume,
    /// Approve a call with some of its editable arguments changed.
    Edit,
}

impl Action {
    /// `"read"`, `"approve"`, `"decline"`, `"respond"` or `"resume"`.
    ///
    /// ```
    /// assert_eq!(tool_inbox::Action::Resume.as_str(), "resume");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Approve => "approve",
            Action::Decline => "decline",
            Action::Respond => "respond",
            Action::Resume => "resume",
            Action::Edit => "edit",
        }
    }
}

/// What authentication sees of a request: its headers and, when the
/// server was started with connection info
/// (`into_make_service_with_connect_info::<SocketAddr>()`), the peer.
#[derive(Debug, Clone, Copy)]
pub struct RequestHead<'a> {
    /// The request's headers.
    pub headers: &'a HeaderMap,
    /// The address the connection came from, when known.
    pub peer: Option<SocketAddr>,
}

/// Why a request was not authenticated: the inbox answers 401 with this
/// reason, which never quotes a credential.
///
/// ```
/// let refused = tool_inbox::Unauthenticated::new("no bearer token");
/// assert_eq!(refused.to_string(), "no bearer token");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthenticated {
    reason: String,
}

impl Unauthenticated {
    /// A refusal saying `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Unauthenticated {
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Unauthenticated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for Unauthenticated {}

/// The application's authentication and authorization for the inbox.
///
/// `authenticate` runs on every request (the event stream's too);
/// `authorize` on every item a principal lists, reads or decides. An item
/// a principal may not [`Read`](Action::Read) answers 404, as a missing
/// one does, so ids cannot be probed; one it may read but not act on
/// answers 403.
///
/// ```
/// use tool_inbox::{Action, Authenticate, Principal, RequestHead, Unauthenticated};
/// use tool_runtime::PendingCall;
///
/// /// Each team sees the calls whose request context names it.
/// struct Teams;
///
/// impl Authenticate for Teams {
///     async fn authenticate(&self, request: &RequestHead<'_>) -> Result<Principal, Unauthenticated> {
///         let team = request.headers.get("x-team").and_then(|v| v.to_str().ok());
///         team.map(Principal::new).ok_or_else(|| Unauthenticated::new("no x-team header"))
///     }
///
///     fn authorize(&self, principal: &Principal, item: &PendingCall, _action: Action) -> bool {
///         item.head.request_context.get("team").and_then(|t| t.as_str()) == Some(principal.id())
///     }
/// }
/// ```
pub trait Authenticate: Send + Sync + 'static {
    /// The principal making `request`, or why it is refused.
    fn authenticate(
        &self,
        request: &RequestHead<'_>,
    ) -> impl Future<Output = Result<Principal, Unauthenticated>> + Send;

    /// Whether `principal` may do `action` on `item`. Every item, every
    /// action, by default.
    fn authorize(&self, principal: &Principal, item: &PendingCall, action: Action) -> bool {
        let _ = (principal, item, action);
        true
    }
}

/// An [`Authenticate`] whose authorization is the function `authorize`:
/// the built-ins authenticate, this scopes what each principal sees.
///
/// ```
/// use tool_inbox::{Action, Authorized, BearerTokens, Principal};
///
/// let auth = Authorized::new(
///     BearerTokens::new().token("alice-token", Principal::new("alice")),
///     |principal, item, _action| item.head.tool_id.starts_with(principal.id()),
/// );
/// # let _ = auth;
/// ```
pub struct Authorized<A, F> {
    authenticate: A,
    authorize: F,
}

impl<A, F> Authorized<A, F>
where
    A: Authenticate,
    F: Fn(&Principal, &PendingCall, Action) -> bool + Send + Sync + 'static,
{
    /// `authenticate`'s principals, authorized by `authorize`.
    pub fn new(authenticate: A, authorize: F) -> Self {
        Authorized {
            authenticate,
            authorize,
        }
    }
}

impl<A, F> Authenticate for Authorized<A, F>
where
    A: Authenticate,
    F: Fn(&Principal, &PendingCall, Action) -> bool + Send + Sync + 'static,
{
    fn authenticate(
        &self,
        request: &RequestHead<'_>,
    ) -> impl Future<Output = Result<Principal, Unauthenticated>> + Send {
        self.authenticate.authenticate(request)
    }

    fn authorize(&self, principal: &Principal, item: &PendingCall, action: Action) -> bool {
        (self.authorize)(principal, item, action)
    }
}

/// SHA-256 of a secret: what is kept and compared, so that comparisons
/// take the same time whatever the secret's length.
fn fingerprint(secret: &[u8]) -> [u8; 32] {
    Sha256::digest(secret).into()
}

/// Bearer tokens from configuration, each naming its principal: a request
/// carries `Authorization: Bearer <token>`. Several tokens may be valid at
/// once (a rotation adds the new one before removing the old). Tokens are
/// compared in constant time and never logged (`Debug` shows how many
/// there are).
///
/// ```
/// use tool_inbox::{BearerTokens, Principal};
///
/// let tokens = BearerTokens::new()
///     .token("old-token", Principal::new("alice"))
///     .token("new-token", Principal::new("alice"));
/// assert_eq!(format!("{tokens:?}"), "BearerTokens { tokens: 2 }");
/// ```
#[derive(Clone, Default)]
pub struct BearerTokens {
    tokens: Vec<([u8; 32], Principal)>,
}

impl BearerTokens {
    /// No token yet: every request is refused.
    pub fn new() -> Self {
        BearerTokens::default()
    }

    /// Accepts `token` as `principal`.
    #[must_use]
    pub fn token(mut self, token: impl AsRef<str>, principal: Principal) -> Self {
        self.tokens
            .push((fingerprint(token.as_ref().as_bytes()), principal));
        self
    }

    /// The principal of `presented`, comparing it with every token.
    fn principal_of(&self, presented: &str) -> Option<&Principal> {
        let presented = fingerprint(presented.as_bytes());
        let mut found = None;
        for (token, principal) in &self.tokens {
            if bool::from(token.ct_eq(&presented)) {
                found = Some(principal);
            }
        }
        found
    }
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

impl Authenticate for BearerTokens {
    async fn authenticate(&self, request: &RequestHead<'_>) -> Result<Principal, Unauthenticated> {
        let value = request.headers.get(header::AUTHORIZATION).ok_or_else(|| {
            Unauthenticated::new("no Authorization header: send `Authorization: Bearer <token>`")
        })?;
        // The scheme is case-insensitive (RFC 7235).
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.trim_start().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| {
                Unauthenticated::new("the Authorization header is not `Bearer <token>`")
            })?;
        self.principal_of(token)
            .cloned()
            .ok_or_else(|| Unauthenticated::new("the bearer token is not valid"))
    }
}

/// A header naming the principal, set by an authenticating proxy in front
/// of the inbox (`X-Forwarded-User`, `X-Auth-Request-Email`...). It is
/// believed only from the proxy: a request from one of the configured
/// peer addresses, or carrying the secret the proxy adds in another
/// header. Anything else carrying the header is refused, so a client that
/// reaches the inbox directly cannot name itself.
///
/// The peer is known when the server runs with connection info
/// (`router.into_make_service_with_connect_info::<SocketAddr>()`);
/// without it only the secret is accepted.
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use tool_inbox::TrustedHeader;
///
/// let from_proxy = TrustedHeader::new("x-forwarded-user")
///     .peer(IpAddr::V4(Ipv4Addr::LOCALHOST))
///     .secret("x-proxy-secret", "shared-with-the-proxy");
/// # let _ = from_proxy;
/// ```
#[derive(Clone)]
pub struct TrustedHeader {
    header: HeaderName,
    peers: Vec<IpAddr>,
    secret: Option<(HeaderName, [u8; 32])>,
}

impl TrustedHeader {
    /// Principals named by the header `name`, believed from no one yet:
    /// add [`peer`](Self::peer)s or a [`secret`](Self::secret).
    ///
    /// # Panics
    ///
    /// When `name` is not a valid header name (a configuration error).
    pub fn new(name: &str) -> Self {
        TrustedHeader {
            header: HeaderName::try_from(name).expect("a valid header name"),
            peers: Vec::new(),
            secret: None,
        }
    }

    /// Believes the header from the proxy at `address`.
    #[must_use]
    pub fn peer(mut self, address: IpAddr) -> Self {
        self.peers.push(address);
        self
    }

    /// Believes the header on requests whose header `name` carries
    /// `secret` (compared in constant time).
    ///
    /// # Panics
    ///
    /// When `name` is not a valid header name (a configuration error).
    #[must_use]
    pub fn secret(mut self, name: &str, secret: impl AsRef<str>) -> Self {
        let name = HeaderName::try_from(name).expect("a valid header name");
        self.secret = Some((name, fingerprint(secret.as_ref().as_bytes())));
        self
    }

    /// Whether `request` came through the proxy.
    fn came_through_proxy(&self, request: &RequestHead<'_>) -> bool {
        let from_peer = request
            .peer
            .is_some_and(|peer| self.peers.contains(&peer.ip()));
        let with_secret = self.secret.as_ref().is_some_and(|(name, secret)| {
            request
                .headers
                .get(name)
                .is_some_and(|given| bool::from(fingerprint(given.as_bytes()).ct_eq(secret)))
        });
        from_peer || with_secret
    }
}

impl fmt::Debug for TrustedHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrustedHeader")
            .field("header", &self.header)
            .field("peers", &self.peers)
            .field("secret", &self.secret.as_ref().map(|(name, _)| name))
            .finish()
    }
}

impl Authenticate for TrustedHeader {
    async fn authenticate(&self, request: &RequestHead<'_>) -> Result<Principal, Unauthenticated> {
        if !self.came_through_proxy(request) {
            return Err(Unauthenticated::new(format!(
                "the {} header is believed only from the authenticating proxy: this request came from neither a configured peer nor with its secret",
                self.header
            )));
        }
        let name = request
            .headers
            .get(&self.header)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| Unauthenticated::new(format!("no {} header", self.header)))?;
        Ok(Principal::new(name))
    }
}
