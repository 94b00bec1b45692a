//! Text from elsewhere (a receiver's answer, a tool's id), made fit for
//! one line of a message or a header.

/// `text` as one line: runs of whitespace and control characters one
/// space, none at either end.
pub(crate) fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
