//! One external server's life: its session (made on demand, one at a time, generation-counted
//! so a broken one is replaced once), its health and backoff, the reconnection loop, the
//! paged tool listing with trust on first use, and tool calls (cancelled on the server with
//! `notifications/cancelled` when the gate's call is, sent once more on a fresh session when
//! the old one broke).

use super::*;

pub(super) struct HealthView {
    pub(super) connected: bool,
    pub(super) tools: usize,
    pub(super) last_error: Option<String>,
    pub(super) needs_login: bool,
}

impl Server {
    pub(super) fn health(&self) -> HealthView {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        HealthView {
            connected: health.connected,
            tools: health.tools,
            last_error: health.last_error.clone(),
            needs_login: health.needs_login,
        }
    }

    /// Forgets the session and the backoff so the keeper connects again now (new credentials).
    pub(super) async fn reconnect(&self) {
        if let Some(old) = self.session.lock().await.take() {
            close(old.session).await;
        }
        {
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.connected = false;
            health.retry_at = None;
            health.failures = 0;
        }
        self.events.tools_changed.notify_one();
    }

    /// Records that a call was refused for want of a (wider) login; the message to return.
    pub(super) fn login_needed(&self, challenge: String) -> String {
        let step_up = oauth::is_step_up(&challenge);
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.needs_login = true;
        health.challenge = Some(challenge);
        if step_up {
            format!(
                "the MCP server `{}` asks for a wider scope: sign in again with `souz mcp login {}`",
                self.name, self.name
            )
        } else {
            format!(
                "the MCP server `{}` asks for a login (its token could not be refreshed): \
                 `souz mcp login {}`",
                self.name, self.name
            )
        }
    }

