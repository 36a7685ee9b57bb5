//! An OFC agent in a few lines: answers with what it was told.
//!
//! ```sh
//! OFC_PORT=7700 cargo run -p runtime --example echo_agent
//! curl -s localhost:7700/ofc/info
//! ```
//!
//! Then add it to a floor (`ofc floor serve`):
//! `POST /floors/{id}/agents {"agent_id": "http://127.0.0.1:7700"}`.

use std::sync::Arc;

use index_schema::wire::{RespondRequest, RespondResponse};
use runtime::agent::{AgentServer, FnAgent};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let echo = FnAgent::new("echo", |request: RespondRequest| async move {
        let last = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Ok(RespondResponse::reply(format!(
            "you said: {}",
            last.replace('@', "")
        )))
    });
    AgentServer::run_from_env(Arc::new(echo)).await
}
