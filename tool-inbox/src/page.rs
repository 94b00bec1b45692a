//! The web page: plain HTML, CSS and a small script embedded in the crate,
//! served without authentication (the page asks for the token and sends
//! it with every request it makes).

use axum::extract::OriginalUri;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/inbox.js");
const STYLE: &str = include_str!("page/inbox.css");

/// `GET /`: the page, its assets addressed under the path it was asked
/// at, so it works wherever the router is mounted.
pub(crate) async fn index(OriginalUri(uri): OriginalUri) -> Html<String> {
    let base = format!("{}/", uri.path().trim_end_matches('/'));
    Html(INDEX.replace("{base}", &attribute_escaped(&base)))
}

/// `GET /inbox.js`.
pub(crate) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

/// `GET /inbox.css`.
pub(crate) async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

/// `text` safe inside a double-quoted HTML attribute.
fn attribute_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_cannot_leave_its_attribute() {
        assert_eq!(
            attribute_escaped("/x\"><script>alert(1)</script>/"),
            "/x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;/"
        );
    }
}
