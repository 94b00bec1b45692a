//! Incremental `text/event-stream` parsing.

/// One dispatched server-sent event.
///
/// ```
/// use tool_core::decode::{SseEvent, SseParser};
///
/// let events = SseParser::new().push("event: ping\ndata: {}\n\n");
/// assert_eq!(events, vec![SseEvent { event: Some("ping".into()), data: "{}".into() }]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had a non-empty one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`. The OpenAI `[DONE]` sentinel is
    /// passed through as-is.
    pub data: String,
}

/// Incremental parser for a `text/event-stream` body that arrives in pieces.
///
/// Follows the WHATWG event-stream rules: lines end with `\n`, `\r\n` or `\r`
/// (also when a `\r\n` pair is split across two pushes); one space after the
/// colon is removed; several `data:` lines join with `\n`; lines starting with
/// `:` are comments; `id:`, `retry:` and unknown fields are ignored; an event
/// with no `data:` line is not dispatched; a leading byte-order mark is
/// dropped.
///
/// One deliberate difference: [`finish`](Self::finish) dispatches a last
/// event that lacks its closing blank line, because recorded bodies often end
/// that way (the spec would drop it).
///
/// ```
/// use tool_core::decode::SseParser;
///
/// let mut parser = SseParser::new();
/// assert!(parser.push("data: {\"a\"").is_empty());
/// let events = parser.push(":1}\r\n: keep-alive\r\ndata: {}\r\n\r\ndata: [DONE]");
/// assert_eq!(events[0].data, "{\"a\":1}\n{}");
/// assert_eq!(parser.finish().unwrap().data, "[DONE]");
/// ```
#[derive(Debug, Default)]
pub struct SseParser {
    /// Text of the current line not yet terminated.
    line: String,
    /// A `\r` ended the last push, so a `\n` opening the next one belongs to it.
    after_cr: bool,
    /// Whether any text has been seen, to strip a BOM only at the very start.
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    ///
    /// ```
    /// let parser = tool_core::decode::SseParser::new();
    /// # drop(parser);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next piece of the body and returns the events it completed.
    ///
    /// ```
    /// use tool_core::decode::SseParser;
    ///
    /// let mut parser = SseParser::new();
    /// assert!(parser.push("data: 1\n").is_empty());
    /// assert_eq!(parser.push("\n")[0].data, "1");
    /// ```
    pub fn push(&mut self, chunk: &str) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if !self.started && !rest.is_empty() {
            self.started = true;
            rest = rest.strip_prefix('\u{feff}').unwrap_or(rest);
        }
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            rest = rest.strip_prefix('\n').unwrap_or(rest);
        }
        while let Some(pos) = rest.find(['\r', '\n']) {
            self.line.push_str(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut out);
            let after = &rest[pos + 1..];
            rest = if rest.as_bytes()[pos] == b'\r' {
                if after.is_empty() {
                    self.after_cr = true;
                }
                after.strip_prefix('\n').unwrap_or(after)
            } else {
                after
            };
        }
        self.line.push_str(rest);
        out
    }

    /// Ends the stream: treats an unterminated last line as complete and
    /// dispatches the pending event, if it has data. The parser is then
    /// ready for a new stream.
    ///
    /// ```
    /// use tool_core::decode::SseParser;
    ///
    /// let mut parser = SseParser::new();
    /// assert!(parser.push("event: message_stop\ndata: {}").is_empty());
    /// assert_eq!(parser.finish().unwrap().event.as_deref(), Some("message_stop"));
    /// ```
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.process_line(&line, &mut out);
        }
        self.dispatch(&mut out);
        *self = Self::default();
        out.pop()
    }

    fn process_line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = (!value.is_empty()).then(|| value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` only matter for reconnecting, which is not ours to do.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if std::mem::take(&mut self.has_data) {
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&str]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = chunks.iter().flat_map(|c| parser.push(c)).collect();
        events.extend(parser.finish());
        events
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn lf_crlf_and_cr_line_endings_agree() {
        let lf = "event: a\ndata: 1\n\ndata: 2\n\n";
        let expected = vec![ev(Some("a"), "1"), ev(None, "2")];
        assert_eq!(all(&[lf]), expected);
        assert_eq!(all(&[&lf.replace('\n', "\r\n")]), expected);
        assert_eq!(all(&[&lf.replace('\n', "\r")]), expected);
    }

    #[test]
    fn crlf_split_across_pushes_is_one_line_end() {
        assert_eq!(
            all(&["data: 1\r", "\n\r", "\ndata: 2\r", "", "\n\r\n"]),
            vec![ev(None, "1"), ev(None, "2")]
        );
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let body = "event: x\r\ndata: {\"a\":\r\ndata:  1}\r\n: note\r\n\r\ndata: [DONE]\r\n\r\n";
        let whole = all(&[body]);
        assert_eq!(
            whole,
            vec![ev(Some("x"), "{\"a\":\n 1}"), ev(None, "[DONE]")]
        );
        for cut in 0..=body.len() {
            assert_eq!(all(&[&body[..cut], &body[cut..]]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn comments_ids_and_unknown_fields_are_ignored() {
        assert_eq!(
            all(&[": hello\nid: 7\nretry: 10\nfoo: bar\ndata\n\n"]),
            vec![ev(None, "")]
        );
    }

    #[test]
    fn only_one_space_after_colon_is_removed() {
        assert_eq!(
            all(&["data:x\n\ndata:  y \n\n"]),
            vec![ev(None, "x"), ev(None, " y ")]
        );
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_its_name_does_not_leak() {
        assert_eq!(all(&["event: lonely\n\ndata: 1\n\n"]), vec![ev(None, "1")]);
    }

    #[test]
    fn bom_is_stripped_only_at_start() {
        assert_eq!(all(&["\u{feff}data: 1\n\n"]), vec![ev(None, "1")]);
        assert_eq!(all(&["", "\u{feff}data: 1\n\n"]), vec![ev(None, "1")]);
        assert_eq!(
            all(&["data: 1\n\n", "\u{feff}data: 2\n\n"]),
            vec![ev(None, "1")]
        );
    }

    #[test]
    fn finish_flushes_unterminated_event_and_resets() {
        let mut parser = SseParser::new();
        assert!(parser.push("data: a\ndata: b").is_empty());
        assert_eq!(parser.finish(), Some(ev(None, "a\nb")));
        assert_eq!(parser.finish(), None);
        assert_eq!(parser.push("data: c\n\n"), vec![ev(None, "c")]);
    }

    #[test]
    fn multibyte_text_survives_chunking() {
        let body = "data: {\"city\":\"Zürich 東京\"}\n\n";
        let chars: Vec<&str> = body
            .char_indices()
            .map(|(i, c)| &body[i..i + c.len_utf8()])
            .collect();
        assert_eq!(all(&chars), all(&[body]));
    }
}
