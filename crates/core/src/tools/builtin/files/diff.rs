//! Unified diffs for plans: what a person reads before approving a file change.
//!
//! Invariants: labels are the paths as people read them (`~/notes.md`); three lines of
//! context; the diff is computed with a time limit (a pathological input degrades to a coarser
//! but still correct diff) and cut at a hunk boundary past [`DIFF_LIMIT_CHARS`], saying so.

use std::fmt::Write;
use std::time::Duration;

use similar::TextDiff;

/// Most characters of diff a plan carries.
pub(super) const DIFF_LIMIT_CHARS: usize = 100_000;
/// How long the diff algorithm may look for the smallest diff.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// The unified diff from `old` to `new` (both LF-normalized), labelled with `label`.
pub(crate) fn unified(label: &str, old: &str, new: &str) -> String {
    render(&format!("a/{label}"), &format!("b/{label}"), old, new)
}

/// The diff that creates `label` with `content`.
pub(super) fn creation(label: &str, content: &str) -> String {
    render("/dev/null", &format!("b/{label}"), "", content)
}

fn render(old_label: &str, new_label: &str, old: &str, new: &str) -> String {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let unified = diff.unified_diff();
    let hunks: Vec<_> = unified.iter_hunks().collect();
    let mut out = format!("--- {old_label}\n+++ {new_label}\n");
    for (index, hunk) in hunks.iter().enumerate() {
        if out.len() > DIFF_LIMIT_CHARS {
            let _ = writeln!(
                out,
                "... diff cut here: {} more hunk(s) not shown",
                hunks.len() - index
            );
            break;
        }
        let _ = write!(out, "{hunk}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_changed_line_with_context() {
        let diff = unified("~/notes.md", "a\nb\nc\n", "a\nB\nc\n");
        assert_eq!(
            diff,
            "--- a/~/notes.md\n+++ b/~/notes.md\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn creation_is_a_diff_against_nothing() {
        let diff = creation("~/new.txt", "hello\nworld\n");
        assert_eq!(
            diff,
            "--- /dev/null\n+++ b/~/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n"
        );
        let empty = creation("~/empty.txt", "");
        assert_eq!(empty, "--- /dev/null\n+++ b/~/empty.txt\n");
    }

    #[test]
    fn marks_a_missing_final_newline() {
        let diff = unified("~/x", "a\n", "a\nb");
        assert!(diff.contains("+b\n\\ No newline at end of file"), "{diff}");
    }

    #[test]
    fn huge_diffs_are_cut_at_a_hunk_boundary() {
        let old: String = (0..40_000).map(|line| format!("line {line}\n")).collect();
        let new = old.replace("0\n", "zero\n");
        let diff = unified("~/big", &old, &new);
        assert!(diff.len() < DIFF_LIMIT_CHARS + 2_000);
        assert!(diff.contains("more hunk(s) not shown"));
    }
}
