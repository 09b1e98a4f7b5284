//! This machine's own voice: nothing leaves the machine.
//!
//! - Linux: `espeak-ng --stdout` (a WAV on standard output), run through the sandbox's
//!   command runner like any command: confined (Landlock + seccomp), no network, a scrubbed
//!   environment, a time limit, capped output. The text goes in on standard input
//!   (`--stdin`), never through a shell or as an argument, so no text can become an option.
//! - macOS: `/usr/bin/say`, which reads the text from standard input (`-f -`) and writes a WAV
//!   file (`--file-format=WAVE --data-format=LEI16@22050`) into a private temporary folder
//!   that is read back and removed. `say` rather than `AVSpeechSynthesizer`: the latter needs
//!   an Objective-C run loop and `writeUtterance:toBufferCallback:` bindings in the daemon,
//!   while `say` is the same synthesizer (same voices) behind a stable command line, costs no
//!   dependency, and keeps the synthesizer out of the daemon's process. Seatbelt confinement
//!   of commands writes only inside roots, so `say` runs as a direct child with a fixed
//!   argument list, a timeout and `kill_on_drop`.
//!
//! Invariants: the audio is a WAV at most [`MAX_AUDIO_BYTES`]; its RIFF and data sizes are made
//! true (espeak-ng writes "unknown" sizes when streaming), so every player reads it to its end.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{MAX_AUDIO_BYTES, SPEAK_TIMEOUT, Speaker, SpeechRequest, SpokenAudio, VoiceError};
use crate::sandbox::Sandbox;

/// Where the voice programs are looked for (the daemon does not read `PATH` for this: a voice
/// is a system program).
const PROGRAM_FOLDERS: &[&str] = &["/usr/bin", "/usr/local/bin", "/bin", "/opt/homebrew/bin"];

/// The voice program of this system.
#[cfg(target_os = "macos")]
const PROGRAMS: &[&str] = &["say"];
#[cfg(not(target_os = "macos"))]
const PROGRAMS: &[&str] = &["espeak-ng"];

/// The first of `names` found in `folders`.
fn find_program(names: &[&str], folders: &[&str]) -> Option<PathBuf> {
    names
        .iter()
        .flat_map(|name| {
            folders
                .iter()
                .map(move |folder| Path::new(folder).join(name))
        })
        .find(|path| path.is_file())
}

/// The voice of this machine.
pub struct OsSpeaker {
    program: PathBuf,
    voice: String,
    #[cfg_attr(target_os = "macos", allow(dead_code))]
    sandbox: Arc<Sandbox>,
}

impl OsSpeaker {
    /// The system's voice program, reading with `voice` (empty: the language's voice), run
    /// through `sandbox`; [`VoiceError::NotAvailable`] when the program is not installed.
    pub fn new(sandbox: Arc<Sandbox>, voice: String) -> Result<Self, VoiceError> {
        let program = find_program(PROGRAMS, PROGRAM_FOLDERS).ok_or_else(|| {
            VoiceError::NotAvailable(format!(
                "this machine has no voice: install {} (on Debian and Ubuntu: `apt install \
                 espeak-ng`), or choose another voice (`[voice] tts`)",
                PROGRAMS.join(" or ")
            ))
        })?;
        Ok(Self {
            program,
            voice: voice.trim().to_owned(),
            sandbox,
        })
    }

