//! A scripted fake [`LlmClient`] for agent tests: answers come from a queue of scripts, and
//! every request is recorded. It also shows how an in-process backend fits the trait: a
//! [`FakeLlm::push_live`] answer is fed token by token through a channel while the consumer
//! reads it.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    ChatRequest, EventStream, FinishReason, LlmClient, LlmError, StreamEvent, ToolCall, Usage,
};

enum Script {
    /// These events, then the end (a stream that should finish ends with `Finish`).
    Events(Vec<Result<StreamEvent, LlmError>>),
    /// These events, then silence until the request is cancelled.
    Stall(Vec<Result<StreamEvent, LlmError>>),
    /// Whatever the test sends through the channel.
    Live(mpsc::UnboundedReceiver<Result<StreamEvent, LlmError>>),
}

/// The scripted fake. Unscripted requests get an error, so a test notices an extra call.
#[derive(Default)]
pub struct FakeLlm {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl std::fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeLlm")
            .field("scripted", &self.remaining())
            .finish_non_exhaustive()
    }
}

impl FakeLlm {
    /// A fake with nothing scripted.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&self, script: Script) {
        self.scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(script);
    }

    /// Answers the next request with exactly these events.
    pub fn push_events(&self, events: Vec<Result<StreamEvent, LlmError>>) {
        self.push(Script::Events(events));
    }

    /// Answers the next request with `text` (one delta per word), usage and `Finish(Stop)`.
    pub fn push_text(&self, text: &str) {
        let mut events: Vec<Result<StreamEvent, LlmError>> = text
            .split_inclusive(' ')
            .map(|piece| Ok(StreamEvent::TextDelta(piece.to_owned())))
            .collect();
        events.push(Ok(StreamEvent::Usage(Usage {
            input_tokens: 10,
            output_tokens: events.len() as u64,
            cached_input_tokens: 0,
        })));
        events.push(Ok(StreamEvent::Finish(FinishReason::Stop)));
        self.push_events(events);
    }

    /// Answers the next request with these tool calls and `Finish(ToolCalls)`.
    pub fn push_tool_calls(&self, calls: Vec<ToolCall>) {
        let mut events: Vec<Result<StreamEvent, LlmError>> = calls
            .into_iter()
            .map(|call| Ok(StreamEvent::ToolCall(call)))
            .collect();
        events.push(Ok(StreamEvent::Finish(FinishReason::ToolCalls)));
        self.push_events(events);
    }

    /// Fails the next request with `error`.
    pub fn push_error(&self, error: LlmError) {
        self.push_events(vec![Err(error)]);
    }

    /// Sends `events`, then stays silent until the request is cancelled.
    pub fn push_stall(&self, events: Vec<Result<StreamEvent, LlmError>>) {
        self.push(Script::Stall(events));
    }

    /// Answers the next request with whatever is sent through the returned channel, as it is
    /// sent (the way an in-process model streams tokens). Dropping the sender ends the stream.
    pub fn push_live(&self) -> mpsc::UnboundedSender<Result<StreamEvent, LlmError>> {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.push(Script::Live(receiver));
        sender
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Scripted answers not used yet.
    pub fn remaining(&self) -> usize {
        self.scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl LlmClient for FakeLlm {
    fn stream(&self, request: ChatRequest, cancel: CancellationToken) -> EventStream {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request);
        let script = self
            .scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let events: EventStream = match script {
            None => futures::stream::iter([Err(LlmError::Interrupted {
                provider: None,
                detail: "the scripted fake LLM has no answer left".to_owned(),
            })])
            .boxed(),
            Some(Script::Events(events)) => futures::stream::iter(events).boxed(),
            Some(Script::Stall(events)) => {
                let cancelled = cancel.clone();
                futures::stream::iter(events)
                    .chain(futures::stream::once(async move {
                        cancelled.cancelled().await;
                        Err(LlmError::Cancelled)
                    }))
                    .boxed()
            }
            Some(Script::Live(receiver)) => {
                futures::stream::unfold(receiver, |mut receiver| async move {
                    receiver.recv().await.map(|event| (event, receiver))
                })
                .boxed()
            }
        };
        // Cancellation wins over whatever is scripted, and nothing follows an error.
        futures::stream::unfold(
            (events, cancel, false),
            |(mut events, cancel, done)| async move {
                if done {
                    return None;
                }
                let next = tokio::select! {
                    biased;
                    () = cancel.cancelled() => Some(Err(LlmError::Cancelled)),
                    next = events.next() => next,
                };
                let next = next?;
                let done = next.is_err();
                Some((next, (events, cancel, done)))
            },
        )
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, collect, complete};

    #[tokio::test]
    async fn answers_in_script_order_and_records_requests() {
        let fake = FakeLlm::new();
        fake.push_text("hello there");
        fake.push_tool_calls(vec![ToolCall {
            id: "c1".into(),
            name: "ReadFile".into(),
            arguments: r#"{"path":"a"}"#.into(),
        }]);
        let request = ChatRequest::new("m", vec![Message::user("hi")]);
        let first = complete(&fake, request.clone(), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(first.content, "hello there");
        assert_eq!(first.finish_reason, FinishReason::Stop);
        let second = complete(&fake, request, CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(second.tool_calls[0].name, "ReadFile");
        assert_eq!(second.finish_reason, FinishReason::ToolCalls);
        assert_eq!(fake.requests().len(), 2);
        let error = complete(
            &fake,
            ChatRequest::new("m", vec![]),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(error.to_string().contains("no answer left"), "{error}");
    }

    #[tokio::test]
    async fn a_live_answer_streams_as_sent_and_cancellation_stops_a_stall() {
        let fake = FakeLlm::new();
        let sender = fake.push_live();
        let mut stream = fake.stream(ChatRequest::new("m", vec![]), CancellationToken::new());
        sender
            .send(Ok(StreamEvent::TextDelta("tok".into())))
            .unwrap();
        assert_eq!(
            stream.next().await.unwrap().unwrap(),
            StreamEvent::TextDelta("tok".into())
        );
        sender
            .send(Ok(StreamEvent::Finish(FinishReason::Stop)))
            .unwrap();
        drop(sender);
        assert_eq!(
            stream.next().await.unwrap().unwrap(),
            StreamEvent::Finish(FinishReason::Stop)
        );
        assert!(stream.next().await.is_none());

        fake.push_stall(vec![Ok(StreamEvent::TextDelta("partial".into()))]);
        let cancel = CancellationToken::new();
        let stream = fake.stream(ChatRequest::new("m", vec![]), cancel.clone());
        let trigger = cancel.clone();
        crate::tasks::spawn_in_test(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            trigger.cancel();
        });
        assert_eq!(collect(stream).await.unwrap_err(), LlmError::Cancelled);
    }
}
