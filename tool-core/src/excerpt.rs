//! Bounded quotes of untrusted text in messages a model, a client or a log
//! reads: a 1 MB call id or argument must not travel whole inside an error.

use std::fmt;

/// How many characters of a value a message quotes.
pub const EXCERPT_CHARS: usize = 200;

/// A value quoted in a message, at most [`EXCERPT_CHARS`] characters of it
/// (cut on a character boundary), with its full length when it was cut.
///
/// `{}` writes the text as is; `{:?}` writes it debug-quoted (escapes
/// included), as ids are quoted in this project's messages.
///
/// ```
/// use tool_core::Excerpt;
///
/// assert_eq!(format!("{:?}", Excerpt::of("call-1")), r#""call-1""#);
/// let huge = "x".repeat(1_048_576);
/// let quoted = format!("unknown call {:?}", Excerpt::of(&huge));
/// assert!(quoted.ends_with("... (1048576 bytes in all)"));
/// assert!(quoted.len() < 300);
/// ```
#[derive(Clone, Copy)]
pub struct Excerpt<'a> {
    start: &'a str,
    cut_from: Option<usize>,
}

impl<'a> Excerpt<'a> {
    /// The excerpt of `text`.
    pub fn of(text: &'a str) -> Self {
        match text.char_indices().nth(EXCERPT_CHARS) {
            Some((end, _)) => Excerpt {
                start: &text[..end],
                cut_from: Some(text.len()),
            },
            None => Excerpt {
                start: text,
                cut_from: None,
            },
        }
    }

    /// Whether the text was longer than the excerpt.
    ///
    /// ```
    /// use tool_core::Excerpt;
    ///
    /// assert!(!Excerpt::of("short").is_cut());
    /// assert!(Excerpt::of(&"y".repeat(1_000)).is_cut());
    /// ```
    pub fn is_cut(&self) -> bool {
        self.cut_from.is_some()
    }

    fn write_rest(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cut_from {
            Some(len) => write!(f, "... ({len} bytes in all)"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.start)?;
        self.write_rest(f)
    }
}

impl fmt::Debug for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.start, f)?;
        self.write_rest(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_a_character_boundary() {
        let text = "é".repeat(EXCERPT_CHARS + 1);
        let excerpt = Excerpt::of(&text);
        assert_eq!(
            excerpt.to_string(),
            format!(
                "{}... ({} bytes in all)",
                "é".repeat(EXCERPT_CHARS),
                text.len()
            )
        );
    }

    #[test]
    fn text_of_exactly_the_limit_is_whole() {
        let text = "a".repeat(EXCERPT_CHARS);
        assert!(!Excerpt::of(&text).is_cut());
        assert_eq!(Excerpt::of(&text).to_string(), text);
    }
}