    fn name(&self) -> String {
        self.program
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    #[cfg(not(target_os = "macos"))]
    async fn run(
        &self,
        request: &SpeechRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, VoiceError> {
        use crate::sandbox::command::{CommandProgram, CommandRequest};
        let voice = if self.voice.is_empty() {
            request.language.clone()
        } else {
            self.voice.clone()
        };
        let command = CommandRequest {
            program: CommandProgram::Argv(vec![
                self.program.display().to_string(),
                "--stdout".to_owned(),
                "--stdin".to_owned(),
                // The input is UTF-8.
                "-b".to_owned(),
                "1".to_owned(),
                "-v".to_owned(),
                voice,
            ]),
            cwd: None,
            timeout: Some(SPEAK_TIMEOUT),
            env: Vec::new(),
            stdin: Some(request.text.as_bytes().to_vec()),
            network: false,
        };
        let failed = |detail: String| VoiceError::Program {
            voice: self.name(),
            detail,
        };
        let (outcome, bytes) = self
            .sandbox
            .run_command_bytes(command, cancel, MAX_AUDIO_BYTES)
            .await
            .map_err(|error| failed(error.to_string()))?;
        if outcome.cancelled {
            return Err(VoiceError::Cancelled);
        }
        if outcome.timed_out {
            return Err(VoiceError::Timeout {
                voice: self.name(),
                after: outcome.timeout,
            });
        }
        if outcome.stdout.truncated_bytes > 0 {
            return Err(VoiceError::TooLarge {
                voice: self.name(),
                limit: MAX_AUDIO_BYTES,
            });
        }
        if outcome.exit_code != Some(0) {
            let said = outcome.stderr.text.trim();
            return Err(failed(match outcome.exit_code {
                Some(code) => format!("exit code {code}: {said}"),
                None => format!("ended by signal {:?}: {said}", outcome.signal),
            }));
        }
        Ok(bytes)
    }

    #[cfg(target_os = "macos")]
    async fn run(
        &self,
        request: &SpeechRequest,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, VoiceError> {
        use tokio::io::AsyncWriteExt;
        let failed = |detail: String| VoiceError::Program {
            voice: self.name(),
            detail,
        };
        let folder = tempfile::Builder::new()
            .prefix("souz-voice-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|error| failed(format!("no temporary folder: {error}")))?;
        let output = folder.path().join("answer.wav");
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args([
                "-f",
                "-",
                "--file-format=WAVE",
                "--data-format=LEI16@22050",
                "-o",
            ])
            .arg(&output)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        if !self.voice.is_empty() {
            command.args(["-v", &self.voice]);
        }
        let mut child = command
            .spawn()
            .map_err(|error| failed(format!("cannot start: {error}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(request.text.as_bytes())
                .await
                .map_err(|error| failed(format!("cannot write the text: {error}")))?;
        }
        let status = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(VoiceError::Cancelled),
            status = tokio::time::timeout(SPEAK_TIMEOUT, child.wait()) => status,
        };
        match status {
            Err(_) => {
                return Err(VoiceError::Timeout {
                    voice: self.name(),
                    after: SPEAK_TIMEOUT,
                });
            }
            Ok(Err(error)) => return Err(failed(error.to_string())),
            Ok(Ok(status)) if !status.success() => return Err(failed(format!("{status}"))),
            Ok(Ok(_)) => {}
        }
        let size = std::fs::metadata(&output)
            .map_err(|error| failed(format!("wrote no audio: {error}")))?
            .len();
        if size > MAX_AUDIO_BYTES as u64 {
            return Err(VoiceError::TooLarge {
                voice: self.name(),
                limit: MAX_AUDIO_BYTES,
            });
        }
        std::fs::read(&output).map_err(|error| failed(format!("cannot read the audio: {error}")))
    }
}

/// Makes the sizes of a WAV true: the RIFF size and the data chunk's size (espeak-ng writes
/// `0x7FFFFFFF`-ish "unknown" sizes on a pipe). `None` when `bytes` is not a WAV with a data
/// chunk.
pub(crate) fn fix_wav_sizes(mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return None;
    }
    let total = u32::try_from(bytes.len()).ok()?;
    bytes[4..8].copy_from_slice(&(total - 8).to_le_bytes());
    let mut at = 12usize;
    while at + 8 <= bytes.len() {
        let id: [u8; 4] = bytes[at..at + 4].try_into().ok()?;
        if &id == b"data" {
            let size = total - u32::try_from(at + 8).ok()?;
            bytes[at + 4..at + 8].copy_from_slice(&size.to_le_bytes());
            return (size > 0).then_some(bytes);
        }
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().ok()?);
        // Chunks are padded to an even size.
        let size = usize::try_from(size).ok()?;
        at = at.checked_add(8)?.checked_add(size + (size & 1))?;
    }
    None
}

impl Speaker for OsSpeaker {
    fn label(&self) -> String {
        if self.voice.is_empty() {
            self.name()
        } else {
            format!("{} ({})", self.name(), self.voice)
        }
    }

    fn cloud(&self) -> bool {
        false
    }

    fn speak<'a>(
        &'a self,
        request: &'a SpeechRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SpokenAudio, VoiceError>> {
        Box::pin(async move {
            let bytes = self.run(request, cancel).await?;
            let bytes = fix_wav_sizes(bytes).ok_or_else(|| VoiceError::Malformed {
                voice: self.name(),
                detail: "the program wrote no WAV audio".to_owned(),
            })?;
            Ok(SpokenAudio {
                bytes,
                mime: "audio/wav".to_owned(),
            })
        })
    }
}