    pub(super) fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.config.startup_timeout_seconds)
    }

    pub(super) async fn keep(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let retry_in = match self.peer().await {
                Ok((peer, _)) => {
                    if let Err(error) = self.list_tools(&peer).await {
                        tracing::warn!(server = %self.name, %error, "cannot list the MCP server's tools");
                    }
                    None
                }
                Err(_) => self.retry_in(),
            };
            tokio::select! {
                () = stop.cancelled() => break,
                () = self.events.tools_changed.notified() => {}
                () = sleep_or_forever(retry_in) => {}
            }
        }
        self.close().await;
    }

    pub(super) fn retry_in(&self) -> Option<Duration> {
        let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health
            .retry_at
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The live session's peer, connecting first when there is none (not before the backoff
    /// of the last failure is over).
    pub(super) async fn peer(&self) -> Result<(Peer<RoleClient>, u64), String> {
        let mut slot = self.session.lock().await;
        if let Some(live) = slot.as_ref()
            && !live.peer.is_transport_closed()
        {
            return Ok((live.peer.clone(), live.generation));
        }
        if let Some(old) = slot.take() {
            close(old.session).await;
        }
        {
            let health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = health.retry_at
                && at > Instant::now()
            {
                let error = health.last_error.clone().unwrap_or_default();
                return Err(format!(
                    "the MCP server `{}` is unavailable ({error}); Souz tries again in {} s",
                    self.name,
                    at.saturating_duration_since(Instant::now())
                        .as_secs()
                        .max(1)
                ));
            }
        }
        let connecting = connection::connect(
            Connect {
                name: &self.name,
                config: &self.config,
                lookup: &self.lookup,
                inherited: &self.inherited,
                home: &self.home,
                allow_hosts: &self.allow_hosts,
                keys: &self.keys,
            },
            self.events.clone(),
        );
        let outcome = match tokio::time::timeout(self.startup_timeout(), connecting).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ConnectError::from(format!(
                "no answer within {} s",
                self.config.startup_timeout_seconds
            ))),
        };
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(session) => {
                health.generation += 1;
                health.connected = true;
                health.failures = 0;
                health.retry_at = None;
                health.last_error = None;
                health.needs_login = false;
                health.challenge = None;
                let peer = session.peer().clone();
                let generation = health.generation;
                if generation > 1 {
                    // A new session (a restarted server) may list other tools: look again.
                    self.events.tools_changed.notify_one();
                }
                *slot = Some(Live {
                    session,
                    peer: peer.clone(),
                    generation,
                });
                Ok((peer, generation))
            }
            Err(ConnectError { message, challenge }) => {
                let error = message;
                tracing::warn!(server = %self.name, %error, "cannot start the MCP server");
                if challenge.is_some() {
                    health.needs_login = true;
                    health.challenge = challenge;
                }
                health.connected = false;
                health.failures = health.failures.saturating_add(1);
                let backoff = Duration::from_secs(1 << health.failures.min(6).saturating_sub(1));
                health.retry_at = Some(Instant::now() + backoff.min(MAX_BACKOFF));
                health.last_error = Some(error.clone());
                Err(format!("the MCP server `{}`: {error}", self.name))
            }
        }
    }

    /// Forgets the session of `generation` (broken); the next call starts a new one at once.
    pub(super) async fn drop_session(&self, generation: u64) {
        let mut slot = self.session.lock().await;
        if slot
            .as_ref()
            .is_some_and(|live| live.generation == generation)
            && let Some(old) = slot.take()
        {
            close(old.session).await;
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            health.connected = false;
        }
    }

    pub(super) async fn close(&self) {
        if let Some(live) = self.session.lock().await.take() {
            close(live.session).await;
        }
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        health.connected = false;
    }

    /// Lists the server's tools (every page) and registers the ones in use with the gate.
    pub(super) async fn list_tools(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
    ) -> Result<usize, String> {
        let listed = tokio::time::timeout(self.startup_timeout(), peer.list_all_tools())
            .await
            .map_err(|_| "`tools/list` did not answer in time".to_owned())?
            .map_err(|error| match error.auth_challenge() {
                Some(challenge) => self.login_needed(challenge.to_owned()),
                None => format!("`tools/list` failed: {error}"),
            })?;
        let mut taken = HashSet::new();
        let mut tools: Vec<ExternalTool> = Vec::new();
        for tool in listed
            .iter()
            .filter(|tool| self.config.uses_tool(&tool.name))
        {
            let definition = Definition::of(tool);
            let name = proxy::tool_name(&self.name, &tool.name, &mut taken);
            let listed = trust::Listed {
                server: &self.name,
                name: &name,
                remote: &tool.name,
                definition: &definition,
            };
            let (spec, untrusted) = match trust::check(&self.store, listed)
                .await
                .map_err(|error| format!("cannot read the trusted definitions: {error}"))?
            {
                Trust::Trusted => (proxy::spec(&self.name, &name, tool), None),
                Trust::Changed { diff, trusted } => {
                    tracing::warn!(server = %self.name, tool = %tool.name, %name, "an MCP tool's definition changed; it asks until approved");
                    (proxy::trusted_spec(&self.name, &name, &trusted), Some(diff))
                }
            };
            tools.push(ExternalTool {
                tool: Arc::new(proxy::ProxyTool {
                    spec,
                    server: Arc::clone(self),
                    remote: tool.name.to_string(),
                    definition,
                    untrusted: Arc::new(Mutex::new(untrusted)),
                }),
                server: self.name.clone(),
                exposed: self.config.expose_to_mcp_clients,
                agents: true,
            });
        }
        let count = tools.len();
        // The count first: whoever sees the tools in the gate sees the status that lists them.
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tools = count;
        self.gate.set_external_tools(&self.name, tools);
        Ok(count)
    }

    /// Trusts `definition` of the remote tool `remote` under the Souz name `name` (the person
    /// approved a call that showed it), then lists the tools again so that what models and
    /// listings see is the definition now trusted.
    pub(crate) async fn trust(
        &self,
        name: &str,
        remote: &str,
        definition: &Definition,
    ) -> Result<(), ToolError> {
        let listed = trust::Listed {
            server: &self.name,
            name,
            remote,
            definition,
        };
        trust::accept(&self.store, listed)
            .await
            .map_err(|error| ToolError::Internal(error.to_string()))?;
        self.events.tools_changed.notify_one();
        Ok(())
    }

    /// Calls `tool` with `arguments`: within the tool timeout, cancelled with `cancel`, sent
    /// once more on a new session when the first finds it broken; the server's progress
    /// notifications go to `progress`.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        run: &Run<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let limit = Duration::from_secs(self.config.tool_timeout_seconds);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (peer, generation) = self.peer().await.map_err(ToolError::Failed)?;
            let params =
                CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
            match send_call(&peer, params, limit, run, &self.events.progress).await {
                Sent::Cancelled => return Err(ToolError::Cancelled),
                Sent::TimedOut => {
                    return Err(ToolError::Failed(format!(
                        "`{tool}` on the MCP server `{}` did not answer within {} s; it was cancelled",
                        self.name, self.config.tool_timeout_seconds
                    )));
                }
                Sent::Answer(Ok(result)) => return proxy::output(result),
                Sent::Answer(Err(ServiceError::McpError(error))) => {
                    return Err(ToolError::Failed(error.message.to_string()));
                }
                Sent::Answer(Err(error)) if error.auth_challenge().is_some() => {
                    let challenge = error.auth_challenge().unwrap_or_default().to_owned();
                    return Err(ToolError::Failed(self.login_needed(challenge)));
                }
                Sent::Answer(Err(error)) if attempt == 1 => {
                    tracing::warn!(server = %self.name, %error, "the MCP session broke; starting a new one");
                    self.drop_session(generation).await;
                }
                Sent::Answer(Err(error)) => {
                    self.drop_session(generation).await;
                    return Err(ToolError::Failed(format!(
                        "the MCP server `{}` failed: {error}",
                        self.name
                    )));
                }
            }
        }
    }
}

