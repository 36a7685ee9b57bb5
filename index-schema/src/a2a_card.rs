//! A2A agent cards (`agent-card.json`, served at `/.well-known/agent-card.json`): the JSON
//! document an A2A agent publishes about itself, as the A2A protocol v0.3 defines it and the
//! PyPI `a2a-sdk` 0.3 models it (`a2a.types.AgentCard`). [`A2aCard::from_json`] checks a card as
//! that model does (required fields, value types, the nested objects) and reports every problem
//! under its field path with a line; [`A2aCard::to_manifest`] turns a card into a `remote` agent
//! manifest: the card's `url` is the endpoint, its skills become capabilities, and the fields the
//! manifest has no place for stay in [`Origin::fields`].
//!
//! Rules that follow the SDK and may surprise: strings may be empty, `url` and the other URLs are
//! not checked as URLs (the manifest conversion checks `url`), unknown fields are accepted (and
//! named by [`A2aCard::warnings`]: ofc keeps them but acts on none), booleans accept
//! `"yes"`/`"no"`/`0`/`1` (pydantic's lax mode). The differential test
//! `index-schema/tests/it/a2a_differential.rs` runs the SDK's model on a corpus and checks that
//! both agree on every file.

use serde_json::{Map, Value};

use crate::agent_yaml::ManifestDefaults;
use crate::diagnostic::{Diagnostics, FieldPath, Segment};
use crate::manifest::{self, Activation, Capability, Manifest, Origin, RemoteSource, Source};
use crate::source::{self, SourceDoc};

mod unknown;
#[cfg(test)]
mod unknown_tests;

/// The file name of an A2A agent card.
pub const FILE_NAME: &str = "agent-card.json";

/// A checked A2A agent card: the JSON as written, plus where each field is.
#[derive(Debug, Clone)]
pub struct A2aCard {
    /// The card as JSON.
    pub value: Map<String, Value>,
    doc: SourceDoc,
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// What a value must be.
#[derive(Clone, Copy)]
enum Want {
    Str,
    Bool,
    StrList,
    Object(fn(&Map<String, Value>, &FieldPath, &mut Diagnostics)),
    List(fn(&Map<String, Value>, &FieldPath, &mut Diagnostics)),
    Map(fn(&Map<String, Value>, &FieldPath, &mut Diagnostics)),
    /// A mapping of string to list of strings (a security requirement).
    Scopes,
    /// Any JSON object.
    AnyObject,
}

fn lax_bool(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|i| i == 0 || i == 1),
        Value::String(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "0" | "1" | "true" | "false" | "t" | "f" | "yes" | "no" | "y" | "n" | "on" | "off"
        ),
        _ => false,
    }
}

fn check(v: &Value, want: Want, p: &FieldPath, d: &mut Diagnostics) {
    match (want, v) {
        (Want::Str, Value::String(_)) | (Want::AnyObject, Value::Object(_)) => {}
        (Want::Bool, v) if lax_bool(v) => {}
        (Want::StrList, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if !item.is_string() {
                    d.push(
                        p.index(i),
                        format!("must be a string, not {}", kind_of(item)),
                    );
                }
            }
        }
        (Want::Object(f), Value::Object(m)) => f(m, p, d),
        (Want::List(f), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Object(m) => f(m, &p.index(i), d),
                    other => d.push(
                        p.index(i),
                        format!("must be an object, not {}", kind_of(other)),
                    ),
                }
            }
        }
        (Want::Map(f), Value::Object(m)) => {
            for (k, item) in m {
                match item {
                    Value::Object(o) => f(o, &p.key(k.clone()), d),
                    other => d.push(
                        p.key(k.clone()),
                        format!("must be an object, not {}", kind_of(other)),
                    ),
                }
            }
        }
        (Want::Scopes, Value::Object(m)) => {
            for (k, item) in m {
                check(item, Want::StrList, &p.key(k.clone()), d);
            }
        }
        (want, other) => {
            let what = match want {
                Want::Str => "a string",
                Want::Bool => "true or false",
                Want::StrList => "a list of strings",
                Want::Object(_) | Want::AnyObject | Want::Scopes => "an object",
                Want::List(_) => "a list of objects",
                Want::Map(_) => "an object of named objects",
            };
            d.push(p.clone(), format!("must be {what}, not {}", kind_of(other)));
        }
    }
}

