//! An LLM agent's memory: the running summary of the floor messages before its window (see
//! [`LlmAgent::respond`]'s memory step), told to the session as compactions and restored from
//! it on a resume.

use super::*;

impl LlmAgent {
    /// Tells `hook` of every new memory summary (a compaction of the messages it covers).
    pub fn on_compaction(&self, hook: CompactionHook) {
        *lock(&self.on_compaction) = Some(hook);
    }

    /// Takes a summary recorded before (a resumed session's latest compaction): the messages
    /// through `through` are not sent in full again while it stands, and no model is asked.
    pub fn restore_summary(&self, through: &str, text: &str) {
        if let Ok(mut summary) = self.summary.try_lock() {
            *summary = Some(Summary {
                through: through.to_owned(),
                text: text.to_owned(),
            });
        }
    }

    /// The memory step of a response: where the floor messages sent in full start, and the
    /// running summary of those before.
    ///
    /// Without `summary`, the latest `memory` messages. With it, the messages after the
    /// summary are sent in full while there are at most `window + window / 2` of them; past
    /// that, all but the latest `window` are folded into the summary by one call to the
    /// agent's model (so one summary call per `window / 2` new messages, not one per turn).
    /// A summary whose last message is no longer on the floor (`/clear`) is dropped. If the
    /// summary call fails, the response goes on with the window and the old summary, and the
    /// next response tries again.
    pub(super) async fn memory_step(&self, floor: &[Message]) -> (usize, Option<String>) {
        let Some(window) = self.config.memory else {
            return (0, None);
        };
        let windowed = floor.len().saturating_sub(window);
        if !self.config.memory_summary {
            return (windowed, None);
        }
        let mut summary = self.summary.lock().await;
        let (start, old) = match summary.as_ref().and_then(|s| {
            floor
                .iter()
                .position(|m| m.id == s.through)
                .map(|i| (i + 1, s.text.clone()))
        }) {
            Some((i, text)) => (i, Some(text)),
            None => {
                *summary = None;
                (0, None)
            }
        };
        if floor.len() - start.min(floor.len()) <= window + (window / 2).max(1) {
            return (start.min(floor.len()), old);
        }
        let older = &floor[start..windowed];
        match self.summarize(old.as_deref(), older).await {
            Ok(text) => {
                let through = floor[windowed - 1].id.clone();
                let hook = lock(&self.on_compaction).clone();
                if let Some(hook) = hook {
                    hook(&through, &text);
                }
                *summary = Some(Summary {
                    through,
                    text: text.clone(),
                });
                (windowed, Some(text))
            }
            Err(e) => {
                tracing::warn!(agent = %self.config.handle, error = %e, "memory summary failed; using the window alone");
                (windowed, old)
            }
        }
    }

    /// One summary call: the old summary and the messages after it, newest kept when long.
    async fn summarize(&self, old: Option<&str>, older: &[Message]) -> Result<String, LlmError> {
        let mut lines: Vec<String> = Vec::new();
        let mut size = 0;
        for m in older.iter().rev() {
            let mut line = format!("{}: {}", m.from, m.content);
            truncate(&mut line, MAX_SUMMARY_MESSAGE);
            size += line.len() + 1;
            if size > MAX_SUMMARY_INPUT && !lines.is_empty() {
                break;
            }
            lines.push(line);
        }
        lines.reverse();
        let mut input = String::new();
        if let Some(old) = old {
            let _ = write!(input, "Summary so far:\n{old}\n\n");
        }
        let _ = write!(input, "Messages since:\n{}", lines.join("\n"));
        let messages = [
            ChatMessage::text(
                "system",
                format!(
                    "You keep the memory of {} on a floor where several participants talk. \
                     Update the summary with the messages since: who asked for what, what was \
                     found or decided, what is still open. At most 200 words. Answer with the \
                     summary only.",
                    self.config.handle
                ),
            ),
            ChatMessage::text("user", input),
        ];
        let chat = ChatRequest {
            model: &self.config.model,
            messages: &messages,
            temperature: self.config.temperature,
            stream: true,
            tools: &[],
        };
        let mut text = self
            .client
            .chat(&chat, &mut |_| {})
            .await?
            .content
            .trim()
            .to_owned();
        truncate(&mut text, MAX_SUMMARY);
        Ok(text)
    }
}
