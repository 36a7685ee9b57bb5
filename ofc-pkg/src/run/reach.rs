//! Before anything starts: every remote agent and model endpoint of the plan must answer.

use std::time::Duration;

use anyhow::Result;
use index_schema::{Diagnostics, FieldPath};
use runtime::agent::{Agent, HttpAgent};

use super::plan::{self, Kind, Planned};
use crate::output::UserError;

/// How long a remote agent may take to answer `/ofc/info` when checked before the start.
pub(crate) const REMOTE_CHECK: Duration = Duration::from_secs(5);

/// Remote agents and model endpoints must answer before anything starts; every one that
/// does not is reported with the blueprint field that names it.
pub(crate) async fn check_reachable(loaded: &plan::Loaded, planned: &[Planned]) -> Result<()> {
    let client = HttpAgent::default_client();
    // Remote agents and model endpoints answer before anything starts.
    let checks = planned.iter().filter_map(|p| {
        let blame = p.blame.clone();
        match &p.kind {
            Kind::Remote(endpoint) => {
                let agent = HttpAgent::new(endpoint.clone(), client.clone());
                let endpoint = endpoint.clone();
                Some(futures::FutureExt::boxed(async move {
                    match tokio::time::timeout(REMOTE_CHECK, agent.info()).await {
                        Ok(Ok(_)) => None,
                        Ok(Err(e)) => Some((
                            blame,
                            format!("the remote agent at {endpoint} does not answer: {e}"),
                        )),
                        Err(_) => Some((
                            blame,
                            format!(
                                "the remote agent at {endpoint} did not answer /ofc/info within {REMOTE_CHECK:?}"
                            ),
                        )),
                    }
                }))
            }
            Kind::Llm(agent) => {
                let agent = agent.clone();
                Some(futures::FutureExt::boxed(async move {
                    agent.probe(REMOTE_CHECK).await.err().map(|e| {
                        (
                            blame,
                            format!(
                                "the model endpoint {} of {} cannot be reached: {e}",
                                agent.config().endpoint,
                                agent.config().handle
                            ),
                        )
                    })
                }))
            }
            _ => None,
        }
    });
    let failures: Vec<(FieldPath, String)> = futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect();
    if !failures.is_empty() {
        let mut diags = Diagnostics::default();
        for (path, message) in failures {
            diags.push(path, message);
        }
        return Err(UserError::new(format!(
            "cannot reach every agent:\n{}",
            plan::report(&loaded.path, &loaded.doc, diags)
        ))
        .hint("start the remote agents and model servers (or fix their endpoints), or remove them from the blueprint; nothing was started")
        .into());
    }

    Ok(())
}
