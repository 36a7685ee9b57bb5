//! An agent made of a function, for the few-lines case.

use std::fmt;
use std::future::Future;

use async_trait::async_trait;
use index_schema::wire::{
    AgentInfo, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
};

use super::{Agent, AgentError, Deltas};

type WakeRule = Box<dyn Fn(&ShouldWakeRequest) -> ShouldWakeResponse + Send + Sync>;

/// An agent whose response is a function of the request. It wakes when mentioned, unless
/// [`FnAgent::wake_when`] says otherwise.
///
/// ```no_run
/// use std::sync::Arc;
/// use index_schema::wire::{RespondRequest, RespondResponse};
/// use runtime::agent::{AgentServer, FnAgent};
///
/// # async fn demo() -> std::io::Result<()> {
/// let echo = FnAgent::new("echo", |request: RespondRequest| async move {
///     let last = request.messages.last().map(|m| m.content.clone()).unwrap_or_default();
///     Ok(RespondResponse::reply(format!("you said: {last}")))
/// });
/// AgentServer::run_from_env(Arc::new(echo)).await
/// # }
/// ```
pub struct FnAgent<F> {
    info: AgentInfo,
    respond: F,
    wake: WakeRule,
}

impl<F, Fut> FnAgent<F>
where
    F: Fn(RespondRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<RespondResponse, AgentError>> + Send,
{
    /// An agent `@name` answering with `respond`.
    pub fn new(name: &str, respond: F) -> Self {
        let info = AgentInfo {
            id: Some(format!("@{}", name.trim_start_matches('@'))),
            name: Some(name.trim_start_matches('@').to_owned()),
            ..AgentInfo::default()
        };
        Self {
            info,
            respond,
            wake: Box::new(|request| {
                if request.context.mentioned_you {
                    ShouldWakeResponse::wake("mentioned")
                } else {
                    ShouldWakeResponse::sleep()
                }
            }),
        }
    }

    /// What `/ofc/info` says.
    pub fn with_info(mut self, info: AgentInfo) -> Self {
        self.info = info;
        self
    }

    /// When to answer yes to should-wake.
    pub fn wake_when(
        mut self,
        rule: impl Fn(&ShouldWakeRequest) -> ShouldWakeResponse + Send + Sync + 'static,
    ) -> Self {
        self.wake = Box::new(rule);
        self
    }
}

impl<F> fmt::Debug for FnAgent<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnAgent")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F, Fut> Agent for FnAgent<F>
where
    F: Fn(RespondRequest) -> Fut + Send + Sync,
    Fut: Future<Output = Result<RespondResponse, AgentError>> + Send,
{
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(self.info.clone())
    }

    async fn should_wake(
        &self,
        request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        Ok((self.wake)(request))
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        _deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        (self.respond)(request.clone()).await
    }
}
