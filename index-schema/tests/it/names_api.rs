//! Names and references as other crates use them: inside serde documents and through `FromStr`.

use index_schema::name::{
    AgentHandle, AgentName, Digest, NameError, PartKind, Reference, VersionSelector,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Doc {
    agent: Reference,
    owner: AgentName,
    handle: AgentHandle,
    digest: Digest,
}

#[test]
fn names_inside_documents() {
    let text = format!(
        r#"{{"agent":"Hub.Example.com:8443/Acme/Coder@^1.2","owner":"acme/coder","handle":"@Coder","digest":"{}"}}"#,
        Digest::of(b"x")
    );
    let doc: Doc = serde_json::from_str(&text).unwrap();
    assert_eq!(doc.agent.host(), Some("hub.example.com:8443"));
    assert_eq!(doc.agent.name(), &doc.owner);
    assert!(matches!(doc.agent.selector(), VersionSelector::Req(_)));
    assert_eq!(doc.handle.name(), "coder");
    let written = serde_json::to_string(&doc).unwrap();
    assert!(
        written.contains(r#""agent":"hub.example.com:8443/acme/coder@^1.2""#),
        "{written}"
    );
    assert_eq!(serde_json::from_str::<Doc>(&written).unwrap(), doc);
}

#[test]
fn serde_error_says_what_is_wrong() {
    let err = serde_json::from_str::<Doc>(
        r#"{"agent":"acme/co\\der","owner":"a/b","handle":"@c","digest":"sha256:00"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("agent name `co\\\\der` contains a backslash"),
        "{err}"
    );
}

#[test]
fn errors_are_matchable() {
    assert_eq!(
        "acme/".parse::<AgentName>(),
        Err(NameError::Empty {
            part: PartKind::Agent
        })
    );
    assert!(matches!(
        "system/x".parse::<AgentName>(),
        Err(NameError::Reserved {
            part: PartKind::Publisher,
            ..
        })
    ));
}
