//! `[history]`: what Souz keeps to take back the changes its file tools make.

use super::byte_size::ByteSize;
use super::section::{Invalid, config_section};

config_section! {
    /// The history of file changes: before a file tool (NewFile, EditFile, MoveFile,
    /// DeleteFile, the document writers) changes a file, Souz keeps what restores it exactly,
    /// so any change, a whole turn's, or a client's can be undone (`souz undo`). Kept in the
    /// Souz home (owner-only), compressed and deduplicated; file contents are kept as they are
    /// (secrets in them are not redacted).
    #[section = "history"]
    pub struct HistoryConfig {
        /// Keep a history of file changes (off: changes cannot be undone by Souz).
        pub enabled: bool = true,
        /// Days a change is kept; older ones are forgotten (oldest first).
        pub keep_days: u64 = 30,
        /// Most space the kept contents take; over it the oldest changes are forgotten.
        pub max_bytes: ByteSize = ByteSize(1 << 30),
        /// Largest file whose content is kept. A change to a bigger file is recorded as "not
        /// restorable", and the approval says so before the write.
        pub max_file_bytes: ByteSize = ByteSize::mib(64),
    }
}

impl HistoryConfig {
    fn check(&self) -> Vec<Invalid> {
        let mut problems = Vec::new();
        if self.keep_days == 0 || self.keep_days > 3650 {
            problems.push(Invalid::new(
                "keep_days",
                "must be between 1 and 3650 days".to_owned(),
            ));
        }
        if self.max_file_bytes.bytes() > self.max_bytes.bytes() {
            problems.push(Invalid::new(
                "max_file_bytes",
                "must not be larger than max_bytes".to_owned(),
            ));
        }
        problems
    }
}
