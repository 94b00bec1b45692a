//! A notification as a person reads it: a subject, and its facts as lines
//! of text and as an HTML table with every value escaped.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;
use tool_runtime::store::Notification;

use crate::text::one_line;

/// Lines of the notification's data shown at most: a call's input may be
/// of any size, and the notification keeps all of it.
const MAX_DATA_LINES: usize = 100;

/// Characters of one value shown at most.
const MAX_VALUE_CHARS: usize = 500;

/// Seconds since the epoch of the year 10,000, the first an HTTP date
/// cannot write.
const YEAR_10000_SECS: u64 = 253_402_300_800;

/// A notification rendered for people.
pub(crate) struct Rendered {
    /// "Approval needed: refund (call c1)": one line.
    pub(crate) subject: String,
    /// The subject, then the facts, a `label: value` line each.
    pub(crate) text: String,
    /// The same as an HTML document, every value escaped.
    pub(crate) html: String,
}

impl Rendered {
    pub(crate) fn of(notification: &Notification) -> Self {
        let subject = one_line(&format!(
            "{}: {} (call {})",
            notification.headline(),
            notification.tool_id,
            notification.call_id
        ));
        let about = vec![
            ("Tool".to_owned(), notification.tool_id.clone()),
            ("Call".to_owned(), notification.call_id.clone()),
            ("Event".to_owned(), notification.kind.as_str().to_owned()),
            ("At".to_owned(), date(notification.at_ms)),
            ("Notification".to_owned(), notification.id.clone()),
        ];
        let details = data_lines(&notification.data);
        Rendered {
            text: text(&subject, &[&about, &details]),
            html: html(&subject, &[&about, &details]),
            subject,
        }
    }
}

/// The subject, then each group of lines after a blank line.
fn text(subject: &str, groups: &[&[(String, String)]]) -> String {
    let mut text = format!("{subject}\n");
    for group in groups {
        text.push('\n');
        for (label, value) in *group {
            text.push_str(&format!("{label}: {value}\n"));
        }
    }
    text
}

/// The subject as a heading, then each group of lines as a table.
fn html(subject: &str, groups: &[&[(String, String)]]) -> String {
    let subject = escaped(subject);
    let mut html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{subject}</title></head>\n<body>\n<h1 style=\"font-size:18px\">{subject}</h1>\n"
    );
    for group in groups {
        html.push_str("<table cellpadding=\"4\">\n");
        for (label, value) in *group {
            html.push_str(&format!(
                "<tr><th align=\"left\" valign=\"top\">{}</th><td style=\"white-space:pre-wrap\">{}</td></tr>\n",
                escaped(label),
                escaped(value)
            ));
        }
        html.push_str("</table>\n");
    }
    html.push_str("</body></html>\n");
    html
}

/// `data` as `path: value` lines, one per value (`input.amount: 1200`), a
/// list of plain values on one line; at most [`MAX_DATA_LINES`].
fn data_lines(data: &Value) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    flatten(String::new(), data, &mut lines);
    if lines.len() > MAX_DATA_LINES {
        lines.truncate(MAX_DATA_LINES);
        lines.push(("…".to_owned(), "more in the notification's data".to_owned()));
    }
    lines
}

/// Adds the lines of `value` at `path`, stopping once there are more than
/// [`MAX_DATA_LINES`].
fn flatten(path: String, value: &Value, lines: &mut Vec<(String, String)>) {
    if lines.len() > MAX_DATA_LINES {
        return;
    }
    match value {
        Value::Object(fields) if !fields.is_empty() => {
            // By key: the same order whether or not serde_json keeps
            // insertion order (a feature another crate may turn on).
            let mut fields: Vec<_> = fields.iter().collect();
            fields.sort_by(|a, b| a.0.cmp(b.0));
            for (key, field) in fields {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                flatten(path, field, lines);
            }
        }
        Value::Array(items) if !items.iter().all(is_plain) => {
            for (index, item) in items.iter().enumerate() {
                flatten(format!("{path}[{index}]"), item, lines);
            }
        }
        _ => {
            let label = if path.is_empty() {
                "data".to_owned()
            } else {
                path
            };
            let value = shown(&label, value);
            lines.push((label, value));
        }
    }
}

/// Whether `value` is shown as it is on a line: neither an object nor a
/// list with something in it.
fn is_plain(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => true,
    }
}

/// A plain value as text: a string as it is, a list's items joined, a
/// time in milliseconds (a label ending in `AtMs`) as a date.
fn shown(label: &str, value: &Value) -> String {
    match value {
        Value::String(text) => cut(text),
        Value::Null => "none".to_owned(),
        Value::Number(number) if label.ends_with("AtMs") => {
            number.as_u64().map_or_else(|| number.to_string(), date)
        }
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| shown("", item))
            .collect::<Vec<_>>()
            .join(", "),
        other => cut(&other.to_string()),
    }
}

/// `text`, cut at [`MAX_VALUE_CHARS`].
fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_VALUE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `at_ms` (milliseconds since the Unix epoch) as an HTTP date, in UTC;
/// the number itself when beyond what one can write.
fn date(at_ms: u64) -> String {
    if at_ms / 1000 >= YEAR_10000_SECS {
        return at_ms.to_string();
    }
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_millis(at_ms))
}

/// `text` with the characters HTML gives a meaning escaped, for an
/// element's content and an attribute's value alike.
fn escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_runtime::store::NotificationKind;

    use super::*;

    #[test]
    fn data_is_one_line_per_value_with_dates_and_lists() {
        let data = json!({
            "input": { "amount": 1200, "items": [{ "sku": "a" }], "tags": ["x", "y"] },
            "expiresAtMs": 0,
            "reason": null,
        });
        let lines = data_lines(&data);
        let shown: Vec<String> = lines.iter().map(|(l, v)| format!("{l}: {v}")).collect();
        assert_eq!(
            shown,
            [
                "expiresAtMs: Thu, 01 Jan 1970 00:00:00 GMT",
                "input.amount: 1200",
                "input.items[0].sku: a",
                "input.tags: x, y",
                "reason: none",
            ]
        );
    }

    #[test]
    fn large_data_and_values_are_cut() {
        let data = Value::Array((0..500).map(|n| json!({ "n": n })).collect());
        let lines = data_lines(&data);
        assert_eq!(lines.len(), MAX_DATA_LINES + 1);
        assert_eq!(lines[MAX_DATA_LINES].0, "…");
        assert_eq!(cut(&"é".repeat(600)).chars().count(), MAX_VALUE_CHARS + 1);
    }

    #[test]
    fn a_date_beyond_year_9999_is_the_number() {
        assert_eq!(date(u64::MAX), u64::MAX.to_string());
        assert_eq!(date(1_000), "Thu, 01 Jan 1970 00:00:01 GMT");
    }

    #[test]
    fn html_escapes_every_value_and_the_subject_is_one_line() {
        let notification = Notification::new(
            NotificationKind::Decided,
            "c1",
            "re\nfund<",
            json!({ "action": "decline", "reason": "<script>alert('x')</script> & \"more\"" }),
        );
        let rendered = Rendered::of(&notification);
        assert_eq!(rendered.subject, "Declined: re fund< (call c1)");
        assert!(
            rendered
                .html
                .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;more&quot;")
        );
        assert!(
            rendered
                .html
                .contains("<title>Declined: re fund&lt; (call c1)</title>")
        );
        assert!(!rendered.html.contains("<script>"));
        assert!(
            rendered
                .text
                .contains("reason: <script>alert('x')</script> & \"more\"")
        );
    }
}
