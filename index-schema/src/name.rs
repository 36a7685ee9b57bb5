//! Agent names, references, digests and floor handles.
//!
//! - [`AgentName`]: `publisher/agent`. Each part is ASCII `[a-z0-9][a-z0-9_-]{0,63}`. Input is
//!   accepted in any ASCII case and normalized to lowercase, so `Acme/Coder` and `acme/coder`
//!   are the same name (names compare case-insensitively, as DESIGN.md requires). Path
//!   separators, `\`, `..`, whitespace and control characters are refused (the Switchboard
//!   path-traversal rules), because names become directory names in the client's cache and
//!   repository names on the hub. Reserved words are refused: [`RESERVED_PUBLISHERS`] for the
//!   publisher part and [`RESERVED_PATH_NAMES`] (Windows device names) for both parts.
//! - [`Reference`]: `[host[:port]/]publisher/agent[@selector]`, what `ofc pull` and blueprints
//!   accept. The host is detected as Docker does: the first of three segments is a host when it
//!   contains `.` or `:`, starts with `[`, or is `localhost`.
//! - [`VersionSelector`]: nothing (latest), a semver requirement (`^1.2`, `~1`, `>=1, <2`, `*`), an
//!   exact version (`1.2.3` or `=1.2.3`) or a digest (`sha256:<64 hex>`). Note that a bare `1.2.3`
//!   pins that exact version here, while semver alone would read it as `^1.2.3`.
//! - [`Digest`]: `sha256:<64 lowercase hex>`, the content address of blobs and manifests.
//! - [`AgentHandle`]: `@name`, the handle an agent answers to on a floor. `@user`,
//!   `@floor-manager`, `@all`, `@here`, `@admin`, `@ofc`, `@tool-…` and a few more are reserved
//!   ([`AgentHandle::is_reserved`]); they parse (wire messages use them) but no published or
//!   registered agent may take them.
//!
//! Every type here serializes as its text form and refuses invalid text on deserialization with
//! a message that says what is wrong.

use std::fmt;
use std::str::FromStr;

use semver::{Op, Version, VersionReq};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// Longest publisher, agent or handle name, in characters.
pub const MAX_NAME_PART_LEN: usize = 64;

/// Longest reference text accepted by [`Reference::parse`].
pub const MAX_REFERENCE_LEN: usize = 512;

/// Longest version selector accepted after `@`.
pub const MAX_SELECTOR_LEN: usize = 256;

/// Publisher names no account may take: hub routes and path prefixes (`api`, `v2`, `registry`,
/// `floors`, …), words that would let a publisher pass as the hub or its staff (`ofc`, `admin`,
/// `official`, `security`, …) and `localhost`, which a reference would read as a host.
pub const RESERVED_PUBLISHERS: &[&str] = &[
    "about",
    "account",
    "accounts",
    "admin",
    "administrator",
    "agents",
    "anonymous",
    "api",
    "assets",
    "blobs",
    "docs",
    "floor",
    "floors",
    "help",
    "hub",
    "keys",
    "library",
    "localhost",
    "login",
    "logout",
    "manifests",
    "namespaces",
    "null",
    "ofc",
    "official",
    "registry",
    "root",
    "search",
    "security",
    "settings",
    "signup",
    "static",
    "support",
    "system",
    "tokens",
    "undefined",
    "user",
    "users",
    "v1",
    "v2",
    "www",
];

/// Names refused for both parts of an agent name because they are device names on Windows and
/// cannot be directory names there (the client caches agents under `publisher/agent`).
pub const RESERVED_PATH_NAMES: &[&str] = &[
    "aux", "con", "nul", "prn", "com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8",
    "com9", "lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9",
];

/// Floor handles (without `@`) that belong to the floor itself, never to a published agent:
/// the floor's own participants, and names people read as addressing everyone or the system
/// (`@all`, `@here`, `@admin`…), which an agent must not be able to take.
pub const RESERVED_HANDLES: &[&str] = &[
    "user",
    "floor-manager",
    "ofc",
    "admin",
    "administrator",
    "all",
    "everyone",
    "here",
    "channel",
    "system",
    "root",
    "moderator",
];

/// Handle prefixes reserved for the floor (`@tool-…` names tool activity).
pub const RESERVED_HANDLE_PREFIXES: &[&str] = &["tool-"];

/// Which kind of name an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    /// The part before the `/`.
    Publisher,
    /// The part after the `/`.
    Agent,
    /// A floor handle (after the `@`).
    Handle,
}

