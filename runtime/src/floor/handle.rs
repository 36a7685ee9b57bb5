//! [`Floor`], the handle to a floor's task: what users of a floor call.

use super::*;

impl Floor {
    /// Opens a floor with these agents (in blueprint order). Must be called within a tokio
    /// runtime: the floor is a task of it.
    pub fn open(
        id: impl Into<String>,
        name: Option<String>,
        agents: Vec<FloorAgent>,
        settings: FloorSettings,
    ) -> Result<Self, FloorError> {
        Self::start(id.into(), name, agents, settings, None, None)
    }

    /// Opens a floor that records everything into `session` (see [`crate::session`]) and
    /// continues `history`, the conversation of a resumed session (empty for a new one): the
    /// agents' next calls carry it as if the floor had never stopped. No agent is called to
    /// rebuild it.
    pub fn open_session(
        id: impl Into<String>,
        name: Option<String>,
        agents: Vec<FloorAgent>,
        settings: FloorSettings,
        session: crate::session::LiveSession,
        history: Vec<Message>,
    ) -> Result<Self, FloorError> {
        Self::start(
            id.into(),
            name,
            agents,
            settings,
            Some((session, history)),
            None,
        )
    }

    /// Opens a floor; `room`: the sub-room it is (its message ids are `msg-<room>-<n>`, so
    /// they never meet the main floor's `msg-<n>`).
    pub(super) fn start(
        id: String,
        name: Option<String>,
        agents: Vec<FloorAgent>,
        settings: FloorSettings,
        session: Option<(crate::session::LiveSession, Vec<Message>)>,
        room: Option<&str>,
    ) -> Result<Self, FloorError> {
        if agents.len() > settings.max_agents {
            return Err(FloorError::Full(settings.max_agents));
        }
        let controller = Controller::new(specs(&agents), settings.limits.clone())?;
        let transcript = match &settings.transcript_dir {
            Some(dir) => Some(
                TranscriptWriter::create(dir, &id)
                    .map_err(|e| FloorError::Transcript(e.to_string()))?,
            ),
            None => None,
        };
        let (commands, inbox) = mpsc::channel(256);
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let mut task = FloorTask {
            id: id.clone(),
            name,
            settings,
            controller,
            agents,
            messages: Vec::new(),
            message_ids: HashMap::new(),
            dropped: 0,
            history_bytes: 0,
            next_message: 0,
            last_message_of: HashMap::new(),
            events: events.clone(),
            transcript,
            opened: Instant::now(),
            posts: VecDeque::new(),
            current: None,
            awaiting: None,
            cancelling: false,
            joining: Vec::new(),
            session: None,
            presence: rooms::Presence::new(room),
        };
        if let Some((session, history)) = session {
            task.restore(history);
            task.session = Some(session);
        }
        task.record(Entry::Floor {
            floor_id: task.id.clone(),
            opened_at: now().to_string(),
            roster: task.controller.roster().to_vec(),
            limits: task.settings.limits.clone(),
            should_wake_deadline_ms: millis(task.settings.should_wake_deadline),
            respond_deadline_ms: millis(task.settings.respond_deadline),
        });
        task.flush();
        tokio::spawn(task.run(inbox));
        Ok(Self {
            id,
            commands,
            events,
        })
    }