/// Checks `fields` of `m`: `(name, required, want)`. A `null` optional field counts as absent.
fn fields(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics, spec: &[(&str, bool, Want)]) {
    for (name, required, want) in spec {
        match m.get(*name) {
            None => {
                if *required {
                    d.push(p.key(*name), "is required");
                }
            }
            Some(Value::Null) if !required => {}
            Some(v) => check(v, *want, &p.key(*name), d),
        }
    }
}

fn card(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("name", true, Want::Str),
            ("description", true, Want::Str),
            ("url", true, Want::Str),
            ("version", true, Want::Str),
            ("capabilities", true, Want::Object(capabilities)),
            ("defaultInputModes", true, Want::StrList),
            ("defaultOutputModes", true, Want::StrList),
            ("skills", true, Want::List(skill)),
            ("protocolVersion", false, Want::Str),
            ("preferredTransport", false, Want::Str),
            ("additionalInterfaces", false, Want::List(interface)),
            ("provider", false, Want::Object(provider)),
            ("iconUrl", false, Want::Str),
            ("documentationUrl", false, Want::Str),
            ("securitySchemes", false, Want::Map(security_scheme)),
            ("security", false, Want::List(scopes)),
            ("supportsAuthenticatedExtendedCard", false, Want::Bool),
            ("signatures", false, Want::List(signature)),
        ],
    );
}

fn capabilities(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("streaming", false, Want::Bool),
            ("pushNotifications", false, Want::Bool),
            ("stateTransitionHistory", false, Want::Bool),
            ("extensions", false, Want::List(extension)),
        ],
    );
}

fn extension(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("uri", true, Want::Str),
            ("description", false, Want::Str),
            ("required", false, Want::Bool),
            ("params", false, Want::AnyObject),
        ],
    );
}

fn skill(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("id", true, Want::Str),
            ("name", true, Want::Str),
            ("description", true, Want::Str),
            ("tags", true, Want::StrList),
            ("examples", false, Want::StrList),
            ("inputModes", false, Want::StrList),
            ("outputModes", false, Want::StrList),
            ("security", false, Want::List(scopes)),
        ],
    );
}

fn interface(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[("url", true, Want::Str), ("transport", true, Want::Str)],
    );
}

fn provider(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[("organization", true, Want::Str), ("url", true, Want::Str)],
    );
}

fn scopes(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    check(&Value::Object(m.clone()), Want::Scopes, p, d);
}

fn signature(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    fields(
        m,
        p,
        d,
        &[
            ("protected", true, Want::Str),
            ("signature", true, Want::Str),
            ("header", false, Want::AnyObject),
        ],
    );
}