impl fmt::Display for PartKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Publisher => "publisher",
            Self::Agent => "agent name",
            Self::Handle => "handle",
        })
    }
}

/// What is wrong with the characters of a name part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartProblem {
    /// A space character.
    #[error("contains a space")]
    Space,
    /// Whitespace other than a space.
    #[error("contains whitespace")]
    Whitespace,
    /// A control character.
    #[error("contains a control character")]
    Control,
    /// A backslash.
    #[error("contains a backslash")]
    Backslash,
    /// A forward slash.
    #[error("contains `/`")]
    Slash,
    /// Two dots in a row.
    #[error("contains `..`")]
    DotDot,
    /// Starts with something other than a letter or digit.
    #[error("must start with a letter or a digit")]
    BadStart,
    /// Any other character outside `[a-z0-9_-]`.
    #[error("contains {0:?}; only a-z, 0-9, `-` and `_` are allowed")]
    BadChar(char),
}

/// Why a name, reference, digest or handle was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// A part is empty.
    #[error("{part} is empty")]
    Empty {
        /// Which part.
        part: PartKind,
    },
    /// A part contains something it must not.
    #[error("{part} `{value}` {problem}")]
    InvalidPart {
        /// Which part.
        part: PartKind,
        /// The offending text (escaped, shortened).
        value: String,
        /// What is wrong.
        problem: PartProblem,
    },
    /// A part is longer than [`MAX_NAME_PART_LEN`].
    #[error("{part} `{value}` is {len} characters long, more than the limit of {max}")]
    TooLong {
        /// Which part.
        part: PartKind,
        /// The offending text (escaped, shortened).
        value: String,
        /// Its length in characters.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A reserved word.
    #[error("{part} `{value}` is reserved")]
    Reserved {
        /// Which part.
        part: PartKind,
        /// The reserved word.
        value: String,
    },
    /// No `/` between publisher and agent.
    #[error("`{input}` is not an agent name: expected `publisher/agent`")]
    MissingSlash {
        /// The input (escaped, shortened).
        input: String,
    },
    /// More than one `/`.
    #[error("`{input}` has more than one `/`: an agent name is exactly `publisher/agent`")]
    TooManySlashes {
        /// The input (escaped, shortened).
        input: String,
    },
    /// A handle without its leading `@`.
    #[error("handle `{input}` must start with `@`")]
    HandleMissingAt {
        /// The input (escaped, shortened).
        input: String,
    },
    /// A bad hub host in a reference.
    #[error("hub host `{host}` {problem}")]
    InvalidHost {
        /// The host text (escaped, shortened).
        host: String,
        /// What is wrong.
        problem: String,
    },
    /// A reference that names a host but no `publisher/agent` after it.
    #[error("reference `{input}` names hub `{host}` but no `publisher/agent` after it")]
    MissingPublisher {
        /// The input (escaped, shortened).
        input: String,
        /// The host it named.
        host: String,
    },
    /// A reference longer than [`MAX_REFERENCE_LEN`].
    #[error("reference is {len} bytes long, more than the limit of {max}")]
    ReferenceTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A bad version selector after `@`.
    #[error(
        "version selector `{selector}` {problem}; expected a version (`1.2.3`), a requirement \
         (`^1.2`, `>=1, <2`, `*`) or a digest (`sha256:<64 hex>`)"
    )]
    InvalidSelector {
        /// The selector text (escaped, shortened).
        selector: String,
        /// What is wrong.
        problem: String,
    },
    /// A bad digest.
    #[error("digest `{value}` {problem}")]
    InvalidDigest {
        /// The digest text (escaped, shortened).
        value: String,
        /// What is wrong.
        problem: String,
    },
}

/// Renders user input for an error message: escaped (no raw control characters reach a
/// terminal) and shortened to 80 characters.
pub(crate) fn shown(s: &str) -> String {
    const MAX: usize = 80;
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX {
            out.push('…');
            break;
        }
        match c {
            '"' | '\'' => out.push(c),
            _ => out.extend(c.escape_debug()),
        }
    }
    out
}

fn check_part(s: &str, part: PartKind) -> Result<String, NameError> {
    if s.is_empty() {
        return Err(NameError::Empty { part });
    }
    let invalid = |problem| NameError::InvalidPart {
        part,
        value: shown(s),
        problem,
    };
    for c in s.chars() {
        let problem = match c {
            ' ' => PartProblem::Space,
            '\\' => PartProblem::Backslash,
            '/' => PartProblem::Slash,
            c if c.is_control() => PartProblem::Control,
            c if c.is_whitespace() => PartProblem::Whitespace,
            _ => continue,
        };
        return Err(invalid(problem));
    }
    if s.contains("..") {
        return Err(invalid(PartProblem::DotDot));
    }
    let len = s.chars().count();
    if len > MAX_NAME_PART_LEN {
        return Err(NameError::TooLong {
            part,
            value: shown(s),
            len,
            max: MAX_NAME_PART_LEN,
        });
    }
    if !s.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(invalid(PartProblem::BadStart));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(invalid(PartProblem::BadChar(c)));
    }
    Ok(s.to_ascii_lowercase())
}