    /// The floor's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Live events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<FloorEvent> {
        self.events.subscribe()
    }

    pub(super) async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, FloorError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(make(reply))
            .await
            .map_err(|_| FloorError::Closed)?;
        answer.await.map_err(|_| FloorError::Closed)
    }

    /// The user posts a message. Answers once the floor knows who speaks first (after the
    /// should-wake round, if there is one), or at once if the message is queued.
    pub async fn post(&self, content: impl Into<String>) -> Result<PostReceipt, FloorError> {
        let content = content.into();
        self.ask(|receipt| Command::Post {
            from: Speaker::User,
            content,
            metadata: None,
            receipt,
            done: None,
        })
        .await?
    }

    /// A participant speaks outside a respond call — an agent that reaches the floor by
    /// another way than being asked (a Switchboard agent writing a message file, or one
    /// connected over MCP). The message is stored as `from`'s, with `metadata`, and starts a
    /// turn the way a user message does: the turn-taking rules treat its author as the
    /// turn's initiator, so the agents it asks answer to `from` (`initiator` in their
    /// respond call) and the turn ends when the floor returns to it. Answers once the message
    /// is stored, like [`Floor::post`].
    pub async fn post_as(
        &self,
        from: Handle,
        content: impl Into<String>,
        metadata: Option<serde_json::Map<String, serde_json::Value>>,
    ) -> Result<PostReceipt, FloorError> {
        let content = content.into();
        self.ask(|receipt| Command::Post {
            from: Speaker::from(from),
            content,
            metadata,
            receipt,
            done: None,
        })
        .await?
    }

    /// The user posts a message and waits for its turn to end.
    pub async fn post_and_wait(
        &self,
        content: impl Into<String>,
    ) -> Result<TurnSummary, FloorError> {
        let content = content.into();
        let (done, finished) = oneshot::channel();
        self.ask(|receipt| Command::Post {
            from: Speaker::User,
            content,
            metadata: None,
            receipt,
            done: Some(done),
        })
        .await??;
        finished.await.map_err(|_| FloorError::Closed)
    }

    /// Adds an agent at the end of the roster. Refused during a turn.
    pub async fn add_agent(&self, agent: FloorAgent) -> Result<(), FloorError> {
        self.ask(|reply| Command::AddAgent { agent, reply }).await?
    }

    /// Adds an agent at the end of the roster as soon as the floor is idle: at once when no
    /// turn runs, else when the running turn (and any message queued behind it) has ended.
    /// Answers when it has joined (or could not: the floor was full, the handle taken, the
    /// floor closed). An agent that cannot join is shut down. This is how an agent taking part
    /// in a turn (the `@floor-manager`) brings another in: it spawns this and answers.
    pub async fn add_agent_when_idle(&self, agent: FloorAgent) -> Result<(), FloorError> {
        self.ask(|reply| Command::AddAgentWhenIdle { agent, reply })
            .await?
    }

    /// A handle that does not keep the floor open (see [`WeakFloor`]).
    pub fn downgrade(&self) -> WeakFloor {
        WeakFloor {
            id: self.id.clone(),
            commands: self.commands.downgrade(),
            events: self.events.clone(),
        }
    }

    /// Removes an agent and shuts it down. Refused during a turn.
    pub async fn remove_agent(&self, handle: Handle) -> Result<(), FloorError> {
        self.ask(|reply| Command::RemoveAgent { handle, reply })
            .await?
    }

    /// Messages, oldest first: without `since`, the latest `limit`; with it, the first
    /// `limit` after that message.
    pub async fn messages(
        &self,
        since: Option<String>,
        limit: usize,
    ) -> Result<Vec<Message>, FloorError> {
        self.ask(|reply| Command::Messages {
            since,
            limit,
            reply,
        })
        .await?
    }

    /// The roster and counters.
    pub async fn snapshot(&self) -> Result<FloorSnapshot, FloorError> {
        self.ask(|reply| Command::Snapshot { reply }).await
    }

    /// Forgets the conversation (the interactive `/clear`): later respond calls carry only
    /// what is said from now on. Refused during a turn, so no running call loses its context
    /// half-way. The transcript keeps everything. Answers how many messages were forgotten,
    /// or `None` when a turn runs (nothing is cleared then).
    pub async fn clear(&self) -> Result<Option<usize>, FloorError> {
        self.ask(|reply| Command::Clear { reply }).await
    }

    /// Cancels the running turn; `false` if none was running.
    pub async fn cancel_turn(&self) -> Result<bool, FloorError> {
        self.ask(|reply| Command::Cancel { reply }).await
    }

    /// Closes the floor: cancels what runs and shuts every agent down.
    pub async fn close(&self) -> Result<(), FloorError> {
        self.ask(|reply| Command::Close { reply }).await
    }
}

impl FloorTask {
    /// Takes a resumed session's conversation as the floor's own.
    fn restore(&mut self, history: Vec<Message>) {
        for message in history {
            if let Some(n) = message
                .id
                .strip_prefix(self.presence.prefix.as_str())
                .and_then(|n| n.parse::<u64>().ok())
            {
                self.next_message = self.next_message.max(n);
            }
            if let Ok(handle) = Handle::new(&message.from) {
                self.last_message_of.insert(handle, message.id.clone());
            }
            self.message_ids
                .insert(message.id.clone(), self.dropped + self.messages.len());
            self.history_bytes += message_bytes(&message);
            self.messages.push(message);
        }
        self.trim_history();
    }
}
