//! Text made safe to show a person: terminal control sequences and characters that hide or
//! reorder text become visible escapes (`\u{1B}`, `\u{202E}`), so a summary, an argument or a
//! name cannot clear the screen, retitle the terminal, overwrite the line it is on, or show
//! `exe.txt` for `txt.exe`.
//!
//! Every human-facing surface uses these (the CLI, the tray and notifications; the web UI has
//! the same rule in `ui/dom.js`). Ordinary text, including right-to-left scripts, emoji and
//! other non-Latin letters, is unchanged.

use std::borrow::Cow;

/// Whether `character` must not reach a person's screen as is. `keep_lines` spares `\n` and
/// `\t` (for text shown as a block).
fn hidden(character: char, keep_lines: bool) -> bool {
    match character {
        '\n' | '\t' => !keep_lines,
        // C0 controls (ESC starts terminal sequences; CR overwrites the line), DEL, C1
        // controls (U+009B is a one-character CSI on some terminals).
        '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}' => true,
        // Arabic letter mark, zero-width characters and left-to-right / right-to-left marks.
        '\u{61C}' | '\u{200B}'..='\u{200F}' => true,
        // Line and paragraph separators, bidirectional embeddings and overrides.
        '\u{2028}'..='\u{202E}' => true,
        // Word joiner and invisible operators, bidirectional isolates.
        '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' => true,
        // Byte order mark, interlinear annotations, and the invisible tag characters.
        '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}' => true,
        _ => false,
    }
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    if !text.chars().any(|character| hidden(character, keep_lines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for character in text.chars() {
        if hidden(character, keep_lines) {
            out.push_str(&format!("\\u{{{:X}}}", u32::from(character)));
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

/// `text` for one line (a title, a name, a menu item, a table cell): every control and
/// hiding character escaped, newlines and tabs included.
pub fn display_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` for a block of lines (a command's output, a message body): as [`display_line`],
/// but newlines and tabs stay.
pub fn display_text(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// JSON text with the hiding characters written as JSON escapes (`\u202E`), so it still
/// parses to the same value. serde_json already escapes the C0 controls; this covers the rest.
pub fn display_json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|character| hidden(character, true)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 8);
    for character in json.chars() {
        if hidden(character, true) {
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_hiding_characters_become_visible() {
        let cases = [
            // Terminal sequences: clear screen, set title, colour, cursor movement.
            ("\u{1B}[2J\u{1B}[H", r"\u{1B}[2J\u{1B}[H"),
            ("\u{1B}]0;pwned\u{7}", r"\u{1B}]0;pwned\u{7}"),
            ("ok\u{1B}[31mred", r"ok\u{1B}[31mred"),
            ("\u{9B}2J", r"\u{9B}2J"),
            ("safe\rrm -rf ~", r"safe\u{D}rm -rf ~"),
            ("a\u{8}\u{8}b", r"a\u{8}\u{8}b"),
            ("nul\u{0}", r"nul\u{0}"),
            ("del\u{7F}", r"del\u{7F}"),
            ("c1\u{85}", r"c1\u{85}"),
            // Bidirectional controls.
            ("invoice\u{202E}txt.exe", r"invoice\u{202E}txt.exe"),
            (
                "\u{202A}\u{202B}\u{202C}\u{202D}",
                r"\u{202A}\u{202B}\u{202C}\u{202D}",
            ),
            (
                "\u{2066}a\u{2067}b\u{2068}c\u{2069}",
                r"\u{2066}a\u{2067}b\u{2068}c\u{2069}",
            ),
            ("\u{200E}\u{200F}\u{61C}", r"\u{200E}\u{200F}\u{61C}"),
            // Invisible characters.
            ("rm\u{200B} -rf", r"rm\u{200B} -rf"),
            ("\u{FEFF}x\u{2060}", r"\u{FEFF}x\u{2060}"),
            ("tag\u{E0041}\u{E007F}", r"tag\u{E0041}\u{E007F}"),
            ("line\u{2028}sep", r"line\u{2028}sep"),
            // Ordinary text stays as it is.
            ("git status -s", "git status -s"),
            ("Привет, мир", "Привет, мир"),
            ("שלום עולם مرحبا", "שלום עולם مرحبا"),
            ("emoji 🚀 and ü", "emoji 🚀 and ü"),
        ];
        for (input, expected) in cases {
            assert_eq!(display_line(input), expected, "{input:?}");
            assert_eq!(display_text(input), expected, "{input:?}");
        }
    }

    #[test]
    fn newlines_and_tabs_are_escaped_on_one_line_and_kept_in_a_block() {
        assert_eq!(display_line("a\nb\tc"), r"a\u{A}b\u{9}c");
        assert_eq!(display_text("a\nb\tc"), "a\nb\tc");
        assert_eq!(display_text("a\r\nb"), "a\\u{D}\nb");
        assert!(matches!(display_line("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_keeps_its_value() {
        let value =
            serde_json::json!({"summary": "run \u{202E}txt.exe\u{E0041}", "n": "\u{1B}[2J"});
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let shown = display_json(&text);
        assert!(!shown.contains('\u{202E}'), "{shown}");
        assert!(!shown.contains('\u{1B}'), "{shown}");
        assert!(shown.contains(r"\u202E"), "{shown}");
        let parsed: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
        assert_eq!(parsed, value);
    }
}