fn security_scheme(m: &Map<String, Value>, p: &FieldPath, d: &mut Diagnostics) {
    const TYPES: [&str; 5] = ["apiKey", "http", "mutualTLS", "oauth2", "openIdConnect"];
    let common = [("description", false, Want::Str)];
    match m.get("type").and_then(Value::as_str) {
        Some("apiKey") => {
            fields(m, p, d, &common);
            fields(m, p, d, &[("name", true, Want::Str)]);
            match m.get("in") {
                Some(Value::String(s)) if matches!(s.as_str(), "cookie" | "header" | "query") => {}
                None => d.push(p.key("in"), "is required (`cookie`, `header` or `query`)"),
                Some(_) => d.push(p.key("in"), "must be `cookie`, `header` or `query`"),
            }
        }
        Some("http") => {
            fields(m, p, d, &common);
            fields(
                m,
                p,
                d,
                &[
                    ("scheme", true, Want::Str),
                    ("bearerFormat", false, Want::Str),
                ],
            );
        }
        Some("oauth2") => {
            fields(m, p, d, &common);
            fields(
                m,
                p,
                d,
                &[
                    ("flows", true, Want::AnyObject),
                    ("oauth2MetadataUrl", false, Want::Str),
                ],
            );
        }
        Some("openIdConnect") => {
            fields(m, p, d, &common);
            fields(m, p, d, &[("openIdConnectUrl", true, Want::Str)]);
        }
        Some("mutualTLS") => fields(m, p, d, &common),
        _ => d.push(
            p.key("type"),
            format!(
                "must be one of {}",
                TYPES.map(|t| format!("`{t}`")).join(", ")
            ),
        ),
    }
}

impl A2aCard {
    /// Parses and checks a card.
    pub fn from_json(text: &str) -> Result<A2aCard, Diagnostics> {
        let doc = source::parse_json(text)?;
        let Value::Object(m) = &doc.value else {
            return Err(doc.locate(Diagnostics::one(
                FieldPath::root(),
                format!(
                    "an A2A agent card must be a JSON object, not {}",
                    kind_of(&doc.value)
                ),
            )));
        };
        let mut d = Diagnostics::default();
        card(m, &FieldPath::root(), &mut d);
        if !d.is_empty() {
            let mut located = doc.locate(d);
            located
                .0
                .sort_by_key(|d| d.position.map_or((u32::MAX, u32::MAX), |p| (p.line, p.col)));
            return Err(located);
        }
        Ok(A2aCard {
            value: m.clone(),
            doc,
        })
    }

    /// One warning per field the card has that A2A v0.3 does not define (the A2A SDK accepts
    /// such a card, and so does ofc; the manifest keeps the field as written, but nothing acts
    /// on it), with its line.
    pub fn warnings(&self) -> Diagnostics {
        self.doc.locate(unknown::warnings(&self.value))
    }

    fn str(&self, field: &str) -> &str {
        self.value.get(field).and_then(Value::as_str).unwrap_or("")
    }