/// Checks a publisher name and returns it in lowercase.
pub fn check_publisher(s: &str) -> Result<String, NameError> {
    let p = check_part(s, PartKind::Publisher)?;
    if RESERVED_PUBLISHERS.contains(&p.as_str()) || RESERVED_PATH_NAMES.contains(&p.as_str()) {
        return Err(NameError::Reserved {
            part: PartKind::Publisher,
            value: p,
        });
    }
    Ok(p)
}

/// Checks the agent part of a name and returns it in lowercase.
pub fn check_agent(s: &str) -> Result<String, NameError> {
    let a = check_part(s, PartKind::Agent)?;
    if RESERVED_PATH_NAMES.contains(&a.as_str()) {
        return Err(NameError::Reserved {
            part: PartKind::Agent,
            value: a,
        });
    }
    Ok(a)
}

/// An agent's name on the hub: `publisher/agent`, both parts lowercase.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentName {
    publisher: String,
    agent: String,
}

impl AgentName {
    /// Builds a name from its two parts (any ASCII case; stored lowercase).
    pub fn new(publisher: &str, agent: &str) -> Result<Self, NameError> {
        Ok(Self {
            publisher: check_publisher(publisher)?,
            agent: check_agent(agent)?,
        })
    }

    /// Parses `publisher/agent`.
    pub fn parse(s: &str) -> Result<Self, NameError> {
        let Some((publisher, agent)) = s.split_once('/') else {
            return Err(NameError::MissingSlash { input: shown(s) });
        };
        if agent.contains('/') {
            return Err(NameError::TooManySlashes { input: shown(s) });
        }
        Self::new(publisher, agent)
    }

    /// The publisher (namespace) part.
    pub fn publisher(&self) -> &str {
        &self.publisher
    }

    /// The agent part.
    pub fn agent(&self) -> &str {
        &self.agent
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.publisher, self.agent)
    }
}

