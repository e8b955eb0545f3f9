//! Text written by someone else (an agent's record, a witness's answer, an
//! export or proof file), as it may be shown: the one rule every printer of
//! the workspace (the CLI, the console, this crate's errors) escapes by.

/// Whether `c`, shown as it is, could make what is read differ from what is
/// there: a control character (C0, DEL, C1: a newline, an escape sequence
/// that moves the cursor or retitles the terminal), a bidirectional
/// embedding, override, isolate or mark (which reorders the text after it:
/// `gpj.exe` read as `exe.jpg`), a line or paragraph separator, or a
/// character that shows nothing (Unicode's default-ignorable code points: a
/// zero-width space or joiner, a soft hyphen, a variation selector, a tag),
/// which makes two different keys or names look the same. A printer escapes
/// every such character (`\u{200b}`), the CLI's newline of its own layout
/// aside.
pub fn disguises(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_reorders_moves_or_shows_nothing_disguises_and_text_does_not() {
        for c in ['\u{1b}', '\n', '\u{7f}', '\u{9b}', '\u{202e}', '\u{2067}', '\u{200f}', '\u{61c}', '\u{200b}'] {
            assert!(disguises(c), "{c:?}");
        }
        for c in ['\u{2028}', '\u{feff}', '\u{ad}', '\u{fe0f}', '\u{e0041}', '\u{2060}', '\u{3164}'] {
            assert!(disguises(c), "{c:?}");
        }
        for c in ['a', ' ', '-', 'é', 'ж', 'א', '中', '…', '\u{fffd}'] {
            assert!(!disguises(c), "{c:?}");
        }
    }
}
