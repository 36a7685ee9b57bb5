//! The OpenAPI document served at `/openapi.json` (snapshot-tested).

use axum::Json;
use axum::response::IntoResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{accounts, agents, discovery, domains, namespaces, ops, registry, search, trusted};
use crate::tlog;

/// The hub's API.
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "ofc hub", description = "Accounts, namespaces, keys, signed publishing and the read API of the ofc hub, plus the OFC registry API view. The account, namespace, agent, search and registry routes refuse what they would not read: a query parameter a route does not take (400 `invalid_parameter`, naming it) and a body where it takes none (400 `invalid_body`)."),
    paths(
        accounts::login, accounts::me, accounts::list_tokens, accounts::create_token,
        accounts::revoke_token,
        namespaces::create_namespace, namespaces::get_namespace, namespaces::set_member,
        namespaces::remove_member, namespaces::list_keys, namespaces::add_key,
        namespaces::revoke_key,
        domains::verify_domain, domains::remove_domain,
        trusted::add, trusted::list, trusted::remove, trusted::exchange,
        agents::publish, agents::get_agent, agents::get_agent_card, agents::get_version, agents::get_bundle,
        agents::list_agents, agents::yank, agents::unyank, agents::deprecate,
        agents::undeprecate, agents::unpublish, agents::delete_agent, agents::delete_version, agents::outbox,
        agents::audit,
        registry::register, registry::get, registry::patch, registry::remove,
        search::search, search::registry_search,
        discovery::catalog, discovery::jwks, discovery::search,
        ops::healthz, ops::readyz, ops::metrics, openapi,
        tlog::log_info, tlog::log_publisher, tlog::checkpoint, tlog::tile,
    ),
    modifiers(&Bearer),
    tags(
        (name = "accounts", description = "login, the caller, API tokens"),
        (name = "namespaces", description = "namespaces, members, publisher keys, verified domains, trusted publishing"),
        (name = "agents", description = "publish, read, yank, deprecate, delete"),
        (name = "search", description = "ranked agent search"),
        (name = "registry", description = "the OFC registry API (seed 000)"),
        (name = "discovery", description = "the AI catalog and search of the ARD draft v0.9, and the key of the signed A2A cards"),
        (name = "ops", description = "health, readiness, metrics"),
        (name = "log", description = "the transparency log (tiles and checkpoint: C2SP tlog-tiles under /log/)"),
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