impl FromStr for AgentName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A `sha256:` content digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The only algorithm ofc uses.
    pub const ALGORITHM: &'static str = "sha256";

    /// The SHA-256 digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// A digest from its raw 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The 64 lowercase hex digits, without the `sha256:` prefix.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// True when `bytes` hash to this digest.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        Self::of(bytes) == *self
    }

    /// Parses `sha256:<64 lowercase hex>`.
    pub fn parse(s: &str) -> Result<Self, NameError> {
        let err = |problem: String| NameError::InvalidDigest {
            value: shown(s),
            problem,
        };
        let Some(hex_part) = s.strip_prefix("sha256:") else {
            return Err(err("must start with `sha256:`".into()));
        };
        if let Some(c) = hex_part
            .chars()
            .find(|c| !c.is_ascii_hexdigit() || c.is_ascii_uppercase())
        {
            return Err(err(if c.is_ascii_hexdigit() {
                "must be lowercase hex".into()
            } else {
                format!("contains {c:?}, which is not a hex digit")
            }));
        }
        if hex_part.len() != 64 {
            return Err(err(format!(
                "has {} hex digits, a sha256 digest has 64",
                hex_part.len()
            )));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut bytes)
            .map_err(|e| err(format!("is not valid hex: {e}")))?;
        Ok(Self(bytes))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Which version of an agent a [`Reference`] asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionSelector {
    /// No selector (or `@latest`): the highest version that is not a pre-release and not yanked;
    /// when there is none, the highest non-yanked pre-release (see [`crate::version::select`]).
    Latest,
    /// A semver requirement, such as `^1.2`, `~1`, `>=1, <2` or `*`.
    Req(VersionReq),
    /// Exactly this version (`1.2.3` or `=1.2.3`).
    Exact(Version),
    /// Exactly the version whose signed manifest has this digest.
    Digest(Digest),
}

impl VersionSelector {
    /// Parses the text after `@`.
    pub fn parse(s: &str) -> Result<Self, NameError> {
        let err = |problem: String| NameError::InvalidSelector {
            selector: shown(s),
            problem,
        };
        if s.is_empty() {
            return Err(err("is empty".into()));
        }
        if s.len() > MAX_SELECTOR_LEN {
            return Err(err(format!(
                "is {} bytes long, more than the limit of {MAX_SELECTOR_LEN}",
                s.len()
            )));
        }
        if s == "latest" {
            return Ok(Self::Latest);
        }
        if s.starts_with("sha256:") {
            return Digest::parse(s).map(Self::Digest);
        }
        if let Ok(v) = Version::parse(s.strip_prefix('=').unwrap_or(s)) {
            return Ok(Self::Exact(v));
        }
        let sel = VersionReq::parse(s)
            .map(Self::from_req)
            .map_err(|e| err(format!("is not valid: {e}")))?;
        // semver prints requirements in a longer normal form (`1,2` → `^1, ^2`); the printed
        // form must parse again, so the limit applies to it too.
        let printed = sel.to_string().len();
        if printed > MAX_SELECTOR_LEN {
            return Err(err(format!(
                "is {printed} bytes long once normalized, more than the limit of {MAX_SELECTOR_LEN}"
            )));
        }
        Ok(sel)
    }

    /// A requirement selector; a requirement that names one exact version (`=1.2.3`) becomes
    /// [`VersionSelector::Exact`], so that every selector has one text form.
    pub fn from_req(req: VersionReq) -> Self {
        if let [c] = req.comparators.as_slice()
            && let (Op::Exact, Some(minor), Some(patch)) = (c.op, c.minor, c.patch)
        {
            return Self::Exact(Version {
                major: c.major,
                minor,
                patch,
                pre: c.pre.clone(),
                build: semver::BuildMetadata::EMPTY,
            });
        }
        Self::Req(req)
    }

    /// True for [`VersionSelector::Latest`].
    pub fn is_latest(&self) -> bool {
        matches!(self, Self::Latest)
    }

    /// Whether a version satisfies this selector. A digest selector cannot be decided from the
    /// version alone and returns `false`. `Latest` matches any version that is not a pre-release
    /// (whether it *picks* a pre-release depends on the other versions: see
    /// [`crate::version::select`]).
    pub fn matches_version(&self, v: &Version) -> bool {
        match self {
            Self::Latest => v.pre.is_empty(),
            Self::Req(r) => r.matches(v),
            Self::Exact(e) => e == v,
            Self::Digest(_) => false,
        }
    }
}

impl fmt::Display for VersionSelector {
    /// The text after `@`; empty for [`VersionSelector::Latest`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Latest => Ok(()),
            Self::Req(r) => write!(f, "{r}"),
            Self::Exact(v) => write!(f, "{v}"),
            Self::Digest(d) => write!(f, "{d}"),
        }
    }
}

/// What `ofc pull` and blueprints name: `[host[:port]/]publisher/agent[@selector]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    host: Option<String>,
    name: AgentName,
    selector: VersionSelector,
}

impl Reference {
    /// The latest version of `name` on the default hub.
    pub fn new(name: AgentName) -> Self {
        Self {
            host: None,
            name,
            selector: VersionSelector::Latest,
        }
    }

    /// This reference on a given hub host (`hub.example.com` or `hub.example.com:8443`).
    pub fn with_host(mut self, host: &str) -> Result<Self, NameError> {
        self.host = Some(check_host(host)?);
        Ok(self)
    }

    /// This reference with another selector.
    pub fn with_selector(mut self, selector: VersionSelector) -> Self {
        self.selector = selector;
        self
    }

    /// Parses a reference.
    pub fn parse(s: &str) -> Result<Self, NameError> {
        if s.len() > MAX_REFERENCE_LEN {
            return Err(NameError::ReferenceTooLong {
                len: s.len(),
                max: MAX_REFERENCE_LEN,
            });
        }
        let (path, selector) = match s.split_once('@') {
            Some((p, sel)) => (p, VersionSelector::parse(sel)?),
            None => (s, VersionSelector::Latest),
        };
        let (host, name_text) = match path.split_once('/') {
            Some((first, rest)) if is_host_like(first) => {
                let host = check_host(first)?;
                if !rest.contains('/') {
                    return Err(NameError::MissingPublisher {
                        input: shown(s),
                        host,
                    });
                }
                (Some(host), rest)
            }
            _ => (None, path),
        };
        let r = Self {
            host,
            name: AgentName::parse(name_text)?,
            selector,
        };
        // The printed (normalized) form must parse again, so it must fit the limit too.
        let printed = r.to_string().len();
        if printed > MAX_REFERENCE_LEN {
            return Err(NameError::ReferenceTooLong {
                len: printed,
                max: MAX_REFERENCE_LEN,
            });
        }
        Ok(r)
    }

