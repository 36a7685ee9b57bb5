//! The OpenAPI document is snapshot-tested: an API change shows up as a reviewed diff.

use utoipa::OpenApi as _;

#[test]
fn openapi_document_snapshot() {
    let doc = hub_server::api::openapi::ApiDoc::openapi();
    let json: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    // Every route the router serves is documented.
    let paths = json["paths"].as_object().unwrap();
    for p in [
        "/api/v1/agents/{publisher}/{agent}/versions/{version}",
        "/api/v1/login",
        "/api/v1/me",
        "/registry/agents",
        "/registry/agents/{agent_id}",
        "/openapi.json",
        "/api/v1/log",
        "/api/v1/log/publishers/{publisher}",
        // The C2SP formats served outside /api/v1.
        "/log/checkpoint",
        "/log/tile/{tile}",
    ] {
        assert!(paths.contains_key(p), "{p} missing");
    }
    insta::assert_json_snapshot!("openapi", json);
}

#[tokio::test]
async fn served_document_is_the_same() {
    let app = ofc_test_kit::TestHub::in_process(ofc_test_kit::Backend::Sqlite).await;
    let (s, served) = app
        .call(reqwest::Method::GET, "/openapi.json", None, None)
        .await;
    assert_eq!(s, 200);
    let doc = hub_server::api::openapi::ApiDoc::openapi();
    let expected: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    assert_eq!(served, expected);
    app.stop().await;
}
