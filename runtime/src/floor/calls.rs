//! The floor task's agent operations: a should-wake round, a respond call, and turning what
//! they produced into the controller's next event.

use super::*;

impl FloorTask {
    pub(super) fn start_round(
        &mut self,
        round: RoundId,
        candidates: Vec<Handle>,
        mentioned: &[Handle],
    ) -> Operation {
        self.awaiting = Some(Awaiting::Round {
            round,
            candidates: candidates.clone(),
        });
        let last_message = self
            .last_turn_message()
            .unwrap_or_else(|| Message::new("", Speaker::User.to_string(), "", now()));
        let recent_speakers = self.recent_speakers();
        let deadline = self.settings.should_wake_deadline;
        let calls: Vec<_> = candidates
            .into_iter()
            .map(|handle| {
                let agent = self.agent(&handle);
                let request = ShouldWakeRequest {
                    floor_id: self.id.clone(),
                    last_message: last_message.clone(),
                    context: WakeContext {
                        recent_speakers: recent_speakers.clone(),
                        mentioned_you: mentioned.contains(&handle),
                        your_last_message_id: self.last_message_of.get(&handle).cloned(),
                    },
                };
                async move {
                    let started = Instant::now();
                    let answer = match agent {
                        None => WakeAnswer::Failed {
                            error: "not on the floor".to_owned(),
                        },
                        Some(agent) => {
                            match tokio::time::timeout(deadline, agent.should_wake(&request)).await
                            {
                                Ok(Ok(response)) if response.wake => WakeAnswer::Yes {
                                    reason: response.reason,
                                },
                                Ok(Ok(_)) => WakeAnswer::No,
                                Ok(Err(error)) => WakeAnswer::Failed {
                                    error: error.to_string(),
                                },
                                Err(_) => WakeAnswer::Late,
                            }
                        }
                    };
                    TimedAnswer {
                        agent: handle,
                        answer,
                        elapsed_ms: ms(started.elapsed()),
                    }
                }
            })
            .collect();
        async move {
            let started = Instant::now();
            let answers = futures::future::join_all(calls).await;
            Completed::Round {
                round,
                answers,
                elapsed: started.elapsed(),
            }
        }
        .boxed()
    }

