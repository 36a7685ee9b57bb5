use utoipa::OpenApi as _;

#[test]
fn openapi_document_snapshot() {
    let doc = super::openapi::ApiDoc::openapi();
    let json: serde_json::Value = serde_json::from_str(&doc.to_json().unwrap()).unwrap();
    let paths = json["paths"].as_object().unwrap();
    for p in [
        "/api/v1/sessions",
        "/api/v1/sessions/{id}",
        "/api/v1/sessions/{id}/resume",
        "/api/v1/sessions/{id}/close",
        "/api/v1/sessions/{id}/messages",
        "/api/v1/sessions/{id}/cancel",
        "/api/v1/sessions/{id}/events",
        "/api/v1/sessions/{id}/furniture/{name}/call",
        "/openapi.json",
        "/",
        "/assets/{file}",
    ] {
        assert!(paths.contains_key(p), "{p} missing");
    }
    insta::assert_json_snapshot!("openapi", json);
}
