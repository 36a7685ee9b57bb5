//! The integration tests of `tests` in one test binary (one link instead of one per file):
//! each former test file is a module.

mod audit_pages_e2e;
mod check_e2e;
mod client_verbs;
mod common;
mod deploy_e2e;
mod examples_publishable;
mod floors_e2e;
mod hostile;
mod hub_files;
mod layout;
mod newcomer_e2e;
mod publish_blob_e2e;
mod pull_e2e;
mod pull_hostile;
mod reference_shapes_e2e;
mod replicas_e2e;
mod rooms_e2e;
mod run_acp_e2e;
mod run_e2e;
mod run_fields_e2e;
mod run_floor_manager_e2e;
mod run_furniture_e2e;
mod run_hardening_e2e;
mod run_oauth_e2e;
mod run_sandbox_e2e;
mod run_session_e2e;
mod run_session_pg_e2e;
mod run_switchboard_e2e;
mod run_tui_e2e;
mod serve_e2e;
mod serve_web_e2e;
mod sources_docker_e2e;
mod sources_npm_e2e;
mod sources_pip_e2e;
mod web_e2e;