    /// The `remote` agent manifest for this card. `defaults` gives the hub name (or the
    /// publisher, combined with the card's `name` made into a slug); the card gives the display
    /// name, the description (and tagline, its first line), the version (which must be an exact
    /// semver version), the endpoint (`url`) and the capabilities (one per skill: the skill's `id`
    /// and `description`, its `tags` as keywords, an open input and output schema). `document`
    /// is where the card is (a URL or a file name), kept in [`Manifest::origin`] with the fields
    /// the manifest holds nowhere else. Every problem is reported under the card field it comes
    /// from, with its line.
    pub fn to_manifest(
        &self,
        defaults: ManifestDefaults,
        document: &str,
    ) -> Result<Manifest, Diagnostics> {
        let root = FieldPath::root();
        let mut d = Diagnostics::default();
        let slug = slug(self.str("name"));
        let (name, id, version) = defaults.identity(
            "an A2A card",
            &slug,
            self.str("version"),
            &root.key("name"),
            &root.key("version"),
            &mut d,
        );
        let description = self.str("description").trim().to_string();
        let tagline = defaults.tagline.clone().unwrap_or_else(|| {
            description
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(manifest::MAX_TAGLINE_CHARS)
                .collect()
        });
        let skills = self.value.get("skills").and_then(Value::as_array);
        let capabilities: Vec<Capability> = skills
            .into_iter()
            .flatten()
            .map(|s| Capability {
                name: s["id"].as_str().unwrap_or("").to_string(),
                description: s["description"].as_str().unwrap_or("").to_string(),
                input_schema: serde_json::json!({}),
                output_schema: serde_json::json!({}),
                keywords: s["tags"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect(),
                authorized_requesters: None,
            })
            .collect();
        // Everything but what the manifest holds: name, description, version, url, and the
        // skills' id, description and tags.
        let mut fields: Map<String, Value> = self
            .value
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "name" | "description" | "version" | "url"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(Value::Array(skills)) = fields.get_mut("skills") {
            for s in skills.iter_mut() {
                if let Value::Object(s) = s {
                    s.retain(|k, _| !matches!(k.as_str(), "description" | "tags"));
                }
            }
        }
        let (Some(name), Some(id), Some(version)) = (name, id, version) else {
            return Err(self.doc.locate(d));
        };
        let m = Manifest {
            schema_version: manifest::SCHEMA_VERSION,
            name,
            version,
            id,
            display_name: defaults
                .display_name
                .unwrap_or_else(|| self.str("name").trim().to_string()),
            tagline,
            description,
            readme: defaults.readme,
            license: defaults.license,
            homepage: defaults.homepage,
            repository: defaults.repository,
            keywords: defaults.keywords,
            examples: Vec::new(),
            activation: Activation::default(),
            capabilities,
            provides_mcp: None,
            requires: None,
            pricing: None,
            source: Source::Remote(RemoteSource {
                endpoint: self.str("url").to_string(),
            }),
            origin: Some(Origin {
                format: Origin::A2A_AGENT_CARD.to_string(),
                document: document.to_string(),
                fields,
            }),
        };
        for mut x in m.validate().0 {
            x.path = card_path(&x.path);
            if !d.iter().any(|y| y.path == x.path) {
                d.0.push(x);
            }
        }
        if d.is_empty() {
            Ok(m)
        } else {
            Err(self.doc.locate(d))
        }
    }
}

/// The A2A agent card of a `remote` agent manifest (`None` for agents with another source,
/// which have no A2A endpoint). A manifest converted from an A2A card gives back that card: the
/// fields kept in its origin, with name, description, version, `url` and the skills' id,
/// description and tags from the manifest. Otherwise the card is built from the manifest alone:
/// one skill per capability, text in and out.
pub fn from_manifest(m: &Manifest) -> Option<Map<String, Value>> {
    let Source::Remote(remote) = &m.source else {
        return None;
    };
    let kept = m
        .origin
        .as_ref()
        .filter(|o| o.format == Origin::A2A_AGENT_CARD)
        .map(|o| o.fields.clone())
        .unwrap_or_default();
    let kept_skills: Vec<Map<String, Value>> = kept
        .get("skills")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|s| s.as_object().cloned()).collect())
        .unwrap_or_default();
    // The kept fields first: what the manifest holds (checked and signed as its own fields)
    // is set over them, whatever a hand-made `origin.fields` says (see `check_kept`).
    let mut card = kept.clone();
    card.insert("name".into(), Value::String(m.display_name.clone()));
    card.insert("description".into(), Value::String(m.description.clone()));
    card.insert("url".into(), Value::String(remote.endpoint.clone()));
    card.insert("version".into(), Value::String(m.version.to_string()));
    let text = || Value::Array(vec![Value::String("text/plain".into())]);
    card.entry("capabilities")
        .or_insert_with(|| Value::Object(Map::new()));
    card.entry("defaultInputModes").or_insert_with(text);
    card.entry("defaultOutputModes").or_insert_with(text);
    let skills = m
        .capabilities
        .iter()
        .map(|c| {
            let mut s = kept_skills
                .iter()
                .find(|k| k.get("id").and_then(Value::as_str) == Some(c.name.as_str()))
                .cloned()
                .unwrap_or_default();
            s.insert("id".into(), Value::String(c.name.clone()));
            s.entry("name")
                .or_insert_with(|| Value::String(c.name.clone()));
            s.insert("description".into(), Value::String(c.description.clone()));
            s.insert(
                "tags".into(),
                Value::Array(c.keywords.iter().cloned().map(Value::String).collect()),
            );
            Value::Object(s)
        })
        .collect();
    card.insert("skills".into(), Value::Array(skills));
    Some(card)
}

