//! Incremental, best-effort parsing of JSON text that arrives in pieces.
//!
//! Models stream tool-call arguments as a sequence of text deltas. Between
//! deltas the text is usually not valid JSON yet (`{"city": "Par`), but a
//! caller often wants to look at what has arrived so far: show a partially
//! written argument, start work early, or validate as it goes.
//! [`PartialJson`] keeps a [`serde_json::Value`] that is always the
//! best-effort completion of the text pushed so far:
//!
//! - open arrays and objects are closed (`[1, {"a": 2` reads as `[1, {"a": 2}]`);
//! - a string in progress holds the characters seen so far (`"Par` reads as
//!   `"Par"`), and an escape sequence counts only once it is complete;
//! - a number holds its longest valid prefix (`12.` and `12.e` read as `12`,
//!   a lone `-` reads as nothing yet);
//! - a prefix of `true`, `false` or `null` reads as that literal (`fals`);
//! - an object key appears only once its value has started (`{"a": 1, "b":`
//!   reads as `{"a": 1}`), and a trailing comma is ignored.
//!
//! The parser is incremental: every byte is examined once, the value is updated
//! in place (appending to the string in progress, pushing array elements,
//! inserting object entries), and [`PartialJson::current`] borrows it without
//! any work. The whole stream therefore costs time linear in its length, plus a
//! walk along the open containers (bounded by the nesting limit) once per delta.
//!
//! Text that can never become valid JSON (`[1,]`, `{"a" 1}`, a control
//! character inside a string, a lone UTF-16 surrogate escape, ...) stops the
//! parser: [`PartialJson::error`] reports where, and the value stays as it was
//! just before the offending character. Acceptance matches `serde_json`'s, so
//! once a whole document has been pushed the value equals
//! `serde_json::from_str` of the text.
//!
//! ```
//! use tool_core::partial_json::PartialJson;
//! use serde_json::json;
//!
//! let mut args = PartialJson::new();
//! args.push(r#"{"city": "Par"#);
//! assert_eq!(args.current(), Some(&json!({"city": "Par"})));
//! args.push(r#"is", "days": [1, 2"#);
//! assert_eq!(args.current(), Some(&json!({"city": "Paris", "days": [1, 2]})));
//! args.push("]}");
//! assert!(args.is_complete());
//! ```

use serde_json::{Number, Value};
use std::fmt;
use std::mem;

/// Deepest nesting of arrays and objects accepted; the same limit as
/// `serde_json`'s default recursion limit, so both accept the same documents.
/// It also bounds the per-delta walk along the open containers.
const MAX_DEPTH: usize = 127;

/// Number tokens up to this length are re-evaluated on every delta. Longer
/// ones only when they have doubled since the last evaluation, which keeps a
/// pathological multi-megabyte number token linear overall.
const NUMBER_EAGER_LEN: usize = 64;

/// Incremental best-effort parser for JSON text streamed in deltas.
///
/// Feed text with [`push`](Self::push) and read the best-effort value with
/// [`current`](Self::current) (borrowed, free) or [`value`](Self::value)
/// (an owned clone). See the [module documentation](self) for the completion
/// rules.
///
/// ```
/// use tool_core::partial_json::PartialJson;
/// use serde_json::json;
///
/// let mut p = PartialJson::new();
/// for delta in ["[tr", "ue, -1", "2.", "5e", "1, \"a\\u00", "e9\""] {
///     p.push(delta);
/// }
/// assert_eq!(p.value(), Some(json!([true, -125.0, "aé"])));
/// ```
#[derive(Debug, Clone)]
pub struct PartialJson {
    /// Every delta pushed so far, concatenated.
    text: String,
    /// The maintained best-effort value; complete and up to date between
    /// pushes. While a push is being processed the open containers are moved
    /// out of it into `stack` (see [`PartialJson::detach`]).
    root: Option<Value>,
    /// Open arrays and objects, outermost first.
    stack: Vec<Frame>,
    state: State,
    /// The string (value or key) in progress. A value string lives in the tree
    /// between pushes and is moved back here while a push is processed.
    buf: String,
    /// Token of the number in progress.
    num: String,
    /// Length of `num` when its value was last evaluated.
    num_evaluated: usize,
    error: Option<PartialJsonError>,
}

/// One open array or object.
#[derive(Debug, Clone)]
struct Frame {
    kind: Kind,
    /// The container itself while a push is processed; `Null` otherwise, when
    /// it sits in its parent's slot inside the tree.
    value: Value,
    /// For objects: the key whose value is expected or in progress.
    key: Option<String>,
    /// Whether the child in progress already has its slot in `value` (the last
    /// array element, or the entry for `key`).
    child_placed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Array,
    Object,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a value; `allow_close` right after `[` (empty array).
    Value {
        allow_close: bool,
    },
    /// Expecting an object key; `allow_close` right after `{` (empty object).
    Key {
        allow_close: bool,
    },
    Colon,
    /// After a value inside a container: expecting `,` or the closing bracket.
    AfterValue,
    Str {
        key: bool,
        esc: Esc,
    },
    Num(Num),
    Lit {
        word: &'static [u8],
        matched: usize,
    },
    /// The top-level value is complete; only whitespace may follow.
    Done,
}

/// Position inside an escape sequence of a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Esc {
    None,
    Backslash,
    /// Inside `\uXXXX`; `high` is a preceding leading surrogate awaiting its pair.
    Hex {
        high: Option<u16>,
        digits: u8,
        acc: u16,
    },
    /// After a leading surrogate escape: expecting `\` of its pair.
    LowBackslash(u16),
    /// Expecting `u` of the trailing surrogate escape.
    LowU(u16),
}

