//! Bounds on what a provider's answer may make the daemon hold: the bytes of one whole
//! (non-streamed) answer, of one server-sent event, and of one whole stream.
//!
//! Invariants:
//! - A whole-body read never holds more than its limit: a `Content-Length` over it is refused
//!   before reading, and the read stops at the first chunk that would pass it.
//! - A stream is handed to the SSE parser in whole lines only, each byte scanned once: the
//!   parser (`eventsource-stream`) re-scans its buffer for a line end on every chunk, so a
//!   long line fed in pieces would cost time quadratic in its length.
//! - No line, and no event (the lines up to a blank one), passes [`EVENT_LIMIT`]; no stream
//!   passes [`STREAM_LIMIT`]. Passing a limit is an error that ends the call; the caller then
//!   drops the response, which closes the connection.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::transport_error;
use crate::llm::{LlmError, ProviderId};

/// Most bytes of one non-streamed answer (chat completions, token answers, images: a
/// generated image arrives base64 inside the JSON).
pub const BODY_LIMIT: usize = 64 << 20;
/// Most bytes of one server-sent event. A Responses API `response.completed` event repeats
/// the whole answer, so this is far above any event a real answer sends.
pub(crate) const EVENT_LIMIT: usize = 16 << 20;
/// Most bytes of one streamed answer. A 128,000-token answer on the Responses API (the
/// wordiest wire format) is about 35 MB of events.
pub(crate) const STREAM_LIMIT: usize = 128 << 20;
/// Bytes an embeddings answer may take per input: a 4,096-dimension vector written as JSON
/// floats is about 100 KB.
pub(crate) const EMBEDDING_BYTES_PER_INPUT: usize = 512 << 10;

/// Which part of an answer passed its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerPart {
    /// A whole non-streamed answer.
    Body,
    /// One server-sent event (or one line of it).
    Event,
    /// A whole streamed answer.
    Stream,
}

impl std::fmt::Display for AnswerPart {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::Body => "answer",
            Self::Event => "single event of the stream",
            Self::Stream => "stream",
        })
    }
}

/// Why a bounded read stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BoundedReadError {
    /// The answer passed `limit` bytes.
    #[error("the {part} passed {limit} bytes")]
    TooLarge {
        /// What passed its limit.
        part: AnswerPart,
        /// The limit.
        limit: usize,
    },
    /// The connection failed.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
}