/// The card's fields the manifest holds itself (its name, description, endpoint and version):
/// never kept in `origin.fields`.
const MANIFEST_OWNED: [&str; 4] = ["name", "description", "url", "version"];
/// A skill's fields its capability holds.
const CAPABILITY_OWNED: [&str; 2] = ["description", "tags"];
/// The largest integer an RFC 8785 form holds exactly (it writes every number as an IEEE 754
/// double): 2^53.
const EXACT_INTEGER_MAX: u64 = 1 << 53;

/// Checks the fields an A2A card's manifest keeps (`origin.fields`, at `path`): none the
/// manifest or its capabilities hold (a card is built from the manifest's own, checked fields;
/// a hand-made manifest naming another `url` there is refused, not overridden silently), and
/// every integer exact as a double (the hub signs the card's RFC 8785 form, which writes
/// 9007199254740993 as 9007199254740992: a verifier reading the served card would not get
/// the signed bytes).
pub(crate) fn check_kept(fields: &Map<String, Value>, path: &FieldPath, d: &mut Diagnostics) {
    for key in MANIFEST_OWNED {
        if fields.contains_key(key) {
            d.push(
                path.key(key),
                format!(
                    "the card's `{key}` comes from the manifest's own field; it cannot be kept \
                     in `origin.fields`"
                ),
            );
        }
    }
    if let Some(Value::Array(skills)) = fields.get("skills") {
        for (i, skill) in skills.iter().enumerate() {
            let Value::Object(skill) = skill else {
                continue;
            };
            for key in CAPABILITY_OWNED {
                if skill.contains_key(key) {
                    d.push(
                        path.key("skills").index(i).key(key),
                        format!(
                            "a skill's `{key}` comes from its capability; it cannot be kept in \
                             `origin.fields`"
                        ),
                    );
                }
            }
        }
    }
    inexact_integers(&Value::Object(fields.clone()), path, d);
}

fn inexact_integers(v: &Value, path: &FieldPath, d: &mut Diagnostics) {
    match v {
        Value::Number(n) => {
            let big = n.as_u64().is_some_and(|u| u > EXACT_INTEGER_MAX)
                || n.as_i64()
                    .is_some_and(|i| i.unsigned_abs() > EXACT_INTEGER_MAX);
            if big {
                d.push(
                    path.clone(),
                    format!(
                        "{n} is beyond ±2^53: the card's signature (RFC 8785) would sign it \
                         rounded; write it as a string"
                    ),
                );
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                inexact_integers(x, &path.index(i), d);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                inexact_integers(x, &path.key(k.as_str()), d);
            }
        }
        _ => {}
    }
}

/// The card field a manifest field comes from.
fn card_path(p: &FieldPath) -> FieldPath {
    let s = p.to_string();
    let root = FieldPath::root();
    let top = s.split(['.', '[']).next().unwrap_or("");
    match top {
        "displayName" | "id" | "name" => root.key("name"),
        "tagline" | "description" => root.key("description"),
        "version" => root.key("version"),
        "source" => root.key("url"),
        "capabilities" => {
            // capabilities[i].name → skills[i].id, …
            let i = s
                .strip_prefix("capabilities[")
                .and_then(|r| r.split(']').next())
                .and_then(|n| n.parse::<usize>().ok());
            let field = if s.ends_with(".name") {
                "id"
            } else if s.contains(".keywords") {
                "tags"
            } else {
                "description"
            };
            match i {
                Some(i) => root.key("skills").index(i).key(field),
                None => root.key("skills"),
            }
        }
        // The card's own fields, kept as written: where the card has them.
        "origin" if s.starts_with("origin.fields") => {
            p.segments()
                .iter()
                .skip(2)
                .fold(root, |path, segment| match segment {
                    Segment::Key(k) => path.key(k.as_str()),
                    Segment::Index(i) => path.index(*i),
                })
        }
        _ => p.clone(),
    }
}

