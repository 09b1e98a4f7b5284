//! The bridge's two ends: stdin and stdout as the client gave them. A pipe (what Claude
//! Desktop and every stdio client spawn the bridge with) is read and written by the runtime
//! itself, non-blocking; anything else (a terminal, a file) through tokio's `stdin()` and
//! `stdout()`, which hand each read and write to a blocking thread and wake the runtime when
//! it returns: two thread switches per line, most of what a forwarded message cost the bridge.
//!
//! Invariant: the pipe ends are duplicates of descriptors 0 and 1 set non-blocking; nothing
//! else in the bridge reads stdin or writes stdout (stderr, fd 2, is untouched).

use tokio::io::{AsyncRead, AsyncWrite};

/// stdin: the pipe when it is one, tokio's `stdin()` otherwise. Call inside the runtime.
pub fn stdin() -> Box<dyn AsyncRead + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdin())
}

/// stdout: the pipe when it is one, tokio's `stdout()` otherwise. Call inside the runtime.
pub fn stdout() -> Box<dyn AsyncWrite + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdout())
}
