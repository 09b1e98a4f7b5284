//! `souz listen FILE`: transcribes a recording (WAV, OGG/Opus, WebM/Opus) with the daemon's
//! speech engine and prints the text; `--verbose` adds which engine heard it, whether the audio
//! left this computer, and the timings (on a second line). `-` reads the recording from standard input.

use std::io::Read;
use std::process::ExitCode;

use clap::Args;

use crate::output::say;
use crate::texts::{fill, tr};

/// The largest recording read (the daemon's own bound).
const MAX_FILE: u64 = 25 << 20;

/// `souz listen` arguments.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// The recording (`-`: standard input).
    file: String,
    /// The language spoken (`ru`, `en`, ...); default: `[speech] language`, else the interface
    /// language.
    #[arg(long)]
    language: Option<String>,
    /// The engine: local, openai, ai_tunnel, salute or server; default: `[speech] engine`.
    #[arg(long)]
    engine: Option<String>,
    /// Also print the engine, whether the audio left this computer, and the timings.
    #[arg(long, short)]
    verbose: bool,
}

fn read(file: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)?;
    } else {
        std::fs::File::open(file)
            .map_err(|error| anyhow::anyhow!("{file}: {error}"))?
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)?;
    }
    if bytes.len() as u64 > MAX_FILE {
        anyhow::bail!(
            "{}",
            tr(
                "The recording is larger than 25 MiB.",
                "Запись больше 25 МиБ."
            )
        );
    }
    Ok(bytes)
}

/// `souz listen`.
pub async fn run(args: ListenArgs) -> anyhow::Result<ExitCode> {
    let audio = read(&args.file)?;
    let client = crate::texts::connect().await?;
    let heard = client
        .transcribe(&audio, args.language.as_deref(), args.engine.as_deref())
        .await?;
    say!("{}", heard.text);
    if args.verbose {
        let place = if heard.cloud {
            tr("the audio was sent to it", "звук отправлен ему")
        } else {
            tr(
                "the audio stayed on this computer",
                "звук не покидал этот компьютер",
            )
        };
        let timings = &heard.timings;
        say!(
            "{}",
            fill(
                tr(
                    "{label} ({engine}, {language}; {place}): {audio} ms of audio, decoded in \
                     {decode} ms, transcribed in {transcribe} ms, {total} ms in all",
                    "{label} ({engine}, {language}; {place}): {audio} мс звука, разобрано за \
                     {decode} мс, распознано за {transcribe} мс, всего {total} мс"
                ),
                &[
                    ("label", &heard.engine_label),
                    ("engine", &heard.engine),
                    ("language", &heard.language),
                    ("place", &place),
                    ("audio", &heard.audio_ms),
                    ("decode", &timings.decode_ms),
                    ("transcribe", &timings.transcribe_ms),
                    ("total", &timings.total_ms),
                ]
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}
