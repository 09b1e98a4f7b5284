//! Reading the client's messages off stdin, one per line, with the size cap enforced while
//! reading: a line longer than the cap is skipped to its end without being held, so a client
//! (or anything writing to the pipe) cannot make the bridge buffer an unbounded line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    /// A line (without its `\n`) is in the buffer.
    Line,
    /// A line longer than the cap was skipped; the buffer is empty.
    TooLong,
    /// Input ended.
    End,
}

/// Reads the next line into `line` (cleared first), holding at most `max` bytes of it.
pub async fn read_line<R>(reader: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Read>
where
    R: AsyncBufRead + Unpin,
{
    line.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Read::TooLong
            } else if line.is_empty() {
                Read::End
            } else {
                Read::Line
            });
        }
        let (chunk, ends) = match available.iter().position(|&byte| byte == b'\n') {
            Some(end) => (&available[..end], true),
            None => (available, false),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(ends);
        reader.consume(used);
        if ends {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_skipped_without_being_held() {
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 10_000));
        input.extend_from_slice(b"\nexactly-16-bytes\nafter\r\ntail");
        // A small read buffer, so lines arrive in many pieces.
        let mut reader = tokio::io::BufReader::with_capacity(7, input.as_slice());
        let mut line = Vec::new();
        let mut seen = Vec::new();
        loop {
            let read = read_line(&mut reader, &mut line, 16).await.unwrap();
            assert!(
                line.capacity() <= 64,
                "never holds much more than the cap: {}",
                line.capacity()
            );
            if read == Read::End {
                break;
            }
            seen.push((read, String::from_utf8(line.clone()).unwrap()));
        }
        assert_eq!(
            seen,
            [
                (Read::Line, "short".to_owned()),
                (Read::TooLong, String::new()),
                (Read::Line, "exactly-16-bytes".to_owned()),
                (Read::Line, "after\r".to_owned()),
                (Read::Line, "tail".to_owned()),
            ]
        );
    }

    #[tokio::test]
    async fn a_long_last_line_without_newline_is_too_long() {
        let input = vec![b'y'; 100];
        let mut reader = tokio::io::BufReader::with_capacity(8, input.as_slice());
        let mut line = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut line, 10).await.unwrap(),
            Read::TooLong
        );
        assert_eq!(
            read_line(&mut reader, &mut line, 10).await.unwrap(),
            Read::End
        );
    }
}