/// Position inside a number token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    /// Whether the token may end here.
    fn is_terminal(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

/// Why a byte was rejected, before its offset is known.
enum Fault {
    Unexpected,
    Kind(PartialJsonErrorKind),
}

impl From<PartialJsonErrorKind> for Fault {
    fn from(kind: PartialJsonErrorKind) -> Self {
        Fault::Kind(kind)
    }
}

/// The text pushed into a [`PartialJson`] can never become valid JSON.
///
/// ```
/// use tool_core::partial_json::{PartialJson, PartialJsonErrorKind};
///
/// let mut p = PartialJson::new();
/// p.push("[1, 2,]");
/// let err = p.error().expect("trailing comma is invalid");
/// assert_eq!(err.offset(), 6);
/// assert_eq!(err.kind(), PartialJsonErrorKind::UnexpectedCharacter(']'));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialJsonError {
    offset: usize,
    kind: PartialJsonErrorKind,
}

impl PartialJsonError {
    /// Byte offset in [`PartialJson::text`] of the character that was rejected.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    ///
    /// let mut p = PartialJson::new();
    /// p.push(r#"{"a" 1}"#);
    /// assert_eq!(p.error().map(|e| e.offset()), Some(5));
    /// ```
    #[must_use]
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// What was wrong.
    ///
    /// ```
    /// use tool_core::partial_json::{PartialJson, PartialJsonErrorKind};
    ///
    /// let mut p = PartialJson::new();
    /// p.push(r#""\q""#);
    /// assert_eq!(p.error().map(|e| e.kind()), Some(PartialJsonErrorKind::InvalidEscape));
    /// ```
    #[must_use]
    pub fn kind(&self) -> PartialJsonErrorKind {
        self.kind
    }
}

impl fmt::Display for PartialJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.kind, self.offset)
    }
}

impl std::error::Error for PartialJsonError {}

/// Kinds of [`PartialJsonError`].
///
/// ```
/// use tool_core::partial_json::{PartialJson, PartialJsonErrorKind};
///
/// let mut p = PartialJson::new();
/// p.push("{} {}");
/// assert_eq!(
///     p.error().map(|e| e.kind()),
///     Some(PartialJsonErrorKind::TrailingCharacters)
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartialJsonErrorKind {
    /// A character that JSON does not allow at this position.
    UnexpectedCharacter(char),
    /// A raw control character (U+0000 to U+001F) inside a string.
    ControlCharacterInString,
    /// A backslash escape that JSON does not define, or a bad `\u` hex digit.
    InvalidEscape,
    /// A `\u` escape of a UTF-16 surrogate that is not part of a valid pair.
    LoneSurrogate,
    /// A number too large to represent.
    NumberOutOfRange,
    /// More than whitespace after the complete top-level value.
    TrailingCharacters,
    /// Arrays and objects nested deeper than `serde_json` accepts (127 levels).
    DepthLimitExceeded,
}

