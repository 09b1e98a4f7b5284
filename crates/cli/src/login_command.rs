//! `souz login codex` and `souz logout codex`: sign in to a provider's account through the
//! daemon with a device code (the daemon waits for it and keeps the tokens; this command only
//! shows the page and the code, then says when it is done), and sign out.
//!
//! Invariants: nothing here sees a token; the code is printed once, with the warning not to
//! share it; the command ends when the sign-in does (signed in: exit 0; expired or failed:
//! exit 1); stopping the command leaves the daemon waiting until the code expires.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use souz_protocol::ProviderLoginState;

use crate::output::say;
use crate::texts::{fill, tr};

/// How often the daemon is asked whether the code was entered.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// `souz login PROVIDER`.
pub async fn login(provider: &str) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    let started = client.start_provider_login(provider).await?;
    let url = started.verification_url.clone().unwrap_or_default();
    let code = started.user_code.clone().unwrap_or_default();
    let expires = started
        .expires_at
        .map(|at| at.with_timezone(&chrono::Local).format("%H:%M").to_string())
        .unwrap_or_default();
    say!(
        "{}",
        fill(
            tr(
                "To sign in to {provider}, open {url} in your browser, sign in to your ChatGPT \
                 account and enter this code (valid until {expires}):",
                "Чтобы войти в {provider}, откройте в браузере {url}, войдите в свой аккаунт \
                 ChatGPT и введите этот код (действует до {expires}):"
            ),
            &[
                ("provider", &provider),
                ("url", &url),
                ("expires", &expires)
            ]
        )
    );
    say!("");
    say!("    {code}");
    say!("");
    say!(
        "{}",
        tr(
            "Never share this code: whoever enters it signs this Souz in to their account. \
             Waiting for you to enter it...",
            "Никому не сообщайте этот код: кто его введёт, подключит Souz к своему аккаунту. \
             Жду, пока вы его введёте..."
        )
    );
    loop {
        tokio::time::sleep(POLL_EVERY).await;
        let login = client.provider_login(provider).await?;
        match login.state {
            ProviderLoginState::Pending => continue,
            ProviderLoginState::SignedIn => {
                let account = login.account.unwrap_or_default();
                let text = if account.is_empty() {
                    fill(
                        tr(
                            "Signed in to {provider}. Its models are ready to use.",
                            "Вход в {provider} выполнен. Его модели готовы к работе.",
                        ),
                        &[("provider", &provider)],
                    )
                } else {
                    fill(
                        tr(
                            "Signed in to {provider} as {account}. Its models are ready to use.",
                            "Вход в {provider} выполнен ({account}). Его модели готовы к работе.",
                        ),
                        &[("provider", &provider), ("account", &account)],
                    )
                };
                say!("{text}");
                return Ok(ExitCode::SUCCESS);
            }
            ProviderLoginState::Expired => {
                eprintln!(
                    "{}",
                    fill(
                        tr(
                            "The code expired before it was entered. Run `souz login {provider}` \
                             again.",
                            "Срок действия кода истёк, а он так и не был введён. Выполните \
                             `souz login {provider}` ещё раз."
                        ),
                        &[("provider", &provider)]
                    )
                );
                return Ok(ExitCode::FAILURE);
            }
            ProviderLoginState::Failed | ProviderLoginState::SignedOut => {
                let error = login.error.unwrap_or_default();
                eprintln!(
                    "{}",
                    souz_protocol::display::display_text(&fill(
                        tr(
                            "The sign-in to {provider} did not succeed: {error}",
                            "Войти в {provider} не удалось: {error}"
                        ),
                        &[("provider", &provider), ("error", &error)]
                    ))
                );
                return Ok(ExitCode::FAILURE);
            }
        }
    }
}

/// `souz logout PROVIDER`.
pub async fn logout(provider: &str) -> Result<ExitCode> {
    let client = crate::texts::connect().await?;
    client.sign_out_provider(provider).await?;
    say!(
        "{}",
        fill(
            tr(
                "Signed out of {provider}: Souz forgot its tokens.",
                "Выход из {provider} выполнен: Souz удалил его токены."
            ),
            &[("provider", &provider)]
        )
    );
    Ok(ExitCode::SUCCESS)
}