/// The whole body of `response`, refusing one over `limit` bytes. Not cancellable by itself:
/// see [`read_body`].
pub(crate) async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, BoundedReadError> {
    let too_large = BoundedReadError::TooLarge {
        part: AnswerPart::Body,
        limit,
    };
    let announced = response.content_length().unwrap_or(0);
    if announced > limit as u64 {
        return Err(too_large);
    }
    let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(0));
    while let Some(chunk) = response.chunk().await? {
        if body.len().saturating_add(chunk.len()) > limit {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The whole body of a provider's successful `response`, at most `limit` bytes, as an
/// [`LlmError`]: [`LlmError::TooLarge`] past the limit, [`LlmError::Cancelled`] when `cancel`
/// fires first. `timeout` names the request timeout in a transport error.
pub async fn read_body(
    provider: ProviderId,
    response: reqwest::Response,
    limit: usize,
    timeout: std::time::Duration,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, LlmError> {
    let read = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(LlmError::Cancelled),
        read = read_limited(response, limit) => read,
    };
    read.map_err(|error| match error {
        BoundedReadError::TooLarge { part, limit } => LlmError::TooLarge {
            provider,
            part,
            limit,
        },
        BoundedReadError::Transport(error) => transport_error(provider, &error, timeout),
    })
}

/// Line and event lengths of a stream, the bytes seen so far, and a partial line.
#[derive(Debug)]
struct Lines {
    event_limit: usize,
    stream_limit: usize,
    /// Bytes of the stream so far.
    total: usize,
    /// Bytes since the last blank line (the event being read).
    event: usize,
    /// Whether the last byte seen ended a line (so the next terminator ends an event).
    at_line_start: bool,
    /// Whether the last byte seen was `\r` (a `\n` after it ends the same line).
    after_cr: bool,
    /// Bytes after the last line end not yet handed on.
    partial: Vec<u8>,
}

impl Lines {
    fn new(event_limit: usize, stream_limit: usize) -> Self {
        Self {
            event_limit,
            stream_limit,
            total: 0,
            event: 0,
            at_line_start: true,
            after_cr: false,
            partial: Vec::new(),
        }
    }

    /// Takes `chunk` in: the whole lines it completes (with any partial line before them), or
    /// an error once a limit is passed.
    fn take(&mut self, chunk: &Bytes) -> Result<Option<Bytes>, BoundedReadError> {
        self.total = self.total.saturating_add(chunk.len());
        if self.total > self.stream_limit {
            return Err(BoundedReadError::TooLarge {
                part: AnswerPart::Stream,
                limit: self.stream_limit,
            });
        }
        // Where the last complete line of this chunk ends (exclusive). A `\r` as the last
        // byte is held back: a `\n` may follow in the next chunk.
        let mut complete = None;
        for (index, &byte) in chunk.iter().enumerate() {
            let after_cr = std::mem::replace(&mut self.after_cr, byte == b'\r');
            if byte == b'\n' && after_cr {
                complete = Some(index + 1);
                continue;
            }
            if byte == b'\n' || byte == b'\r' {
                if self.at_line_start {
                    self.event = 0;
                }
                self.at_line_start = true;
                if byte == b'\n' || index + 1 < chunk.len() {
                    complete = Some(index + 1);
                }
            } else {
                self.at_line_start = false;
                self.event += 1;
                if self.event > self.event_limit {
                    return Err(BoundedReadError::TooLarge {
                        part: AnswerPart::Event,
                        limit: self.event_limit,
                    });
                }
            }
        }
        let Some(end) = complete else {
            self.partial.extend_from_slice(chunk);
            return Ok(None);
        };
        let lines = if self.partial.is_empty() {
            chunk.slice(..end)
        } else {
            let mut joined = std::mem::take(&mut self.partial);
            joined.extend_from_slice(&chunk[..end]);
            Bytes::from(joined)
        };
        self.partial.extend_from_slice(&chunk[end..]);
        Ok(Some(lines))
    }
}

/// A provider's byte stream cut at line ends and held to [`EVENT_LIMIT`] per event and
/// [`STREAM_LIMIT`] in all (the limits are parameters for tests).
pub(crate) struct BoundedLines {
    inner: BoxStream<'static, Result<Bytes, reqwest::Error>>,
    lines: Lines,
    ready: VecDeque<Result<Bytes, BoundedReadError>>,
    done: bool,
}

impl BoundedLines {
    pub(crate) fn new(
        inner: BoxStream<'static, Result<Bytes, reqwest::Error>>,
        event_limit: usize,
        stream_limit: usize,
    ) -> Self {
        Self {
            inner,
            lines: Lines::new(event_limit, stream_limit),
            ready: VecDeque::new(),
            done: false,
        }
    }
}

impl Stream for BoundedLines {
    type Item = Result<Bytes, BoundedReadError>;

    fn poll_next(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.ready.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(context) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.done = true;
                    let rest = std::mem::take(&mut this.lines.partial);
                    if !rest.is_empty() {
                        this.ready.push_back(Ok(Bytes::from(rest)));
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    this.done = true;
                    this.ready.push_back(Err(error.into()));
                }
                Poll::Ready(Some(Ok(chunk))) => match this.lines.take(&chunk) {
                    Ok(Some(lines)) => this.ready.push_back(Ok(lines)),
                    Ok(None) => {}
                    Err(error) => {
                        // Nothing after the error: the partial line is dropped with it.
                        this.done = true;
                        this.lines.partial = Vec::new();
                        this.ready.push_back(Err(error));
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests;