/// A hub agent name part from a display name: lowercase, runs of other characters as `-`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("Currency Agent"), "currency-agent");
        assert_eq!(slug("  Hello, World!! "), "hello-world");
    }

    /// A hand-made manifest whose `origin.fields` name the card's `url`, `name`, … (an endpoint
    /// the `source` rules would refuse; a name not the manifest's): refused at validation, and
    /// a card built from such a manifest anyway still carries the manifest's own fields.
    #[test]
    fn kept_fields_cannot_stand_in_for_the_manifests_own() {
        let value = serde_json::json!({
            "schemaVersion": 1, "name": "acme/evil", "version": "1.0.0", "id": "@evil",
            "displayName": "Evil", "tagline": "Does things.", "description": "Does things.",
            "capabilities": [{"name": "echo", "description": "Echo", "inputSchema": {}, "outputSchema": {}}],
            "source": {"type": "remote", "endpoint": "https://benign.example/a2a"},
            "origin": {"format": "a2a-agent-card", "document": "agent-card.json", "fields": {
                "url": "http://169.254.169.254/latest/meta-data/",
                "name": "PayPal Official Agent",
                "version": "99.0.0",
                "description": "Official.",
                "skills": [{"id": "echo", "description": "other", "tags": ["x"], "examples": ["hi"]}],
                "x-ext": {"big": 9_007_199_254_740_993_u64, "neg": -9_007_199_254_740_993_i64,
                          "ok": 9_007_199_254_740_992_u64, "list": [1, 2.5]}
            }}
        });
        let m: Manifest = serde_json::from_value(value.clone()).unwrap();
        let paths: Vec<String> = m.validate().iter().map(|d| d.path.to_string()).collect();
        for want in [
            "origin.fields.url",
            "origin.fields.name",
            "origin.fields.version",
            "origin.fields.description",
            "origin.fields.skills[0].description",
            "origin.fields.skills[0].tags",
            "origin.fields.x-ext.big",
            "origin.fields.x-ext.neg",
        ] {
            assert!(paths.iter().any(|p| p == want), "{want} not in {paths:?}");
        }
        assert_eq!(paths.len(), 8, "{paths:?}");
        assert!(Manifest::from_value(&value).is_err());

        let card = from_manifest(&m).unwrap();
        assert_eq!(card["url"], "https://benign.example/a2a");
        assert_eq!(card["name"], "Evil");
        assert_eq!(card["version"], "1.0.0");
        assert_eq!(card["description"], "Does things.");
        assert_eq!(card["skills"][0]["description"], "Echo");
        assert_eq!(card["skills"][0]["examples"], serde_json::json!(["hi"]));

        // Another format's kept fields are that format's business.
        let mut other = m.clone();
        other.origin.as_mut().unwrap().format = Origin::AGENT_CARD.into();
        assert!(other.validate().is_empty(), "{}", other.validate());
    }

    /// A card with an integer a double cannot hold is refused at conversion, at its own path.
    #[test]
    fn a_cards_inexact_integer_is_refused_where_the_card_has_it() {
        let text = r#"{"name": "Echo", "description": "Echoes.", "url": "https://echo.example/a2a",
            "version": "1.0.0", "protocolVersion": "0.3.0", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "Echo", "tags": []}],
            "x-ext": {"big": 9007199254740993}}"#;
        let card = A2aCard::from_json(text).unwrap();
        let defaults = ManifestDefaults {
            publisher: Some("acme".into()),
            ..ManifestDefaults::default()
        };
        let e = card.to_manifest(defaults, "agent-card.json").unwrap_err();
        let paths: Vec<String> = e.iter().map(|d| d.path.to_string()).collect();
        assert_eq!(paths, ["x-ext.big"], "{e}");
    }
}