/// What a call follows besides its arguments: its cancellation and where progress goes.
pub(crate) struct Run<'a> {
    pub cancel: &'a CancellationToken,
    pub progress: &'a ProgressSink,
}

/// How one `tools/call` request ended.
pub(super) enum Sent {
    Answer(Result<CallToolResult, ServiceError>),
    TimedOut,
    Cancelled,
}

/// Sends one `tools/call` and waits for its answer within `limit`, passing the server's
/// progress notifications (under the token rmcp gave the request) to `run.progress`. A call
/// given up (timed out, cancelled) is cancelled on the server with `notifications/cancelled`.
pub(super) async fn send_call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    limit: Duration,
    run: &Run<'_>,
    progress: &ProgressDispatcher,
) -> Sent {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return Sent::Answer(Err(error)),
    };
    let mut reports = progress.subscribe(handle.progress_token.clone()).await;
    let mut abandoned = Abandoned {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let response = tokio::time::timeout(limit, handle.await_response());
    tokio::pin!(response);
    let sent = loop {
        tokio::select! {
            answer = &mut response => break match answer {
                Err(_) => Sent::TimedOut,
                Ok(answer) => Sent::Answer(answer.and_then(|result| match result {
                    ServerResult::CallToolResult(result) => Ok(result),
                    _ => Err(ServiceError::UnexpectedResponse),
                })),
            },
            () = run.cancel.cancelled() => break Sent::Cancelled,
            Some(report) = reports.next() => run.progress.report(ToolProgress {
                progress: report.progress,
                total: report.total,
                message: report.message,
            }),
        }
    };
    if matches!(sent, Sent::Answer(_)) {
        abandoned.id = None;
    }
    sent
}

/// A request given up before its answer: the server is told with `notifications/cancelled`.
pub(super) struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            #[allow(
                clippy::disallowed_methods,
                reason = "a best-effort notice from a Drop, which cannot await: one notification to the server, dropped with the runtime"
            )]
            runtime.spawn(async move {
                let notice = CancelledNotificationParam::new(
                    Some(id),
                    Some("the call was given up".to_owned()),
                );
                let _ = peer.notify_cancelled(notice).await;
            });
        }
    }
}

pub(super) async fn close(mut session: Session) {
    if tokio::time::timeout(CLOSE_TIMEOUT, session.close())
        .await
        .is_err()
    {
        tracing::warn!("an MCP session did not close in time; its process group is killed");
    }
}

pub(super) async fn sleep_or_forever(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
    }
}
