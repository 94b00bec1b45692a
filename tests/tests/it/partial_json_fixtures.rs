//! Conformance of `tool_core::partial_json::PartialJson` with the shared
//! partial-JSON completion cases (`shared/fixtures/partial-json/`): every
//! case's input, fed whole and one character at a time, must complete to the
//! value of its `expected` text (an empty `expected` means no value yet).
//! Values are compared, not text.

use serde_json::Value;
use tool_core::partial_json::PartialJson;

#[test]
fn partial_json_fixture_cases() {
    let Some(path) = integration_tests::shared_fixture("partial-json/fixjson-cases.json") else {
        return;
    };
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let cases: Vec<Value> =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    assert!(!cases.is_empty(), "no cases in {}", path.display());

    let mut failures = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap_or("<unnamed>");
        let label = format!("#{index} {name}");
        let (Some(input), Some(expected)) = (case["input"].as_str(), case["expected"].as_str())
        else {
            failures.push(format!("{label}: malformed case {case}"));
            continue;
        };
        let expected: Option<Value> = if expected.is_empty() {
            None
        } else {
            match serde_json::from_str(expected) {
                Ok(value) => Some(value),
                Err(e) => {
                    failures.push(format!("{label}: expected {expected:?} is not JSON: {e}"));
                    continue;
                }
            }
        };

        let mut whole = PartialJson::new();
        whole.push(input);

        let mut by_char = PartialJson::new();
        let mut buf = [0u8; 4];
        for c in input.chars() {
            by_char.push(c.encode_utf8(&mut buf));
        }

        // Some inputs can never become valid JSON (`12.e`); the completion
        // must still match, and `error()` must say so exactly when serde_json
        // fails on something other than running out of input.
        let never_valid = serde_json::from_str::<Value>(input)
            .is_err_and(|e| e.classify() != serde_json::error::Category::Eof);
        for (mode, parser) in [("whole", &whole), ("1-char chunks", &by_char)] {
            if parser.current() != expected.as_ref() {
                failures.push(format!(
                    "{label} ({mode}): input {input:?} gave {:?}, expected {expected:?}",
                    parser.current()
                ));
            }
            if parser.error().is_some() != never_valid {
                failures.push(format!(
                    "{label} ({mode}): input {input:?}: error {:?}, but serde_json says never valid = {never_valid}",
                    parser.error().map(ToString::to_string)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} partial-JSON cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!("{} partial-JSON fixture cases passed", cases.len());
}
