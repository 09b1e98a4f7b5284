//! The bridge's HTTP side: one POST per client message to the daemon's `/mcp` (with the
//! session and negotiated protocol version), the answer relayed as a JSON body or as the
//! messages of an SSE stream, the session replayed after a daemon restart, an answer made up
//! when the daemon stopped before answering, and the session closed at the end.

use super::*;

impl Bridge {
    /// The POST of one message to the daemon's `/mcp`, with the session and (after the
    /// handshake) the negotiated protocol version.
    pub(super) fn request(
        &self,
        endpoint: &Target,
        message: &Message,
        session: Option<&str>,
        is_handshake: bool,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(format!("{}/mcp", endpoint.base))
            .bearer_auth(&endpoint.token)
            .header(reqwest::header::ACCEPT, ACCEPT)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(message.text.clone());
        if let Some(session) = session {
            request = request.header(SESSION_HEADER, session);
        }
        if let Some(version) = self.state().protocol_version.clone()
            && !is_handshake
        {
            request = request.header(VERSION_HEADER, version);
        }
        request
    }

    /// Keeps the session a successful handshake answer opened.
    pub(super) fn note_session(&self, response: &reqwest::Response) {
        let session_id = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut state = self.state();
        state.session_id = session_id;
        state.generation += 1;
    }

    /// POSTs one message and forwards what comes back to stdout — except the answer to a
    /// replayed handshake (`from_client` false), which the client already had.
    pub(super) async fn post(
        &self,
        message: &Message,
        session: Option<&str>,
        from_client: bool,
    ) -> Posted {
        let endpoint = match self.target().await {
            Ok(endpoint) => endpoint,
            Err(reason) => return Posted::Unreachable(reason),
        };
        let is_handshake = message.method() == Some("initialize");
        let replay = is_handshake && !from_client;
        let request = self.request(&endpoint, message, session, is_handshake);
        let response = match request.send().await {
            Ok(response) => response,
            // Connected and sent, then the answer never came (the daemon holds back a
            // stream's headers until its first event, so a call waiting for a person dies
            // here): it may have run, so it is not sent again; the client learns Souz stopped.
            Err(error) if !error.is_connect() && !error.is_builder() => {
                return match message.request_id() {
                    Some(id) => self.unanswered(id, &endpoint.base, replay).await,
                    None => Posted::Done,
                };
            }
            Err(_) => {
                // The daemon may have restarted elsewhere: look again before giving up.
                self.forget_target();
                return match self.target().await {
                    Ok(fresh) if fresh.base != endpoint.base => {
                        Box::pin(self.post(message, session, from_client)).await
                    }
                    Ok(_) => Posted::Unreachable(not_running(&endpoint.base)),
                    Err(reason) => Posted::Unreachable(reason),
                };
            }
        };
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND && session.is_some() {
            return Posted::SessionGone;
        }
        if is_handshake && status.is_success() {
            self.note_session(&response);
        }
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        // The id of a request, whose answer this POST must bring back.
        let request_id = message.request_id();
        if is_stream {
            let mut answered = request_id.is_none();
            let mut events = std::pin::pin!(messages(response.bytes_stream()));
            while let Some(event) = events.next().await {
                answered = answered || request_id.is_some_and(|id| answers(&event, id));
                self.relay(event, is_handshake, replay);
            }
            return match request_id {
                Some(id) if !answered => self.unanswered(id, &endpoint.base, replay).await,
                _ => Posted::Done,
            };
        }
        let body = match response.text().await {
            Ok(body) => body,
            Err(_) => {
                return match request_id {
                    Some(id) => self.unanswered(id, &endpoint.base, replay).await,
                    None => Posted::Done,
                };
            }
        };
        if status == reqwest::StatusCode::UNAUTHORIZED {
            self.forget_target();
            let id = message.id.clone();
            self.send_error(
                &id,
                -32603,
                "Souz refused this bridge's client token (revoked?); run `souz mcp-config \
                 claude-desktop` again, with the same SOUZ_HOME as the daemon.",
            );
            return Posted::Done;
        }
        let trimmed = body.trim();
        if trimmed.starts_with('{') {
            self.relay(trimmed.to_owned(), is_handshake, replay);
        } else if !status.is_success() {
            let id = message.id.clone();
            self.send_error(
                &id,
                -32603,
                &format!(
                    "Souz answered {status}: {}",
                    trimmed.chars().take(300).collect::<String>()
                ),
            );
        }
        Posted::Done
    }

    /// The daemon's answer to request `id` broke off before the answer came: it stopped (or
    /// the connection failed). The client gets an error saying so instead of no answer; a
    /// replayed handshake (the bridge's own request) fails instead.
    pub(super) async fn unanswered(&self, id: &Value, base: &str, replay: bool) -> Posted {
        let reason = if self.check_daemon().await.is_err() {
            // It may come back elsewhere: read the address again on the next request.
            self.forget_target();
            self.state().session_id = None;
            stopped(base)
        } else {
            "The connection to Souz broke off before it answered this request; try again."
                .to_owned()
        };
        eprintln!("souz mcp-stdio: {reason}");
        if replay {
            return Posted::Unreachable(reason);
        }
        self.send_error(id, -32603, &reason);
        Posted::Done
    }

    /// Forwards one message from the daemon, noting the negotiated version of a handshake.
    pub(super) fn relay(&self, data: String, is_handshake: bool, replay: bool) {
        if is_handshake
            && let Ok(value) = serde_json::from_str::<Value>(&data)
            && let Some(version) = value["result"]["protocolVersion"].as_str()
        {
            self.state().protocol_version = Some(version.to_owned());
        }
        if !replay {
            self.send(data);
        }
    }

    /// Ends the session when the client goes away.
    pub(super) async fn close_session(&self) {
        let Some(session) = self.state().session_id.clone() else {
            return;
        };
        let Ok(endpoint) = self.target().await else {
            return;
        };
        let _ = self
            .http
            .delete(format!("{}/mcp", endpoint.base))
            .bearer_auth(&endpoint.token)
            .header(SESSION_HEADER, session)
            .timeout(Duration::from_secs(2))
            .send()
            .await;
    }
}

/// The messages in a server-sent event stream: each event's data, through the same SSE parser
/// as the rest of Souz (`eventsource-stream`). Events without data (the server's priming events
/// carry only an id and a retry) are skipped; the stream ends at the first transport error.
pub(super) fn messages<S, B, E>(bytes: S) -> impl futures::Stream<Item = String>
where
    S: futures::Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    bytes
        .eventsource()
        .take_while(|item| std::future::ready(item.is_ok()))
        .filter_map(|item| {
            std::future::ready(
                item.ok()
                    .map(|event| event.data)
                    .filter(|data| !data.trim().is_empty()),
            )
        })
}

/// Whether the server message `data` is the answer (a result or an error) to request `id`.
pub(super) fn answers(data: &str, id: &Value) -> bool {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        id: Value,
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    serde_json::from_str::<Answer>(data)
        .is_ok_and(|answer| &answer.id == id && (answer.result.is_some() || answer.error.is_some()))
}

pub(super) fn stopped(base: &str) -> String {
    format!(
        "Souz stopped before it answered this request (it was running at {base}); the request \
         did not complete. Start Souz again with `souz serve` (or open the Souz app); this \
         bridge connects on the next request."
    )
}

pub(super) fn not_running(base: &str) -> String {
    format!(
        "Souz is not running at {base}. Start it with `souz serve` (or open the Souz app); \
         this bridge connects on the next request."
    )
}
