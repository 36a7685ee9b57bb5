//! Fields an A2A card has that A2A v0.3 does not define. The A2A SDK's model accepts them
//! (and so does ofc, to judge cards as the SDK does, `tests/it/a2a_differential.rs`); ofc keeps
//! them in the manifest as written but acts on none, so each is named in a warning.
//!
//! The field names are those [`super::A2aCard::from_json`] checks, object by object.

use serde_json::{Map, Value};

use crate::diagnostic::{Diagnostics, FieldPath};
use crate::entry_fields::warn_unknown;

const CARD: &[&str] = &[
    "name",
    "description",
    "url",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
    "protocolVersion",
    "preferredTransport",
    "additionalInterfaces",
    "provider",
    "iconUrl",
    "documentationUrl",
    "securitySchemes",
    "security",
    "supportsAuthenticatedExtendedCard",
    "signatures",
];
const CAPABILITIES: &[&str] = &[
    "streaming",
    "pushNotifications",
    "stateTransitionHistory",
    "extensions",
];
const EXTENSION: &[&str] = &["uri", "description", "required", "params"];
const SKILL: &[&str] = &[
    "id",
    "name",
    "description",
    "tags",
    "examples",
    "inputModes",
    "outputModes",
    "security",
];
const INTERFACE: &[&str] = &["url", "transport"];
const PROVIDER: &[&str] = &["organization", "url"];
const SIGNATURE: &[&str] = &["protected", "signature", "header"];

/// The fields of a security scheme of `type` (`None`: not a type A2A defines, refused already).
fn scheme_fields(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "apiKey" => &["type", "description", "name", "in"],
        "http" => &["type", "description", "scheme", "bearerFormat"],
        "oauth2" => &["type", "description", "flows", "oauth2MetadataUrl"],
        "openIdConnect" => &["type", "description", "openIdConnectUrl"],
        "mutualTLS" => &["type", "description"],
        _ => return None,
    })
}

fn objects(v: Option<&Value>) -> impl Iterator<Item = (usize, &Map<String, Value>)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, x)| x.as_object().map(|o| (i, o)))
}

/// One warning per field of `card` that A2A v0.3 does not define, at its path.
pub(super) fn warnings(card: &Map<String, Value>) -> Diagnostics {
    let mut w = Diagnostics::default();
    let root = FieldPath::root();
    warn_unknown(card, CARD, "an A2A agent card (v0.3)", &root, &mut w);
    if let Some(Value::Object(c)) = card.get("capabilities") {
        let p = root.key("capabilities");
        warn_unknown(c, CAPABILITIES, "an A2A card's `capabilities`", &p, &mut w);
        for (i, e) in objects(c.get("extensions")) {
            let what = "an A2A capability extension";
            warn_unknown(e, EXTENSION, what, &p.key("extensions").index(i), &mut w);
        }
    }
    for (i, s) in objects(card.get("skills")) {
        let p = root.key("skills").index(i);
        warn_unknown(s, SKILL, "an A2A skill", &p, &mut w);
    }
    for (i, s) in objects(card.get("additionalInterfaces")) {
        let p = root.key("additionalInterfaces").index(i);
        warn_unknown(s, INTERFACE, "an A2A interface", &p, &mut w);
    }
    if let Some(Value::Object(pr)) = card.get("provider") {
        let p = root.key("provider");
        warn_unknown(pr, PROVIDER, "an A2A card's `provider`", &p, &mut w);
    }
    for (i, s) in objects(card.get("signatures")) {
        let p = root.key("signatures").index(i);
        warn_unknown(s, SIGNATURE, "an A2A card signature", &p, &mut w);
    }
    if let Some(Value::Object(schemes)) = card.get("securitySchemes") {
        for (name, s) in schemes {
            let Value::Object(s) = s else { continue };
            let kind = s.get("type").and_then(Value::as_str).unwrap_or("");
            if let Some(known) = scheme_fields(kind) {
                let p = root.key("securitySchemes").key(name.clone());
                let what = format!("an A2A `{kind}` security scheme");
                warn_unknown(s, known, &what, &p, &mut w);
            }
        }
    }
    w
}
