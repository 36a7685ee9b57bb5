//! What a token may do: the intersection of its scopes, its namespace patterns and (for
//! namespace operations) the user's role in that namespace; site administrators using a token
//! with the `admin` scope pass the role check.

/// What a token may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Publish the first version of a new agent.
    PublishNew,
    /// Publish a new version of an existing agent.
    PublishUpdate,
    /// Yank, unyank, deprecate.
    Yank,
    /// Register and revoke publisher keys.
    ManageKeys,
    /// Add, change and remove namespace members.
    ManageMembers,
    /// List, create and revoke the user's API tokens (a token may always revoke itself).
    ManageTokens,
    /// Site administration (only effective for administrators).
    Admin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 7] = [
        Scope::PublishNew,
        Scope::PublishUpdate,
        Scope::Yank,
        Scope::ManageKeys,
        Scope::ManageMembers,
        Scope::ManageTokens,
        Scope::Admin,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::PublishNew => "publish-new",
            Scope::PublishUpdate => "publish-update",
            Scope::Yank => "yank",
            Scope::ManageKeys => "manage-keys",
            Scope::ManageMembers => "manage-members",
            Scope::ManageTokens => "manage-tokens",
            Scope::Admin => "admin",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Parses a comma-separated scope list; an error names the first unknown scope.
pub fn parse_scopes(list: &[String]) -> Result<Vec<Scope>, String> {
    let mut out = Vec::new();
    for s in list {
        let s = s.trim();
        match Scope::parse(s) {
            Some(x) => {
                if !out.contains(&x) {
                    out.push(x);
                }
            }
            None => {
                return Err(format!(
                    "unknown scope `{s}`; known scopes: {}",
                    Scope::ALL.map(Scope::as_str).join(", ")
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Checks a namespace pattern: `*`, a namespace name, or a name prefix followed by `*`.
pub fn check_pattern(p: &str) -> Result<(), String> {
    let body = p.strip_suffix('*').unwrap_or(p);
    let ok = p.len() <= 65
        && body
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && (p == "*" || !body.is_empty());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "namespace pattern `{p}` must be `*`, a namespace name, or a name prefix ending in `*`"
        ))
    }
}

/// Whether a namespace pattern matches a namespace.
pub fn pattern_matches(pattern: &str, namespace: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => namespace.starts_with(prefix),
        None => pattern == namespace,
    }
}

/// Whether every namespace `inner` matches is matched by `outer` (no token mints a wider one).
pub fn pattern_covers(outer: &str, inner: &str) -> bool {
    match outer.strip_suffix('*') {
        Some(prefix) => inner.trim_end_matches('*').starts_with(prefix),
        None => outer == inner,
    }
}

/// A member's role in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything in the namespace.
    Owner,
    /// Publish (new agents and updates) and yank.
    Maintainer,
    /// Publish new versions of existing agents only.
    Publisher,
}

impl Role {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Maintainer => "maintainer",
            Role::Publisher => "publisher",
        }
    }
    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "owner" => Some(Role::Owner),
            "maintainer" => Some(Role::Maintainer),
            "publisher" => Some(Role::Publisher),
            _ => None,
        }
    }
    /// Whether this role grants `scope` in its namespace.
    pub fn grants(self, scope: Scope) -> bool {
        match self {
            Role::Owner => scope != Scope::Admin,
            Role::Maintainer => matches!(
                scope,
                Scope::PublishNew | Scope::PublishUpdate | Scope::Yank
            ),
            Role::Publisher => scope == Scope::PublishUpdate,
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Principal {
    /// User id.
    pub user_id: i64,
    /// User name.
    pub user_name: String,
    /// Site administrator.
    pub is_admin: bool,
    /// Token id.
    pub token_id: i64,
    /// Token scopes.
    pub scopes: Vec<Scope>,
    /// Token namespace patterns.
    pub namespaces: Vec<String>,
    /// When the token expires (ms since the epoch); a token it creates may not outlive it.
    pub expires_at: Option<i64>,
    /// Set for a token minted by trusted publishing (issue 33): it may publish to its one
    /// namespace and nothing else, whatever its user's role.
    pub trusted: Option<TrustedOrigin>,
}

/// Where a trusted-publishing token came from: the OIDC ID token it was exchanged for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedOrigin {
    /// The ID token's `iss`.
    pub issuer: String,
    /// The ID token's `sub`.
    pub subject: String,
}

/// Why an authorization was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// The token lacks the scope.
    Scope(Scope),
    /// The token's namespace patterns do not cover the namespace.
    Namespace(String),
    /// The user is not a member of the namespace.
    NotMember(String),
    /// The user's role does not grant the scope.
    Role(Role, Scope),
    /// Only administrators may do this.
    AdminOnly,
}

impl Principal {
    /// Whether this caller acts as a site administrator (never a trusted-publishing token).
    pub fn acts_as_admin(&self) -> bool {
        self.is_admin && self.scopes.contains(&Scope::Admin) && self.trusted.is_none()
    }

    /// May this caller use `scope` in `namespace`, where the user's role is `role`?
    pub fn authorize(
        &self,
        scope: Scope,
        namespace: &str,
        role: Option<Role>,
    ) -> Result<(), Denied> {
        if self.acts_as_admin() {
            return Ok(());
        }
        // A trusted-publishing token publishes; it never yanks, manages keys or members, or
        // anything else its user's role would allow (its own scopes say so too: this holds
        // even if a row were edited).
        if self.trusted.is_some() && !matches!(scope, Scope::PublishNew | Scope::PublishUpdate) {
            return Err(Denied::Scope(scope));
        }
        if !self.scopes.contains(&scope) {
            return Err(Denied::Scope(scope));
        }
        if !self
            .namespaces
            .iter()
            .any(|p| pattern_matches(p, namespace))
        {
            return Err(Denied::Namespace(namespace.to_string()));
        }
        let Some(role) = role else {
            return Err(Denied::NotMember(namespace.to_string()));
        };
        if !role.grants(scope) {
            return Err(Denied::Role(role, scope));
        }
        Ok(())
    }

    /// May this caller perform an administrator-only action?
    pub fn authorize_admin(&self) -> Result<(), Denied> {
        if self.acts_as_admin() {
            Ok(())
        } else {
            Err(Denied::AdminOnly)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{check_pattern, pattern_covers, pattern_matches};

    #[test]
    fn patterns() {
        assert!(pattern_matches("*", "acme"));
        assert!(pattern_matches("acme", "acme"));
        assert!(!pattern_matches("acme", "acme2"));
        assert!(pattern_matches("acme-*", "acme-labs"));
        assert!(!pattern_matches("acme-*", "acme"));
        assert!(check_pattern("acme-*").is_ok());
        assert!(pattern_covers("*", "acme-*"));
        assert!(pattern_covers("acme-*", "acme-x"));
        assert!(pattern_covers("acme-*", "acme-x*"));
        assert!(!pattern_covers("acme-*", "acme*"));
        assert!(!pattern_covers("acme", "acme*"));
        assert!(pattern_covers("acme", "acme"));
        assert!(check_pattern("").is_err());
        assert!(check_pattern("Acme").is_err());
        assert!(check_pattern("a*b").is_err());
    }
}
