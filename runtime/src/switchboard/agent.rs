//! A Switchboard member as the floor sees it: an [`Agent`] whose turns are files.

use std::sync::Arc;

use async_trait::async_trait;
use index_schema::switchboard::Action;
use index_schema::wire::{
    AgentInfo, AgentReply, RespondRequest, RespondResponse, ShouldWakeRequest, ShouldWakeResponse,
    WakeReason,
};
use serde_json::{Value, json};

use super::Switchboard;
use crate::agent::{Agent, AgentError, Deltas};

/// A member of the floor's Switchboard. Asked (`@name?`), it writes the question into
/// `inbox/<name>/` — a `delegate_task` from the agent that asked, or a `submit_result` when
/// a delegation it made returns to it — and answers with the member's reply once the reader
/// finds it in an inbox of the floor side. It never wakes by itself: it is asked, or it
/// speaks on its own by writing a message.
#[derive(Debug)]
pub struct SwitchboardAgent {
    sb: Arc<Switchboard>,
    name: String,
}

/// Forgets the wait for an answer when the respond call ends, however it ends.
struct Waiting<'a> {
    sb: &'a Switchboard,
    member: &'a str,
    question: String,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.sb.forget_answer(self.member, &self.question);
    }
}

impl SwitchboardAgent {
    pub(crate) fn new(sb: Arc<Switchboard>, name: String) -> Self {
        Self { sb, name }
    }

    /// Its name (its inbox's).
    pub fn name(&self) -> &str {
        &self.name
    }
}

fn bare(handle: &str) -> String {
    handle.trim_start_matches('@').to_ascii_lowercase()
}

#[async_trait]
impl Agent for SwitchboardAgent {
    async fn info(&self) -> Result<AgentInfo, AgentError> {
        Ok(AgentInfo {
            id: Some(format!("@{}", self.name)),
            name: Some(self.name.clone()),
            tagline: Some(format!(
                "a Switchboard agent: its turns are files in .switchboard/inbox/{}/",
                self.name
            )),
            ..AgentInfo::default()
        })
    }

    async fn should_wake(
        &self,
        _request: &ShouldWakeRequest,
    ) -> Result<ShouldWakeResponse, AgentError> {
        // Told of what names it through its inbox; it takes the floor only when asked.
        Ok(ShouldWakeResponse::sleep())
    }

    async fn respond(
        &self,
        request: &RespondRequest,
        _deltas: Option<Deltas>,
    ) -> Result<RespondResponse, AgentError> {
        let Some(last) = request.messages.last() else {
            return Ok(RespondResponse::pass(Some("nothing to answer".into())));
        };
        let returned = request.wake_reason == Some(WakeReason::DelegationReturned);
        let asker = bare(request.initiator.as_deref().unwrap_or(&last.from));
        let (action, sender) = if returned {
            (Action::SubmitResult, bare(&last.from))
        } else {
            (Action::DelegateTask, asker.clone())
        };
        let meta = json!({"floor": {
            "floorId": request.floor_id,
            "messageId": last.id,
            "wakeReason": request.wake_reason.as_ref().map(|w| w.to_string()),
        }});
        let Value::Object(meta) = meta else {
            return Err(AgentError::Other("metadata is an object".into()));
        };
        let question = self.sb.message_to(
            action,
            &sender,
            &self.name,
            last.content.clone(),
            Some(meta),
        );
        question
            .validate()
            .map_err(|d| AgentError::Other(format!("cannot write the question: {d:?}")))?;
        // Waiting before it is written: an agent may answer at once.
        let answer = self.sb.expect_answer(&self.name, &question.id, &asker);
        let _waiting = Waiting {
            sb: &self.sb,
            member: &self.name,
            question: question.id.clone(),
        };
        self.sb.send_to_member(&question).map_err(|e| {
            AgentError::Transport(format!("cannot write to inbox/{}: {e}", self.name))
        })?;
        let answer = answer
            .await
            .map_err(|_| AgentError::NotRunning("the Switchboard stopped".into()))?;
        Ok(RespondResponse::Reply(AgentReply {
            content: answer.content,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            metadata: Some(answer.metadata),
        }))
    }

    async fn shutdown(&self) {}
}