    pub(super) fn start_call(
        &mut self,
        call: CallId,
        agent: Handle,
        wake_reason: &WakeReason,
        initiator: Option<Speaker>,
    ) -> Operation {
        self.awaiting = Some(Awaiting::Call {
            call,
            agent: agent.clone(),
        });
        // Notes private to others are left out (see `rooms`).
        let mut messages: Vec<Message> = self
            .messages
            .iter()
            .rev()
            .filter(|m| rooms::visible_to(m, &agent))
            .take(self.settings.history_limit)
            .cloned()
            .collect();
        messages.reverse();
        let request = RespondRequest {
            floor_id: self.id.clone(),
            user_id: None,
            messages,
            wake_reason: Some(wire::WakeReason::from(wake_reason.as_wire())),
            initiator: initiator.map(|s| s.to_string()),
            context: None,
        };
        let target = self.agent(&agent);
        let deadline = self.settings.respond_deadline;
        let stream = self.settings.stream;
        let events = self.events.clone();
        let max_reply = self.settings.max_message_bytes;
        async move {
            let started = Instant::now();
            let Some(target) = target else {
                return Completed::Call {
                    call,
                    agent,
                    result: Err("not on the floor".to_owned()),
                    elapsed: started.elapsed(),
                };
            };
            let respond = async {
                if !stream {
                    return target.respond(&request, None).await;
                }
                let (deltas, mut pieces) = Deltas::channel();
                // Whatever the transport, a reply streams at most `max_reply` bytes: past them
                // the call is ended and what came is the reply (cut with a marker below), so an
                // agent that streams without end holds neither the floor nor its frontends'
                // memory.
                let forward = async {
                    let mut streamed = String::new();
                    while let Some(content) = pieces.recv().await {
                        if streamed.len() + content.len() > max_reply {
                            let room = max_reply - streamed.len();
                            let mut end = room.min(content.len());
                            while !content.is_char_boundary(end) {
                                end -= 1;
                            }
                            streamed.push_str(&content[..end]);
                            // One byte past the cap, so the reply is seen as cut.
                            streamed.push('…');
                            return Some(streamed);
                        }
                        streamed.push_str(&content);
                        let _ = events.send(FloorEvent::Delta {
                            call,
                            agent: agent.clone(),
                            content,
                        });
                    }
                    None
                };
                let respond = target.respond(&request, Some(deltas));
                tokio::pin!(respond, forward);
                let (mut answered, mut forwarded) = (None, false);
                while answered.is_none() || !forwarded {
                    tokio::select! {
                        r = &mut respond, if answered.is_none() => answered = Some(r),
                        over = &mut forward, if !forwarded => match over {
                            Some(streamed) => {
                                tracing::warn!(
                                    agent = %agent,
                                    limit = max_reply,
                                    "an agent's streamed reply passed the limit; the call is ended"
                                );
                                return Ok(RespondResponse::reply(streamed));
                            }
                            // Every piece is forwarded (the senders went with the call).
                            None => forwarded = true,
                        },
                    }
                }
                answered.expect("the loop ends once the call has answered")
            };
            let result = match tokio::time::timeout(deadline, respond).await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(error)) => Err(error.to_string()),
                Err(_) => Err(format!("no response within {deadline:?}")),
            };
            Completed::Call {
                call,
                agent,
                result,
                elapsed: started.elapsed(),
            }
        }
        .boxed()
    }

    /// Turns a finished operation into the controller's event, storing and recording what
    /// it produced.
    pub(super) fn completed(&mut self, done: Completed) -> Event {
        match done {
            Completed::Round {
                round,
                answers,
                elapsed,
            } => {
                for answer in &answers {
                    self.record(Entry::ShouldWake {
                        round,
                        agent: answer.agent.clone(),
                        answer: answer.answer.clone(),
                        elapsed_ms: answer.elapsed_ms,
                    });
                }
                let event = Event::ShouldWakeAnswers {
                    round,
                    answers: answers
                        .iter()
                        .map(|a| PollAnswer::new(a.agent.clone(), a.answer.clone()))
                        .collect(),
                };
                self.emit(FloorEvent::ShouldWake {
                    round,
                    answers,
                    elapsed_ms: ms(elapsed),
                });
                event
            }
            Completed::Call {
                call,
                agent,
                result,
                elapsed,
            } => {
                let (outcome, event) = match result {
                    Ok(response) if response.is_pass() => {
                        let reason = match response {
                            RespondResponse::Pass { reason } => reason,
                            RespondResponse::Reply(_) => None,
                        };
                        (
                            CallOutcome::Passed {
                                reason: reason.clone(),
                            },
                            Event::AgentPassed {
                                call,
                                agent: agent.clone(),
                                reason,
                            },
                        )
                    }
                    Ok(response) => {
                        let mut content = response.content().unwrap_or_default().to_owned();
                        let max = self.settings.max_message_bytes;
                        if content.len() > max {
                            let total = content.len();
                            let mut end = max;
                            while !content.is_char_boundary(end) {
                                end -= 1;
                            }
                            content.truncate(end);
                            content.push_str(&format!(
                                "\n[… {} more bytes cut: a message may have at most {max} bytes]",
                                total - end
                            ));
                        }
                        let (tool_calls, tool_results, metadata) = match response {
                            RespondResponse::Reply(reply) => {
                                (reply.tool_calls, reply.tool_results, reply.metadata)
                            }
                            RespondResponse::Pass { .. } => (Vec::new(), Vec::new(), None),
                        };
                        let message = self.store_with_tools(
                            Speaker::Agent(agent.clone()),
                            content.clone(),
                            tool_calls,
                            tool_results,
                            metadata,
                        );
                        if let Some(current) = self.current.as_mut() {
                            current.messages.push(message.clone());
                        }
                        (
                            CallOutcome::Responded {
                                message_id: message.id,
                            },
                            Event::AgentResponded {
                                call,
                                agent: agent.clone(),
                                content,
                            },
                        )
                    }
                    Err(error) => {
                        tracing::warn!(floor.id = %self.id, agent = %agent, %error, "respond call failed");
                        (
                            CallOutcome::Failed {
                                error: error.clone(),
                            },
                            Event::AgentFailed {
                                call,
                                agent: agent.clone(),
                                error,
                            },
                        )
                    }
                };
                self.record(Entry::Call {
                    call,
                    agent: agent.clone(),
                    outcome: outcome.clone(),
                    elapsed_ms: ms(elapsed),
                });
                self.emit(FloorEvent::CallFinished {
                    call,
                    agent,
                    outcome,
                    elapsed_ms: ms(elapsed),
                });
                event
            }
        }
    }
}
