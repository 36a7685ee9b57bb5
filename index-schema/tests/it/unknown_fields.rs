//! ofc's own formats refuse every field they do not define, and every field of another kind of
//! entry, at its path with a line: the agent manifest (per source type), the signed envelope
//! and the lockfile `ofc.lock` (per source kind). One case table per document kind; the
//! blueprint, `agent.yaml`, AgentCard, A2A card and server.json tables are next to their
//! parsers (`src/*/fields_tests.rs`, `src/*/unknown_tests.rs`).

use rstest::rstest;
use serde_json::{Value, json};

use index_schema::Diagnostics;
use index_schema::envelope::Envelope;
use index_schema::lockfile::Lockfile;
use index_schema::manifest::Manifest;

fn assert_refused(result: Result<(), Diagnostics>, path: &str, message: &str) {
    let e = result.expect_err("the document should be refused");
    assert!(
        e.iter().any(|d| d.path.to_string() == path
            && d.position.is_some()
            && d.message.contains(message)),
        "expected {path}: …{message}…, got:\n{e}"
    );
}

fn manifest() -> Value {
    json!({
        "schemaVersion": 1,
        "name": "acme/data-analyst",
        "version": "1.4.0",
        "id": "@data",
        "displayName": "Data Analyst",
        "tagline": "Send me CSVs",
        "description": "Loads tabular data.",
        "capabilities": [{"name": "c", "description": "d", "inputSchema": {}, "outputSchema": {}}],
        "providesMcp": {"url": "https://a.example/mcp"},
        "requires": {"model": "m"},
        "pricing": {"perHour": 0.5, "currency": "USD"},
        "origin": {"format": "agent-card", "document": "a.md"},
        "source": {
            "type": "bundle",
            "digest": "sha256:662ba9322a6fb2642ae8d0f33e09eaf9ad7b6820482d83879008916b7aab8472",
            "size": 18432,
            "mediaType": "application/vnd.ofc.agent.bundle.v1.tar+gzip",
            "entrypoint": "agent.yaml"
        }
    })
}

#[rstest]
#[case("/colour", "colour", "unknown field `colour`")]
#[case(
    "/capabilities/0/examples",
    "capabilities[0].examples",
    "unknown field"
)]
#[case("/providesMcp/tools", "providesMcp.tools", "unknown field")]
#[case("/requires/gpu", "requires.gpu", "unknown field")]
#[case("/pricing/perCall", "pricing.perCall", "unknown field")]
#[case("/origin/version", "origin.version", "unknown field")]
// A field of another source type: a bundle has no package, an entry point is pip's.
#[case("/source/package", "source.package", "unknown field `package`")]
#[case("/source/entryPoint", "source.entryPoint", "unknown field")]
fn manifest_fields_it_does_not_define_are_refused(
    #[case] pointer: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    let mut v = manifest();
    if let Err(e) = Manifest::from_json(&serde_json::to_string_pretty(&v).unwrap()) {
        panic!("the base manifest is valid: {e}");
    }
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    v.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap()
        .insert(key.to_string(), json!("x"));
    let text = serde_json::to_string_pretty(&v).unwrap();
    assert_refused(Manifest::from_json(&text).map(|_| ()), path, message);
}

const ENVELOPE: &str = r#"{
  "payload": "e30=",
  "payloadType": "application/vnd.ofc.agent.manifest.v1+json",
  "signatures": [
    {"keyid": "65b60673d6ed884bf01c2c222d82ada0", "sig": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="}
  ]
}"#;

#[rstest]
#[case(
    "\"payload\": \"e30=\",",
    "\"payload\": \"e30=\", \"cert\": \"x\",",
    "cert",
    "unknown field `cert`"
)]
#[case(
    "\"keyid\": ",
    "\"alg\": \"ed25519\", \"keyid\": ",
    "signatures[0].alg",
    "unknown field `alg`"
)]
fn envelope_fields_it_does_not_define_are_refused(
    #[case] from: &str,
    #[case] to: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    assert!(Envelope::from_json_any_type(ENVELOPE).is_ok());
    let text = ENVELOPE.replace(from, to);
    assert_ne!(text, ENVELOPE);
    assert_refused(
        Envelope::from_json_any_type(&text).map(|_| ()),
        path,
        message,
    );
}

/// One agent of each source kind that a lockfile records fields for.
fn lockfile(agent: &str) -> String {
    format!("version = 1\n\n[[agent]]\n{agent}")
}

const DOCKER: &str = "name = \"a/b\"\nversion = \"1.0.0\"\nmanifest_digest = \"sha256:0356605b69515fdd7c4d702b589b6701a050611aac2ef47077feff1162db8bc5\"\nhub = \"hub.ofc.dev\"\n\n[agent.source]\nkind = \"docker\"\nimage = \"ofc/crawler:3.0.1\"\ndigest = \"sha256:0356605b69515fdd7c4d702b589b6701a050611aac2ef47077feff1162db8bc5\"\n";
const LOCAL: &str = "name = \"local/helper\"\nversion = \"0.1.0\"\n\n[agent.source]\nkind = \"local\"\npath = \"./helper\"\n";

#[rstest]
#[case(&format!("colour = 1\n{}", lockfile(DOCKER)), "colour", "unknown field `colour`")]
#[case(&lockfile(&DOCKER.replace("hub = ", "mirror = \"x\"\nhub = ")), "agent[0].mirror", "unknown field `mirror`")]
// A field of another source kind: `package` is pip's and npm's, `endpoint` remote's.
#[case(&lockfile(&format!("{DOCKER}package = \"p\"\n")), "agent[0].source.package", "unknown field `package`")]
#[case(&lockfile(&format!("{DOCKER}endpoint = \"https://a.example\"\n")), "agent[0].source.endpoint", "unknown field")]
#[case(&lockfile(&format!("{LOCAL}image = \"x\"\n")), "agent[0].source.image", "unknown field `image`")]
// A local agent comes from no hub and has no publisher signature.
#[case(&lockfile(&LOCAL.replace("version = \"0.1.0\"\n", "version = \"0.1.0\"\nhub = \"hub.ofc.dev\"\n")), "agent[0].hub", "a local agent comes from no hub")]
#[case(&lockfile(&LOCAL.replace("version = \"0.1.0\"\n", "version = \"0.1.0\"\nsigned_by = \"fedcba9876543210fedcba9876543210\"\n")), "agent[0].signed_by", "a local agent is not signed")]
fn lockfile_fields_of_another_kind_are_refused(
    #[case] text: &str,
    #[case] path: &str,
    #[case] message: &str,
) {
    assert!(Lockfile::from_toml(&lockfile(DOCKER)).is_ok());
    assert!(Lockfile::from_toml(&lockfile(LOCAL)).is_ok());
    assert_refused(Lockfile::from_toml(text).map(|_| ()), path, message);
}