impl fmt::Display for PartialJsonErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnexpectedCharacter(c) => write!(f, "unexpected character {c:?}"),
            Self::ControlCharacterInString => f.write_str("control character in string"),
            Self::InvalidEscape => f.write_str("invalid escape"),
            Self::LoneSurrogate => f.write_str("lone UTF-16 surrogate in \\u escape"),
            Self::NumberOutOfRange => f.write_str("number out of range"),
            Self::TrailingCharacters => f.write_str("trailing characters after JSON value"),
            Self::DepthLimitExceeded => f.write_str("nesting too deep"),
        }
    }
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJson {
    /// An empty parser: no text, no value.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    ///
    /// let p = PartialJson::new();
    /// assert_eq!(p.current(), None);
    /// assert_eq!(p.text(), "");
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self {
            text: String::new(),
            root: None,
            stack: Vec::new(),
            state: State::Value { allow_close: false },
            buf: String::new(),
            num: String::new(),
            num_evaluated: 0,
            error: None,
        }
    }

    /// Feeds the next piece of text. Pieces may split the JSON anywhere,
    /// including inside strings, escapes, numbers and literals.
    ///
    /// Costs time proportional to `delta.len()` plus the nesting depth. After
    /// an error the text is still recorded but no longer parsed.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    /// use serde_json::json;
    ///
    /// let mut p = PartialJson::new();
    /// p.push(r#"{"note": "caf\u00"#);
    /// assert_eq!(p.current(), Some(&json!({"note": "caf"})));
    /// p.push(r#"e9"}"#);
    /// assert_eq!(p.current(), Some(&json!({"note": "café"})));
    /// ```
    pub fn push(&mut self, delta: &str) {
        let base = self.text.len();
        self.text.push_str(delta);
        if self.error.is_some() || delta.is_empty() {
            return;
        }
        self.detach();
        if let Err(err) = self.feed(delta, base) {
            self.error = Some(err);
        }
        self.reattach();
    }

    /// The best-effort value of the text so far, as an owned clone; `None`
    /// while nothing usable has arrived (empty input, whitespace, a lone `-`).
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    /// use serde_json::json;
    ///
    /// let mut p = PartialJson::new();
    /// p.push("-");
    /// assert_eq!(p.value(), None);
    /// p.push("2.5e");
    /// assert_eq!(p.value(), Some(json!(-2.5)));
    /// ```
    #[must_use]
    pub fn value(&self) -> Option<Value> {
        // A long top-level number is re-evaluated in place only as it grows
        // (see `evaluate_number`): read it exactly here, where a complete
        // document must give the same value as a one-shot parse.
        if let State::Num(n) = self.state
            && self.stack.is_empty()
            && n.is_terminal()
            && let Ok(number) = self.num.parse::<Number>()
        {
            return Some(Value::Number(number));
        }
        self.root.clone()
    }

    /// The best-effort value of the text so far, borrowed. Free to call after
    /// every delta: the value is maintained in place by [`push`](Self::push).
    /// A number token longer than 64 characters that is still being written
    /// is re-evaluated only each time it doubles (so a huge number streamed
    /// a digit at a time stays linear); [`value`](Self::value) reads a
    /// top-level number exactly.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    /// use serde_json::json;
    ///
    /// let mut p = PartialJson::new();
    /// p.push(r#"{"k1": 1, "k2":"#);
    /// assert_eq!(p.current(), Some(&json!({"k1": 1})));
    /// ```
    #[must_use]
    pub fn current(&self) -> Option<&Value> {
        self.root.as_ref()
    }

    /// All text pushed so far.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    ///
    /// let mut p = PartialJson::new();
    /// p.push("[1");
    /// p.push(", 2]");
    /// assert_eq!(p.text(), "[1, 2]");
    /// ```
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the text so far is one complete JSON document (a full value,
    /// then only whitespace). A top-level number counts as complete as soon as
    /// it is a valid number, although more digits could still follow.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    ///
    /// let mut p = PartialJson::new();
    /// p.push(r#"{"a": [1]"#);
    /// assert!(!p.is_complete());
    /// p.push("}\n");
    /// assert!(p.is_complete());
    /// ```
    #[must_use]
    pub fn is_complete(&self) -> bool {
        if self.error.is_some() {
            return false;
        }
        match self.state {
            State::Done => true,
            // Checked here rather than tracked: only reachable for a top-level
            // number, and the token is short in practice.
            State::Num(n) => {
                self.stack.is_empty() && n.is_terminal() && self.num.parse::<Number>().is_ok()
            }
            _ => false,
        }
    }

    /// Why the text can never become valid JSON, if so. The value then stays
    /// as it was just before the rejected character.
    ///
    /// ```
    /// use tool_core::partial_json::PartialJson;
    /// use serde_json::json;
    ///
    /// let mut p = PartialJson::new();
    /// p.push("[1, 2, oops");
    /// assert!(p.error().is_some());
    /// assert_eq!(p.current(), Some(&json!([1, 2])));
    /// ```
    #[must_use]
    pub fn error(&self) -> Option<&PartialJsonError> {
        self.error.as_ref()
    }

    /// Runs the state machine over one delta. The open containers are detached
    /// (owned by `stack`), so every step is O(1) amortised.
    fn feed(&mut self, delta: &str, base: usize) -> Result<(), PartialJsonError> {
        let bytes = delta.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if let State::Str {
                key,
                esc: Esc::None,
            } = self.state
            {
                // Copy the whole run of ordinary characters in one append. The
                // run ends at an ASCII byte or the end of the delta, and starts
                // at the delta's start or after an ASCII byte, so both ends are
                // char boundaries.
                let rest = bytes.get(i..).unwrap_or_default();
                let run = rest
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                    .unwrap_or(rest.len());
                if let Some(chars) = delta.get(i..i + run) {
                    self.buf.push_str(chars);
                }
                i += run;
                match bytes.get(i) {
                    None => break,
                    Some(b'"') => self.end_string(key),
                    Some(b'\\') => {
                        self.state = State::Str {
                            key,
                            esc: Esc::Backslash,
                        }
                    }
                    Some(_) => {
                        return Err(PartialJsonError {
                            offset: base + i,
                            kind: PartialJsonErrorKind::ControlCharacterInString,
                        });
                    }
                }
                i += 1;
                continue;
            }
            match self.step(b) {
                Ok(true) => i += 1,
                // The byte ended a number and is looked at again in the new state.
                Ok(false) => {}
                Err(fault) => {
                    let kind = match fault {
                        Fault::Kind(kind) => kind,
                        Fault::Unexpected => PartialJsonErrorKind::UnexpectedCharacter(
                            delta
                                .get(i..)
                                .and_then(|s| s.chars().next())
                                .unwrap_or(char::REPLACEMENT_CHARACTER),
                        ),
                    };
                    return Err(PartialJsonError {
                        offset: base + i,
                        kind,
                    });
                }
            }
        }
        Ok(())
    }

    /// Handles one byte outside the plain part of a string. Returns whether
    /// the byte was consumed.
    fn step(&mut self, b: u8) -> Result<bool, Fault> {
        let is_ws = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match self.state {
            State::Value { allow_close } => match b {
                _ if is_ws => {}
                b'{' => self.open(Kind::Object)?,
                b'[' => self.open(Kind::Array)?,
                b'"' => {
                    self.buf.clear();
                    self.state = State::Str {
                        key: false,
                        esc: Esc::None,
                    };
                }
                b'-' => self.start_number(b, Num::Minus),
                b'0' => self.start_number(b, Num::Zero),
                b'1'..=b'9' => self.start_number(b, Num::Int),
                b't' => self.start_literal(b"true", Value::Bool(true)),
                b'f' => self.start_literal(b"false", Value::Bool(false)),
                b'n' => self.start_literal(b"null", Value::Null),
                b']' if allow_close => self.close(Kind::Array)?,
                _ => return Err(Fault::Unexpected),
            },
            State::Key { allow_close } => match b {
                _ if is_ws => {}
                b'"' => {
                    self.buf.clear();
                    self.state = State::Str {
                        key: true,
                        esc: Esc::None,
                    };
                }
                b'}' if allow_close => self.close(Kind::Object)?,
                _ => return Err(Fault::Unexpected),
            },
            State::Colon => match b {
                _ if is_ws => {}
                b':' => self.state = State::Value { allow_close: false },
                _ => return Err(Fault::Unexpected),
            },
            State::AfterValue => match b {
                _ if is_ws => {}
                b',' => {
                    self.state = match self.stack.last().map(|f| f.kind) {
                        Some(Kind::Object) => State::Key { allow_close: false },
                        _ => State::Value { allow_close: false },
                    }
                }
                b']' => self.close(Kind::Array)?,
                b'}' => self.close(Kind::Object)?,
                _ => return Err(Fault::Unexpected),
            },
            State::Done => {
                if !is_ws {
                    return Err(PartialJsonErrorKind::TrailingCharacters.into());
                }
            }
            State::Str { key, esc } => self.string_escape(key, esc, b)?,
            State::Num(n) => return self.number_byte(n, b),
            State::Lit { word, matched } => {
                if word.get(matched) != Some(&b) {
                    return Err(Fault::Unexpected);
                }
                if matched + 1 == word.len() {
                    // The literal's value was placed when it started.
                    self.finish_value();
                } else {
                    self.state = State::Lit {
                        word,
                        matched: matched + 1,
                    };
                }
            }
        }
        Ok(true)
    }

    fn open(&mut self, kind: Kind) -> Result<(), Fault> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(PartialJsonErrorKind::DepthLimitExceeded.into());
        }
        let (value, state) = match kind {
            Kind::Array => (Value::Array(Vec::new()), State::Value { allow_close: true }),
            Kind::Object => (
                Value::Object(serde_json::Map::new()),
                State::Key { allow_close: true },
            ),
        };
        // The parent gets its slot for this container when it closes or when
        // the push ends, whichever comes first.
        self.stack.push(Frame {
            kind,
            value,
            key: None,
            child_placed: false,
        });
        self.state = state;
        Ok(())
    }

    fn close(&mut self, kind: Kind) -> Result<(), Fault> {
        match self.stack.pop() {
            Some(frame) if frame.kind == kind => {
                self.complete(frame.value);
                Ok(())
            }
            Some(frame) => {
                // Mismatched bracket: keep the frame so the tree stays whole.
                self.stack.push(frame);
                Err(Fault::Unexpected)
            }
            None => Err(Fault::Unexpected),
        }
    }

    fn start_number(&mut self, b: u8, n: Num) {
        self.num.clear();
        self.num.push(char::from(b));
        self.num_evaluated = 0;
        self.state = State::Num(n);
    }

    fn start_literal(&mut self, word: &'static [u8], value: Value) {
        // The first letter already determines the literal, so it is shown at once.
        self.place(value);
        self.state = State::Lit { word, matched: 1 };
    }

    fn number_byte(&mut self, n: Num, b: u8) -> Result<bool, Fault> {
        let next = match (n, b) {
            (Num::Minus, b'0') => Some(Num::Zero),
            (Num::Minus, b'1'..=b'9') | (Num::Int, b'0'..=b'9') => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
            (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
            (Num::Exp | Num::ExpSign | Num::ExpDigits, b'0'..=b'9') => Some(Num::ExpDigits),
            _ => None,
        };
        match next {
            Some(next) => {
                self.num.push(char::from(b));
                self.state = State::Num(next);
                Ok(true)
            }
            None if n.is_terminal() => {
                let number = self
                    .num
                    .parse::<Number>()
                    .map_err(|_| PartialJsonErrorKind::NumberOutOfRange)?;
                self.complete(Value::Number(number));
                Ok(false)
            }
            None => Err(Fault::Unexpected),
        }
    }

    fn string_escape(&mut self, key: bool, esc: Esc, b: u8) -> Result<(), Fault> {
        let mut esc_next = Esc::None;
        match esc {
            // Plain characters are handled in bulk by `feed`.
            Esc::None => return Err(Fault::Unexpected),
            Esc::Backslash => {
                let c = match b {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        esc_next = Esc::Hex {
                            high: None,
                            digits: 0,
                            acc: 0,
                        };
                        '\0'
                    }
                    _ => return Err(PartialJsonErrorKind::InvalidEscape.into()),
                };
                if esc_next == Esc::None {
                    self.buf.push(c);
                }
            }
            Esc::Hex { high, digits, acc } => {
                let digit = match b {
                    b'0'..=b'9' => b - b'0',
                    b'a'..=b'f' => b - b'a' + 10,
                    b'A'..=b'F' => b - b'A' + 10,
                    _ => return Err(PartialJsonErrorKind::InvalidEscape.into()),
                };
                // At most four digits, so nothing is shifted out.
                let acc = (acc << 4) | u16::from(digit);
                if digits < 3 {
                    esc_next = Esc::Hex {
                        high,
                        digits: digits + 1,
                        acc,
                    };
                } else {
                    esc_next = self.unicode_escape(high, acc)?;
                }
            }
            // Like serde_json, a leading surrogate must be followed by its pair.
            Esc::LowBackslash(high) if b == b'\\' => esc_next = Esc::LowU(high),
            Esc::LowU(high) if b == b'u' => {
                esc_next = Esc::Hex {
                    high: Some(high),
                    digits: 0,
                    acc: 0,
                }
            }
            Esc::LowBackslash(_) | Esc::LowU(_) => {
                return Err(PartialJsonErrorKind::LoneSurrogate.into());
            }
        }
        self.state = State::Str { key, esc: esc_next };
        Ok(())
    }

    /// Applies a complete `\uXXXX`; returns the escape state that follows.
    fn unicode_escape(&mut self, high: Option<u16>, unit: u16) -> Result<Esc, Fault> {
        let code = match (high, unit) {
            (None, 0xD800..=0xDBFF) => return Ok(Esc::LowBackslash(unit)),
            (None, 0xDC00..=0xDFFF) => return Err(PartialJsonErrorKind::LoneSurrogate.into()),
            (None, _) => u32::from(unit),
            (Some(high), 0xDC00..=0xDFFF) => {
                0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00)
            }
            (Some(_), _) => return Err(PartialJsonErrorKind::LoneSurrogate.into()),
        };
        let c = char::from_u32(code).ok_or(PartialJsonErrorKind::LoneSurrogate)?;
        self.buf.push(c);
        Ok(Esc::None)
    }

    fn end_string(&mut self, key: bool) {
        let s = mem::take(&mut self.buf);
        if key {
            if let Some(frame) = self.stack.last_mut() {
                frame.key = Some(s);
            }
            self.state = State::Colon;
        } else {
            self.complete(Value::String(s));
        }
    }

    /// Stores the value of the child in progress in the innermost open
    /// container (creating its slot on first use) or at the root.
    fn place(&mut self, value: Value) {
        match self.stack.last_mut() {
            Some(frame) => frame.place(value),
            None => self.root = Some(value),
        }
    }

    /// Stores the final value of the child in progress and moves on.
    fn complete(&mut self, value: Value) {
        match self.stack.last_mut() {
            Some(frame) => frame.complete(value),
            None => self.root = Some(value),
        }
        self.finish_value();
    }

    fn finish_value(&mut self) {
        self.state = match self.stack.last_mut() {
            Some(frame) => {
                frame.child_placed = false;
                frame.key = None;
                State::AfterValue
            }
            None => State::Done,
        };
    }

    /// Moves the open containers (and a string in progress) out of the tree so
    /// that `feed` can work on them directly. O(depth) per push.
    fn detach(&mut self) {
        if let Some(first) = self.stack.first_mut() {
            first.value = self.root.take().unwrap_or_default();
        }
        for k in 1..self.stack.len() {
            let (outer, inner) = self.stack.split_at_mut(k);
            if let (Some(parent), Some(child)) = (outer.last_mut(), inner.first_mut()) {
                child.value = parent.take_child();
            }
        }
        if let State::Str { key: false, .. } = self.state {
            let value = match self.stack.last_mut() {
                Some(frame) => frame.take_child(),
                None => self.root.take().unwrap_or_default(),
            };
            if let Value::String(s) = value {
                self.buf = s;
            }
        }
    }

    /// Puts everything `detach` took (plus what `feed` built) back into the
    /// tree, so `current` sees the completed value. O(depth) per push.
    fn reattach(&mut self) {
        match self.state {
            State::Str { key: false, .. } => {
                let s = mem::take(&mut self.buf);
                self.place(Value::String(s));
            }
            State::Num(n) => match self.evaluate_number(n) {
                NumberValue::Some(number) => self.place(Value::Number(number)),
                NumberValue::None => match self.stack.last_mut() {
                    Some(frame) => frame.remove_child(),
                    None => self.root = None,
                },
                NumberValue::Unchanged => {}
            },
            _ => {}
        }
        for k in (1..self.stack.len()).rev() {
            let (outer, inner) = self.stack.split_at_mut(k);
            if let (Some(parent), Some(child)) = (outer.last_mut(), inner.first_mut()) {
                parent.place(mem::take(&mut child.value));
            }
        }
        if let Some(first) = self.stack.first_mut() {
            self.root = Some(mem::take(&mut first.value));
        }
    }

    /// Best-effort value of the number token in progress: its longest prefix
    /// that is a valid number.
    fn evaluate_number(&mut self, n: Num) -> NumberValue {
        let len = self.num.len();
        if len > NUMBER_EAGER_LEN && len < 2 * self.num_evaluated {
            return NumberValue::Unchanged;
        }
        self.num_evaluated = len;
        let token = self.num.as_str();
        let token = match n {
            Num::Minus => None,
            Num::Exp => token.get(..len - 1),
            Num::ExpSign => token.get(..len - 2),
            _ => Some(token),
        };
        // `12.` and `12.e` both fall back to `12`.
        match token.map(|t| t.strip_suffix('.').unwrap_or(t).parse()) {
            Some(Ok(number)) => NumberValue::Some(number),
            // Out of range for now (`1e400`): show nothing, as a one-shot
            // parse of the same text would.
            _ => NumberValue::None,
        }
    }
}

