//! Stream resumption with `Last-Event-ID`: the client says which event it
//! received last and the server replays what came after. rmcp 3.11 replays
//! from that event itself, so the client would get it twice; the replayed
//! stream goes through [`SkipReceived`], which drops the event with that id
//! (and nothing, should rmcp stop sending it).

use hyper::body::{Bytes, Frame};

/// Drops the first message event (one with data) if its `id` is the one
/// the client received last; every other byte passes unchanged (comments,
/// a priming event without data, and everything after the first message). Fed the stream's data frames in order, it returns what to
/// send instead of each.
#[derive(Debug)]
pub(crate) struct SkipReceived {
    received: String,
    /// Bytes of an event not yet complete, while still looking.
    partial: Vec<u8>,
    looking: bool,
}

impl SkipReceived {
    pub(crate) fn new(last_event_id: &str) -> Self {
        SkipReceived {
            received: last_event_id.trim().to_owned(),
            partial: Vec::new(),
            looking: true,
        }
    }

    /// What to send for the next frame of the replay.
    pub(crate) fn frame(&mut self, frame: Frame<Bytes>) -> Frame<Bytes> {
        match frame.into_data() {
            Ok(data) => Frame::data(self.data(data)),
            Err(frame) => frame,
        }
    }

    fn data(&mut self, data: Bytes) -> Bytes {
        if !self.looking {
            return data;
        }
        self.partial.extend_from_slice(&data);
        let mut out = Vec::with_capacity(self.partial.len());
        let mut start = 0;
        // Each complete event (up to its blank line), while still looking.
        while self.looking {
            let Some(end) = find(&self.partial[start..], b"\n\n").map(|at| start + at + 2) else {
                break;
            };
            let event = &self.partial[start..end];
            match message_id(event) {
                Some(id) => {
                    self.looking = false;
                    if id != Some(self.received.as_str()) {
                        out.extend_from_slice(event);
                    }
                }
                None => out.extend_from_slice(event),
            }
            start = end;
        }
        if self.looking {
            self.partial.drain(..start);
        } else {
            out.extend_from_slice(&self.partial[start..]);
            self.partial = Vec::new();
        }
        Bytes::from(out)
    }
}

/// For a message event (one with a non-empty `data` field), its `id`
/// field if it has one; `None` for any other event.
fn message_id(event: &[u8]) -> Option<Option<&str>> {
    let text = std::str::from_utf8(event).ok()?;
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let value = line.trim_end_matches('\r').strip_prefix(name)?;
            value.strip_prefix(':')
        })
    };
    let data = field("data")?;
    if data.trim().is_empty() {
        return None;
    }
    Some(field("id").map(|id| id.strip_prefix(' ').unwrap_or(id)))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(last: &str, chunks: &[&str]) -> String {
        let mut skip = SkipReceived::new(last);
        chunks
            .iter()
            .map(|chunk| {
                let frame = skip.frame(Frame::data(Bytes::from(chunk.to_string())));
                String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
            })
            .collect()
    }

    const PRIMING: &str = ": keep-alive\n\ndata: \nid: 9/0\nretry: 3000\n\n";
    const AFTER: &str = "data: {\"n\":3}\nid: 3/0\n\ndata: {\"n\":2}\nid: 2/0\n\n";

    #[test]
    fn the_event_received_last_is_dropped_wherever_the_frames_split() {
        let stream = format!("{PRIMING}data: {{\"n\":2}}\nid: 2/0\n\n{AFTER}");
        let expected = format!("{PRIMING}{AFTER}");
        assert_eq!(replay("2/0", &[&stream]), expected);
        let bytes: Vec<String> = stream.chars().map(String::from).collect();
        let bytes: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(replay("2/0", &bytes), expected);
        let (head, tail) = stream.split_at(PRIMING.len() + 7);
        assert_eq!(replay(" 2/0 ", &[head, tail]), expected);
    }

    #[test]
    fn nothing_is_dropped_when_the_first_message_is_another() {
        let stream = format!("{PRIMING}{AFTER}");
        assert_eq!(replay("2/0", &[&stream]), stream);
        let crlf = "data: {\"n\":2}\r\nid:2/0\r\n\n";
        assert_eq!(replay("1/0", &[crlf]), crlf);
        assert_eq!(replay("2/0", &[crlf]), "");
    }
}