    /// The hub host, when the reference names one.
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// The agent's name.
    pub fn name(&self) -> &AgentName {
        &self.name
    }

    /// Which version.
    pub fn selector(&self) -> &VersionSelector {
        &self.selector
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(h) = &self.host {
            write!(f, "{h}/")?;
        }
        write!(f, "{}", self.name)?;
        if !self.selector.is_latest() {
            write!(f, "@{}", self.selector)?;
        }
        Ok(())
    }
}

impl FromStr for Reference {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Whether the first segment of a reference names a host, as Docker decides it: it contains `.`
/// or `:`, starts with `[`, or is `localhost`.
pub(crate) fn is_host_like(segment: &str) -> bool {
    segment.contains(['.', ':'])
        || segment.starts_with('[')
        || segment.eq_ignore_ascii_case("localhost")
}

/// Checks `host[:port]` (a DNS name, an IPv4 address or a bracketed IPv6 address) and returns
/// it in lowercase.
pub fn check_host(s: &str) -> Result<String, NameError> {
    let err = |problem: &str| NameError::InvalidHost {
        host: shown(s),
        problem: problem.to_string(),
    };
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return Err(err("has `[` without a closing `]`"));
        };
        if inside.is_empty()
            || inside.len() > 45
            || !inside
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
            || !inside.contains(':')
        {
            return Err(err("is not a valid IPv6 address"));
        }
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Err(err("has text after `]` that is not `:port`")),
            },
        };
        (None, port)
    } else {
        match s.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(s), None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err("has a port that is not a number"));
        }
        if !matches!(p.parse::<u32>(), Ok(1..=65535)) {
            return Err(err("has a port outside 1-65535"));
        }
    }
    if let Some(h) = host {
        if h.is_empty() {
            return Err(err("is empty"));
        }
        if h.len() > 253 {
            return Err(err("is longer than 253 characters"));
        }
        for label in h.split('.') {
            if label.is_empty() {
                return Err(err(
                    "has an empty label (`..` or a leading or trailing `.`)",
                ));
            }
            if label.len() > 63 {
                return Err(err("has a label longer than 63 characters"));
            }
            if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(err("may contain only letters, digits, `-` and `.`"));
            }
            if label.starts_with('-') || label.ends_with('-') {
                return Err(err("has a label that starts or ends with `-`"));
            }
        }
    }
    Ok(s.to_ascii_lowercase())
}

/// The handle an agent answers to on a floor: `@name`, stored without the `@`, lowercase.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentHandle(String);

impl AgentHandle {
    /// Parses `@name` (any ASCII case; stored lowercase).
    pub fn parse(s: &str) -> Result<Self, NameError> {
        match s.strip_prefix('@') {
            Some(name) => Self::new(name),
            None => Err(NameError::HandleMissingAt { input: shown(s) }),
        }
    }

    /// A handle from its name without the `@`.
    pub fn new(name: &str) -> Result<Self, NameError> {
        check_part(name, PartKind::Handle).map(Self)
    }

    /// `@user`, the human on the floor.
    pub fn user() -> Self {
        Self("user".into())
    }

    /// `@floor-manager`, the floor's built-in agent.
    pub fn floor_manager() -> Self {
        Self("floor-manager".into())
    }

    /// The name without the `@`.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// True for handles that belong to the floor ([`RESERVED_HANDLES`],
    /// [`RESERVED_HANDLE_PREFIXES`]).
    pub fn is_reserved(&self) -> bool {
        RESERVED_HANDLES.contains(&self.0.as_str())
            || RESERVED_HANDLE_PREFIXES
                .iter()
                .any(|p| self.0.starts_with(p))
    }
}

impl fmt::Display for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

impl FromStr for AgentHandle {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Serializes a type as its `Display` text and deserializes it with its `FromStr`, keeping the
/// parse error's message.
macro_rules! serde_as_string {
    ($ty:ty, $expecting:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        s.parse().map_err(E::custom)
                    }
                }
                deserializer.deserialize_str(V)
            }
        }
    };
}

pub(crate) use serde_as_string;

serde_as_string!(AgentName, "an agent name `publisher/agent`");
serde_as_string!(Reference, "an agent reference `publisher/agent[@version]`");
serde_as_string!(AgentHandle, "a handle `@name`");
serde_as_string!(Digest, "a digest `sha256:<64 hex>`");

#[cfg(test)]
mod tests;