/// Outcome of [`PartialJson::evaluate_number`].
enum NumberValue {
    Some(Number),
    None,
    /// A long token not re-evaluated this time; keep the previous value.
    Unchanged,
}

impl Frame {
    /// The slot of the child in progress, if it has one yet.
    fn slot(&mut self) -> Option<&mut Value> {
        if !self.child_placed {
            return None;
        }
        match &mut self.value {
            Value::Array(items) => items.last_mut(),
            Value::Object(entries) => self.key.as_deref().and_then(|k| entries.get_mut(k)),
            _ => None,
        }
    }

    fn place(&mut self, value: Value) {
        if let Some(slot) = self.slot() {
            *slot = value;
            return;
        }
        self.child_placed = true;
        match &mut self.value {
            Value::Array(items) => items.push(value),
            Value::Object(entries) => {
                // The key is still needed to find the slot again later.
                entries.insert(self.key.clone().unwrap_or_default(), value);
            }
            _ => {}
        }
    }

    fn complete(&mut self, value: Value) {
        if let Some(slot) = self.slot() {
            *slot = value;
            return;
        }
        match &mut self.value {
            Value::Array(items) => items.push(value),
            Value::Object(entries) => {
                // Common case: the value started and ended within one push, so
                // the key moves into the map without a copy.
                entries.insert(self.key.take().unwrap_or_default(), value);
            }
            _ => {}
        }
    }

