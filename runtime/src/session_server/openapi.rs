//! The session server's contract, served at `/openapi.json` and snapshot-tested
//! (`runtime/src/session_server/snapshots/`): a change of the API shows as a reviewed diff.

use axum::Json;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{routes, sse, web};

/// The floor server over sessions (`ofc serve`).
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "ofc serve", description = "A floor server over sessions: one blueprint, many sessions, each on its own floor. Bearer tokens: the server's (everything) and each live session's (its own routes only)."),
    paths(
        routes::list_sessions, routes::create_session, routes::resume_session,
        routes::close_session, routes::get_session, routes::post_message, routes::cancel_turn,
        sse::events, routes::call_furniture, openapi, web::index, web::assets,
    ),
    components(schemas(crate::api::ErrorBody)),
    modifiers(&Bearer),
    tags(
        (name = "sessions", description = "sessions, messages, turns, events"),
        (name = "furniture", description = "tool calls as an agent, under its grants"),
        (name = "ops", description = "this document"),
        (name = "browser", description = "the browser view: a page without data, opened as `/#token=<token>`"),
    )
)]
pub struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        if let Some(c) = openapi.components.as_mut() {
            c.add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
        }
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "ops",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json")))]
pub async fn openapi() -> impl IntoResponse {
    Json(ApiDoc::openapi())
}