    /// Drops the slot of the child in progress (a number that went out of range).
    fn remove_child(&mut self) {
        if !self.child_placed {
            return;
        }
        self.child_placed = false;
        match &mut self.value {
            Value::Array(items) => {
                items.pop();
            }
            Value::Object(entries) => {
                // The entry is normally the last one inserted, so even the
                // swap-removal of `preserve_order` maps keeps the key order.
                if let Some(k) = self.key.as_deref() {
                    entries.remove(k);
                }
            }
            _ => {}
        }
    }

    fn take_child(&mut self) -> Value {
        self.slot().map(mem::take).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOCS: &[&str] = &[
        r#"{"a": 1, "b": [true, false, null], "c": {"d": "e\"f\\g\/h\b\f\n\r\t"}}"#,
        "[1, -2, 3.25, -0.5e-3, 6E+2, 0, -0, 1e2, 12345678901234567890, -9223372036854775808]",
        r#"  { "nested" : [ [ [ { } ] , [ ] ] , { "x" : { "y" : [ "z" ] } } ] }  "#,
        r#""caf\u00e9 \ud83d\ude00 \u0041\u00DF\u6771 done""#,
        r#"{"emoji": "😀 naïve 東京", "esc": "\u00e9\ud834\udd1e", "k😀": [1]}"#,
        "[\n\t{\"type\":\"div\",\"children\":[{\"type\":\"Card\",\"props\":{}}]},\r\n\"\"\n]",
        r#"{"dup": 1, "dup": [2], "other": "x", "dup": {"z": null}}"#,
        "true",
        "  null  ",
        "-12.5e+3",
        "0",
        r#"[[], {}, [{}], {"a": []}, "", 0.0]"#,
    ];

    fn parse_whole(text: &str) -> PartialJson {
        let mut p = PartialJson::new();
        p.push(text);
        p
    }

    /// Splits `text` into pieces of `size` chars (the last may be shorter).
    fn chunks(text: &str, size: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        while start < text.len() {
            let idx = bounds.partition_point(|&b| b < start) + size;
            let end = bounds.get(idx).copied().unwrap_or(text.len());
            out.push(&text[start..end]);
            start = end;
        }
        out
    }

    #[test]
    fn every_two_way_split_matches_serde_json() {
        for doc in DOCS {
            let expected: Value = serde_json::from_str(doc).expect("sample is valid");
            for (split, _) in doc.char_indices().chain([(doc.len(), ' ')]) {
                let mut p = PartialJson::new();
                p.push(&doc[..split]);
                p.push(&doc[split..]);
                assert_eq!(p.error(), None, "{doc:?} split at {split}");
                assert_eq!(p.current(), Some(&expected), "{doc:?} split at {split}");
                assert!(p.is_complete(), "{doc:?} split at {split}");
                assert_eq!(p.text(), *doc);
            }
        }
    }

    #[test]
    fn chunk_sizes_one_to_seven_match_serde_json() {
        for doc in DOCS {
            let expected: Value = serde_json::from_str(doc).expect("sample is valid");
            for size in 1..=7 {
                let mut p = PartialJson::new();
                for piece in chunks(doc, size) {
                    p.push(piece);
                }
                assert_eq!(p.value(), Some(expected.clone()), "{doc:?} size {size}");
                assert!(p.is_complete());
            }
        }
    }

    /// The incremental value after any sequence of deltas equals the value of
    /// the same prefix parsed in one go: detaching and reattaching the open
    /// containers must never lose or duplicate anything.
    #[test]
    fn every_prefix_incremental_equals_one_shot() {
        for doc in DOCS {
            for size in 1..=7 {
                let mut p = PartialJson::new();
                for piece in chunks(doc, size) {
                    p.push(piece);
                    let fresh = parse_whole(p.text());
                    assert_eq!(p.current(), fresh.current(), "{:?}", p.text());
                    assert_eq!(p.is_complete(), fresh.is_complete(), "{:?}", p.text());
                }
            }
        }
    }

    fn prefix_values(deltas: &[&str]) -> Vec<Option<Value>> {
        let mut p = PartialJson::new();
        deltas
            .iter()
            .map(|d| {
                p.push(d);
                assert_eq!(p.error(), None, "{:?}", p.text());
                p.value()
            })
            .collect()
    }

    #[test]
    fn split_escapes_appear_only_when_complete() {
        let seen = prefix_values(&["\"a\\", "u0", "0e", "9b\\", "n", "\""]);
        let expected = ["a", "a", "a", "aéb", "aéb\n", "aéb\n"];
        for (got, want) in seen.iter().zip(expected) {
            assert_eq!(got, &Some(json!(want)));
        }
    }

    #[test]
    fn surrogate_pairs_split_anywhere() {
        let doc = r#"["\ud83d\ude00x"]"#;
        for (split, _) in doc.char_indices() {
            let mut p = PartialJson::new();
            p.push(&doc[..split]);
            let partial = p.value();
            // Half a pair is never shown.
            let first = partial
                .as_ref()
                .and_then(|v| v.get(0))
                .and_then(Value::as_str);
            if let Some(s) = first {
                assert!(s.is_empty() || s.starts_with('😀'), "{s:?}");
            }
            p.push(&doc[split..]);
            assert_eq!(p.value(), Some(json!(["😀x"])));
        }
    }

    #[test]
    fn lone_surrogates_are_rejected_like_serde_json() {
        for text in [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83dx""#,
            r#""\ud83d\n""#,
            r#""\ud83d\u0041""#,
            r#""\ud83d\ud83d""#,
        ] {
            assert!(serde_json::from_str::<Value>(text).is_err());
            let p = parse_whole(text);
            assert_eq!(
                p.error().map(PartialJsonError::kind),
                Some(PartialJsonErrorKind::LoneSurrogate),
                "{text}"
            );
        }
    }

    #[test]
    fn object_key_appears_when_its_value_starts() {
        let seen = prefix_values(&[
            "{\"a\": 1, \"long key",
            "\"",
            " :",
            " ",
            "-",
            "4",
            ".",
            "5",
            "e",
            "+",
            "1",
            "}",
        ]);
        let expected = [
            r#"{"a": 1}"#,
            r#"{"a": 1}"#,
            r#"{"a": 1}"#,
            r#"{"a": 1}"#,
            r#"{"a": 1}"#,
            r#"{"a": 1, "long key": -4}"#,
            r#"{"a": 1, "long key": -4}"#,
            r#"{"a": 1, "long key": -4.5}"#,
            r#"{"a": 1, "long key": -4.5}"#,
            r#"{"a": 1, "long key": -4.5}"#,
            r#"{"a": 1, "long key": -4.5e+1}"#,
            r#"{"a": 1, "long key": -4.5e+1}"#,
        ];
        assert_eq!(seen.len(), expected.len());
        for (got, want) in seen.iter().zip(expected) {
            // Parsed rather than built with `json!`, so the comparison also
            // holds with serde_json's `arbitrary_precision`.
            assert_eq!(got, &serde_json::from_str::<Value>(want).ok(), "{want}");
        }
    }

    #[test]
    fn literals_show_from_their_first_letter() {
        let seen = prefix_values(&["[t", "r", "ue,", " f", "als", "e, n", "ull]"]);
        assert_eq!(seen[0], Some(json!([true])));
        assert_eq!(seen[3], Some(json!([true, false])));
        assert_eq!(seen[5], Some(json!([true, false, null])));
        assert_eq!(seen[6], Some(json!([true, false, null])));
    }

    #[test]
    fn whitespace_only_is_nothing_yet() {
        let p = parse_whole(" \n\t\r ");
        assert_eq!(p.current(), None);
        assert_eq!(p.error(), None);
        assert!(!p.is_complete());
    }

    #[test]
    fn long_string_grows_in_place() {
        let mut p = PartialJson::new();
        p.push(r#"{"content": ""#);
        for _ in 0..1000 {
            p.push("0123456789abcdef");
        }
        let Some(Value::Object(map)) = p.current() else {
            panic!("object expected")
        };
        assert_eq!(map["content"].as_str().map(str::len), Some(16_000));
    }

    #[test]
    fn invalid_input_is_an_error_and_never_panics() {
        let cases: &[(&str, usize, Option<Value>)] = &[
            ("}", 0, None),
            ("[1,]", 3, Some(json!([1]))),
            ("[1 2]", 3, Some(json!([1]))),
            (r#"{"a" 1}"#, 5, Some(json!({}))),
            (r#"{"a":1,}"#, 7, Some(json!({"a": 1}))),
            ("{1:2}", 1, Some(json!({}))),
            ("[}", 1, Some(json!([]))),
            (r#"{"a": [1}"#, 8, Some(json!({"a": [1]}))),
            ("01", 1, Some(json!(0))),
            ("1.]", 2, Some(json!(1))),
            ("-x", 1, None),
            ("1e+x", 3, Some(json!(1))),
            ("tx", 1, Some(json!(true))),
            ("nul1", 3, Some(json!(null))),
            ("truex", 4, Some(json!(true))),
            ("\"a\\x\"", 3, Some(json!("a"))),
            ("\"a\\u12g4\"", 6, Some(json!("a"))),
            ("\"a\nb\"", 2, Some(json!("a"))),
            ("{} {}", 3, Some(json!({}))),
            ("é", 0, None),
            ("[1, ¿]", 4, Some(json!([1]))),
            ("1e400 ", 5, None),
        ];
        for (text, offset, value) in cases {
            let p = parse_whole(text);
            let err = p.error().unwrap_or_else(|| panic!("{text:?} must fail"));
            assert_eq!(err.offset(), *offset, "{text:?}: {err}");
            assert_eq!(p.current(), value.as_ref(), "{text:?}");
            assert!(!p.is_complete());
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn errors_are_the_same_when_chunked() {
        let text = r#"{"a": [1, {"b": "c\u00e9"}], "d": tru"#;
        let bad = format!("{text}x, \"e\": 1}}");
        let whole = parse_whole(&bad);
        for size in 1..=7 {
            let mut p = PartialJson::new();
            for piece in chunks(&bad, size) {
                p.push(piece);
            }
            assert_eq!(p.error(), whole.error());
            assert_eq!(
                p.current(),
                Some(&json!({"a": [1, {"b": "cé"}], "d": true}))
            );
            assert_eq!(p.text(), bad);
        }
    }

    #[test]
    fn nothing_is_parsed_after_an_error() {
        let mut p = PartialJson::new();
        p.push("[1, x");
        p.push(", 2]");
        assert_eq!(p.current(), Some(&json!([1])));
        assert_eq!(p.text(), "[1, x, 2]");
        assert_eq!(p.error().map(PartialJsonError::offset), Some(4));
    }

    #[test]
    fn a_long_top_level_number_split_across_pushes_reads_back_exactly() {
        // Found by the partial_json fuzz target: the value stayed at the
        // first push's 57 digits (9.1e56) where serde_json reads 9.1e74.
        let text = "909999999999999999999999999990553294749999999999999999999999999990553294742";
        let mut parser = PartialJson::new();
        parser.push(&text[..57]);
        parser.push(&text[57..]);
        assert!(parser.is_complete());
        assert_eq!(parser.value(), serde_json::from_str::<Value>(text).ok());
    }

    #[test]
    fn numbers_show_their_longest_valid_prefix() {
        for (text, expected) in [
            ("-", ""),
            ("-0", "-0"),
            ("0.", "0"),
            ("12.e", "12"),
            ("1e", "1"),
            ("1E-", "1"),
            ("3.5e+", "3.5"),
            ("18446744073709551616", "18446744073709551616"),
        ] {
            let expected = serde_json::from_str::<Value>(expected).ok();
            assert_eq!(parse_whole(text).value(), expected, "{text:?}");
        }
        // Never valid JSON, but the completion still shows the number so far.
        let p = parse_whole("12.e");
        assert_eq!(p.current(), Some(&json!(12)));
        assert_eq!(p.error().map(PartialJsonError::offset), Some(3));
        assert!(parse_whole("12").is_complete());
        assert!(!parse_whole("12.").is_complete());
        assert!(!parse_whole("1e999").is_complete());
    }

    #[test]
    fn huge_number_token_stays_linear_and_correct() {
        let mut p = PartialJson::new();
        p.push("[1");
        for _ in 0..2000 {
            p.push("0000000000");
        }
        p.push("e-20000]");
        assert_eq!(p.error(), None);
        let text = p.text().to_owned();
        assert_eq!(p.value(), serde_json::from_str(&text).ok());
    }

    #[test]
    fn depth_limit_matches_serde_json() {
        for depth in [126, 127, 128, 129] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let ours = parse_whole(&text);
            let theirs = serde_json::from_str::<Value>(&text);
            assert_eq!(ours.error().is_none(), theirs.is_ok(), "depth {depth}");
            if let Ok(v) = theirs {
                assert_eq!(ours.current(), Some(&v));
            } else {
                assert_eq!(
                    ours.error().map(PartialJsonError::kind),
                    Some(PartialJsonErrorKind::DepthLimitExceeded)
                );
            }
        }
    }

    /// Deterministic xorshift, so the mutation test needs no extra crate.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// Mutated documents (mostly invalid) agree with `serde_json` on
    /// acceptance and value, whatever the chunking, and never panic.
    #[test]
    fn mutated_documents_agree_with_serde_json() {
        const ALPHABET: &[char] = &[
            '{', '}', '[', ']', '"', ',', ':', '0', '1', '9', '.', 'e', 'E', '+', '-', 't', 'n',
            'u', '\\', ' ', '\n', 'd', '8', 'é', '😀', '\u{1}',
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for doc in DOCS {
            for _ in 0..300 {
                let mut chars: Vec<char> = doc.chars().collect();
                for _ in 0..=rng.below(3) {
                    let at = rng.below(chars.len() + 1);
                    let c = ALPHABET[rng.below(ALPHABET.len())];
                    match rng.below(3) {
                        0 if at < chars.len() => {
                            chars.remove(at);
                        }
                        1 if at < chars.len() => chars[at] = c,
                        _ => chars.insert(at, c),
                    }
                }
                let text: String = chars.into_iter().collect();
                let whole = parse_whole(&text);
                let mut p = PartialJson::new();
                let mut rest = text.as_str();
                while !rest.is_empty() {
                    let mut end = (1 + rng.below(9)).min(rest.len());
                    while !rest.is_char_boundary(end) {
                        end += 1;
                    }
                    p.push(&rest[..end]);
                    rest = &rest[end..];
                }
                assert_eq!(p.current(), whole.current(), "{text:?}");
                assert_eq!(p.error(), whole.error(), "{text:?}");
                match serde_json::from_str::<Value>(&text) {
                    Ok(v) => {
                        assert!(p.is_complete(), "{text:?}");
                        assert_eq!(p.current(), Some(&v), "{text:?}");
                    }
                    Err(_) => assert!(!p.is_complete(), "{text:?}"),
                }
            }
        }
    }

    #[test]
    fn empty_deltas_change_nothing() {
        let mut p = PartialJson::new();
        p.push("");
        assert_eq!(p.current(), None);
        p.push("[\"a");
        p.push("");
        assert_eq!(p.current(), Some(&json!(["a"])));
    }
}
