//! The inbox page in a real browser: headless Chromium driven over
//! WebDriver (chromedriver, started here on a free loopback port), against
//! an inbox served on loopback by a runtime with a SQLite store.
//!
//! Without Chromium and chromedriver the test skips with a notice; with
//! `REQUIRE_BROWSER=1` (CI) it fails instead. With `INBOX_SCREENSHOTS=dir`
//! it writes the README's screenshots there.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use tool_core::transform::{Phase, Target, ToolTransform};
use tool_core::{Tool, ToolContext, ToolError};
use tool_inbox::{BearerTokens, Principal};
use tool_runtime::{CallOutcome, CallState, Runtime, RuntimeBuilder, ToolCall};

use crate::chromium::{Browser, assert_accessible};

const TOKEN: &str = "browser-test-token";
const HOSTILE_MEMO: &str = "<img src=x onerror=\"window.__xss=1\">";
const HOSTILE_TITLE: &str = "</script><script>window.__xss=2</script>";

/// Held by each browser test while it runs: one Chromium at a time, so
/// that one test's browser does not slow another's past its timings (an
/// approval that expires in 4 s).
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The tools: `transfer` needs approval and hides its `apiKey`; `note`
/// carries hostile text; `confirm` suspends for a form; `lookup` is
/// declaration-only. `runs` counts transfers.
fn runtime(store: &Path, runs: Arc<AtomicUsize>) -> Runtime {
    with_tools(Runtime::builder(), runs)
        .sqlite_store(store)
        .build()
        .unwrap()
}

/// [`runtime`]'s tools on `builder`.
fn with_tools(builder: RuntimeBuilder, runs: Arc<AtomicUsize>) -> RuntimeBuilder {
    let transfer = Tool::builder("transfer")
        .description("Moves money between accounts")
        .input_schema(json!({
            "type": "object",
            "properties": {
                "amount": { "type": "integer", "minimum": 1, "maximum": 10000 },
                "memo": { "type": "string", "minLength": 1 },
                "apiKey": { "type": "string" }
            },
            "required": ["amount"]
        }))
        .editable(["amount", "memo"])
        .require_approval(true)
        .transform(
            ToolTransform::new()
                .redact(Target::Display, &["apiKey"])
                // The approval shows a memo's start only, and no key.
                .display(Phase::Approval, |ctx| {
                    let mut shown = ctx.payload.clone();
                    let object = shown.as_object_mut()?;
                    object.remove("apiKey");
                    if let Some(Value::String(memo)) = object.get_mut("memo") {
                        *memo = format!("{}…", memo.chars().take(6).collect::<String>());
                    }
                    Some(shown)
                }),
        )
        .execute(move |input: Value, _ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(json!({ "moved": input["amount"] })) }
        })
        .build()
        .unwrap();
    let note = Tool::builder("note")
        .description("Writes a note")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("noted")) })
        .build()
        .unwrap();
    let confirm = Tool::builder("confirm")
        .description("Asks before it ships the order")
        .resume_schema(json!({
            "type": "object",
            "properties": {
                "confirm": { "type": "boolean", "description": "Ship it?" },
                "note": { "type": "string", "minLength": 3 },
                "count": { "type": "integer", "minimum": 1, "maximum": 5 },
                "carrier": { "type": "string", "enum": ["post", "courier"] },
                "gift": { "type": "string" }
            },
            "required": ["confirm", "note", "count", "carrier"]
        }))
        .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
            match ctx.resume_data() {
                None => ctx.suspend(json!({ "question": "Ship 3 boxes?" })),
                Some(data) => Ok::<_, ToolError>(json!({ "shipped": data.clone() })),
            }
        })
        .build()
        .unwrap();
    let lookup = Tool::builder("lookup")
        .description("Answered by a person")
        .output_schema(json!({
            "type": "object",
            "properties": { "answer": { "type": "string" } },
            "required": ["answer"]
        }))
        .build()
        .unwrap();
    let wire = Tool::builder("wire")
        .description("Wires money abroad: the approval expires")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("wired")) })
        .build()
        .unwrap();
    builder
        .tools([transfer, note, confirm, lookup, wire])
        .tool_approval_ttl("wire", Duration::from_secs(4))
}

async fn serve(runtime: &Runtime) -> SocketAddr {
    let inbox = tool_inbox::router(
        runtime.clone(),
        BearerTokens::new().token(TOKEN, Principal::new("ops")),
    );
    let app = axum::Router::new().nest("/inbox", inbox);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    address
}

/// Opens the inbox served at `address` and signs in with [`TOKEN`].
async fn sign_in(client: &Client, address: SocketAddr) {
    client
        .goto(&format!("http://{address}/inbox"))
        .await
        .unwrap();
    client
        .wait()
        .for_element(Locator::Css("#token"))
        .await
        .unwrap()
        .send_keys(TOKEN)
        .await
        .unwrap();
    click(client, "#login button[type=submit]").await;
}

/// The CSS selector of `rest` inside the item of `call_id`.
fn item(call_id: &str, rest: &str) -> String {
    format!("li[data-call-id=\"{call_id}\"] {rest}")
}

/// Opens the item `call_id` (its row's summary, once it is listed) unless
/// it is open, and waits for its details.
async fn open(client: &Client, call_id: &str) {
    let summary = client
        .wait()
        .for_element(Locator::Css(&item(call_id, "button.summary")))
        .await
        .unwrap();
    if summary.attr("aria-expanded").await.unwrap().as_deref() != Some("true") {
        summary.click().await.unwrap();
    }
    client
        .wait()
        .for_element(Locator::Css(&item(call_id, ".detail .item-detail")))
        .await
        .unwrap();
}

/// Waits until `css` matches nothing (an item decided goes from the list).
async fn gone(client: &Client, css: &str) {
    let started = Instant::now();
    while !client.find_all(Locator::Css(css)).await.unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{css} still shown after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn click(client: &Client, css: &str) {
    client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

async fn text(client: &Client, css: &str) -> String {
    client
        .find(Locator::Css(css))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

async fn type_into(client: &Client, css: &str, text: &str) {
    let field = client.find(Locator::Css(css)).await.unwrap();
    field.send_keys(text).await.unwrap();
}

async fn screenshot(client: &Client, name: &str) {
    if let Some(dir) = std::env::var_os("INBOX_SCREENSHOTS") {
        let png = client.screenshot().await.unwrap();
        std::fs::write(Path::new(&dir).join(name), png).unwrap();
    }
}

fn settled(stored: Option<tool_runtime::StoredCall>) -> CallOutcome {
    match stored.map(|s| s.state) {
        Some(CallState::Settled { outcome, .. }) => CallOutcome::from(outcome),
        other => panic!("not settled: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_decides_every_kind_of_item_in_the_page() {
    let _one = ONE_BROWSER.lock().await;
    let Some(browser) = Browser::start("tool-inbox-browser-").await else {
        return;
    };
    let (client, dir) = (&browser.client, browser.path().to_path_buf());
    let runs = Arc::new(AtomicUsize::new(0));
    let runtime = runtime(&dir.join("calls.sqlite"), Arc::clone(&runs));
    for (id, amount) in [("t1", 120), ("t2", 9000), ("t4", 300)] {
        // Why: what the user asked, and what the model said beside the call.
        let conversation = vec![
            json!({ "role": "user", "text": "Pay the March invoice" }),
            json!({ "role": "assistant", "text": "Paying it as asked.", "tool_calls": [] }),
        ];
        let call = ToolCall::new(
            id,
            "transfer",
            json!({ "amount": amount, "memo": "invoice 2026-114 for March", "apiKey": "sk-live-secret" }),
        )
        .with_requester("alice")
        .with_messages(conversation);
        runtime.call(call).await;
    }
    runtime
        .call(ToolCall::new(
            "x1",
            "note",
            json!({ "memo": HOSTILE_MEMO, "title": HOSTILE_TITLE }),
        ))
        .await;
    runtime
        .call(ToolCall::new("s1", "confirm", json!({ "order": 7 })))
        .await;
    runtime
        .call(ToolCall::new(
            "l1",
            "lookup",
            json!({ "question": "Which warehouse?" }),
        ))
        .await;
    runtime
        .call(ToolCall::new("e1", "wire", json!({ "amount": 10 })))
        .await;
    let address = serve(&runtime).await;

    // The page asks for the token once, and keeps it for the tab only.
    sign_in(client, address).await;
    for id in ["t1", "t2", "t4", "x1", "s1", "l1", "e1"] {
        open(client, id).await;
    }
    // Who asked, and the item that expires, are shown.
    let facts = text(client, &item("t1", "dl")).await;
    assert!(
        facts.contains("Asked by") && facts.contains("alice"),
        "{facts}"
    );
    let facts = text(client, &item("e1", "dl")).await;
    assert!(facts.contains("Expires"), "{facts}");
    let storage = client
        .execute("return [sessionStorage.getItem('tool-inbox-token'), localStorage.length, location.href];", vec![])
        .await
        .unwrap();
    assert_eq!(storage[0], TOKEN);
    assert_eq!(storage[1], 0, "nothing in localStorage");
    assert!(
        !storage[2].as_str().unwrap().contains(TOKEN),
        "the token is never in the URL"
    );

    let context = text(client, &item("t1", "ol.context")).await;
    assert!(
        context.contains("Pay the March invoice") && context.contains("Paying it as asked."),
        "{context}"
    );
    // Arguments as the display transform shows them; hostile text as text.
    let shown = text(client, &item("t1", "pre.input")).await;
    assert!(
        shown.contains("120") && !shown.contains("sk-live-secret"),
        "{shown}"
    );
    let hostile = text(client, &item("x1", "pre.input")).await;
    // As JSON shows it: the memo's quotes escaped.
    assert!(
        hostile.contains(r#"<img src=x onerror=\"window.__xss=1\">"#)
            && hostile.contains(HOSTILE_TITLE),
        "{hostile}"
    );
    let ran = client
        .execute("return [window.__xss === undefined, document.querySelectorAll('#items img, #items script').length];", vec![])
        .await
        .unwrap();
    assert_eq!(ran, json!([true, 0]), "no script from the arguments ran");
    assert!(!client.source().await.unwrap().contains("sk-live-secret"));

    // A new call shows up live.
    runtime
        .call(ToolCall::new("t3", "transfer", json!({ "amount": 5 })))
        .await;
    open(client, "t3").await;
    client
        .execute("window.scrollTo(0, 0);", vec![])
        .await
        .unwrap();
    screenshot(client, "inbox-list.png").await;

    // Approve t1 with the mouse, x1 with the keyboard only.
    click(client, &item("t1", "button.approve")).await;
    gone(client, &item("t1", "")).await;
    type_into(
        client,
        &item("x1", "button.approve"),
        &Key::Enter.to_string(),
    )
    .await;
    gone(client, &item("x1", "")).await;

    // Decline t2 with a reason.
    type_into(client, &item("t2", ".decline-form input"), "over the limit").await;
    click(client, &item("t2", "button.decline")).await;
    gone(client, &item("t2", "")).await;

    // Resume s1 through its generated form: refused values are shown next
    // to their fields; valid ones resume it.
    type_into(client, &item("s1", "input[name=note]"), "ok").await;
    type_into(client, &item("s1", "input[name=count]"), "9").await;
    click(client, &item("s1", "button.resume")).await;
    let started = Instant::now();
    let errors = loop {
        let errors = client
            .execute(
                "return Array.from(document.querySelectorAll('li[data-call-id=\"s1\"] .field-error')).map(e => e.textContent).filter(t => t);",
                vec![],
            )
            .await
            .unwrap();
        if errors.as_array().is_some_and(|e| !e.is_empty()) {
            break errors;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no field error shown"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let errors = errors.to_string();
    assert!(
        errors.contains('3') && errors.contains('5'),
        "the note's and the count's rules: {errors}"
    );
    screenshot(client, "inbox-form-error.png").await;
    assert!(
        runtime
            .inbox()
            .stored("s1")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
    let note = client
        .find(Locator::Css(&item("s1", "input[name=note]")))
        .await
        .unwrap();
    note.clear().await.unwrap();
    note.send_keys("ship today").await.unwrap();
    let count = client
        .find(Locator::Css(&item("s1", "input[name=count]")))
        .await
        .unwrap();
    count.clear().await.unwrap();
    count.send_keys("3").await.unwrap();
    click(client, &item("s1", "input[name=confirm]")).await;
    click(
        client,
        &item("s1", "select[name=carrier] option:nth-child(2)"),
    )
    .await;
    click(client, &item("s1", "button.resume")).await;
    gone(client, &item("s1", "")).await;

    // The form offers only the editable fields; a request from the page
    // that edits another (as a tampered client would send) is refused and
    // leaves t4 waiting.
    let outside = client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               const base = document.body.dataset.base;
               const headers = { Authorization: `Bearer ${sessionStorage.getItem('tool-inbox-token')}` };
               fetch(`${base}api/items/t4`, { headers }).then(r => r.json()).then(item =>
                 fetch(`${base}api/items/t4/edit`, {
                   method: 'POST',
                   headers: { ...headers, 'Content-Type': 'application/json' },
                   body: JSON.stringify({ digest: item.digest, edit: { apiKey: 'sk-other' } }),
                 })).then(r => r.json().then(answer => done([r.status, answer.error.message])))
                 .catch(e => done([0, String(e)]));"#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(outside[0], json!(422), "{outside}");
    assert!(
        outside[1].as_str().unwrap_or_default().contains("apiKey"),
        "the refusal names the field: {outside}"
    );
    assert_eq!(
        client
            .find_all(Locator::Css(&item("t4", "")))
            .await
            .unwrap()
            .len(),
        1,
        "t4 still waits"
    );

    // Edit t4's amount: the form is filled with the raw values (the memo
    // whole, though the item shows its start), and only the amount, which
    // the person changed, is sent, after a before/after view.
    let amount = client
        .find(Locator::Css(&item("t4", ".edit-form input[name=amount]")))
        .await
        .unwrap();
    assert_eq!(amount.prop("value").await.unwrap().as_deref(), Some("300"));
    let memo = client
        .find(Locator::Css(&item("t4", ".edit-form input[name=memo]")))
        .await
        .unwrap();
    assert_eq!(
        memo.prop("value").await.unwrap().as_deref(),
        Some("invoice 2026-114 for March"),
        "the raw value, not the display's"
    );
    amount.clear().await.unwrap();
    amount.send_keys("250").await.unwrap();
    click(client, &item("t4", "button.edit")).await;
    assert_eq!(
        text(client, &item("t4", ".edit-review th[scope=row]")).await,
        "amount"
    );
    assert_eq!(
        text(client, &item("t4", ".edit-review td.before")).await,
        "300"
    );
    assert_eq!(
        text(client, &item("t4", ".edit-review td.after")).await,
        "250"
    );
    assert_eq!(
        client
            .find_all(Locator::Css(&item("t4", ".edit-review tbody tr")))
            .await
            .unwrap()
            .len(),
        1,
        "only the field the person changed"
    );
    screenshot(client, "inbox-edit.png").await;
    click(client, &item("t4", "button.edit")).await;
    gone(client, &item("t4", "")).await;

    // Respond to the declaration-only call.
    type_into(
        client,
        &item("l1", ".respond-form input[name=answer]"),
        "north",
    )
    .await;
    click(client, &item("l1", "button.respond")).await;
    gone(client, &item("l1", "")).await;
    // The audit trail of the item still waiting.
    click(client, &item("t3", ".history summary")).await;
    client
        .wait()
        .for_element(Locator::Css(&item("t3", ".audit li.audit-requested")))
        .await
        .unwrap();
    screenshot(client, "inbox-audit.png").await;
    // The wire's approval expired meanwhile: it went from the page.
    gone(client, &item("e1", "")).await;
    client.clone().close().await.unwrap();

    // The store has each decision; each tool ran as decided.
    assert_eq!(
        settled(runtime.inbox().stored("t1").await.unwrap()).output(),
        Some(&json!({ "moved": 120 }))
    );
    assert_eq!(
        settled(runtime.inbox().stored("x1").await.unwrap()).output(),
        Some(&json!("noted"))
    );
    assert_eq!(
        settled(runtime.inbox().stored("t2").await.unwrap()),
        CallOutcome::Declined {
            reason: Some("over the limit".into())
        }
    );
    assert_eq!(
        settled(runtime.inbox().stored("s1").await.unwrap()).output(),
        Some(
            &json!({ "shipped": { "confirm": true, "note": "ship today", "count": 3, "carrier": "courier" } })
        )
    );
    assert_eq!(
        settled(runtime.inbox().stored("l1").await.unwrap()).output(),
        Some(&json!({ "answer": "north" }))
    );
    assert_eq!(
        settled(runtime.inbox().stored("t4").await.unwrap()).output(),
        Some(&json!({ "moved": 250 })),
        "t4 ran with the edited amount"
    );
    assert_eq!(
        runtime
            .inbox()
            .stored("t4")
            .await
            .unwrap()
            .unwrap()
            .call
            .input["memo"],
        "invoice 2026-114 for March",
        "the memo the person did not touch ran whole"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "t1 and t4 ran; t2 was declined; t3 waits"
    );
    assert_eq!(
        settled(runtime.inbox().stored("e1").await.unwrap()),
        CallOutcome::Declined {
            reason: Some("expired".into())
        }
    );
    assert!(
        runtime
            .inbox()
            .stored("t3")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
}

/// The resume schemas of the schema test: what schemars emits for typed
/// tools (a `serde_json::Value` field is `true`, an enum behind `$ref`, an
/// optional enum as `anyOf` with `null`, a recursive type, a map) and
/// hostile ones.
fn schema_gallery() -> Vec<(&'static str, Value)> {
    vec![
        ("any", json!(true)),
        ("empty", json!({})),
        (
            "typed",
            json!({
                "type": "object",
                "properties": {
                    "carrier": { "$ref": "#/$defs/Carrier" },
                    "backup": { "anyOf": [{ "$ref": "#/$defs/Carrier" }, { "type": "null" }] },
                    "extra": true,
                    "counts": { "type": "object", "additionalProperties": { "type": "integer" } },
                    "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } }
                },
                "required": ["carrier"],
                "$defs": {
                    "Carrier": { "type": "string", "enum": ["post", "courier"] },
                    "Line": { "type": "object", "properties": { "sku": { "type": "string" } } }
                }
            }),
        ),
        (
            "recursive",
            json!({
                "$ref": "#/$defs/Node",
                "$defs": {
                    "Node": {
                        "type": "object",
                        "properties": {
                            "name": { "type": "string" },
                            "children": { "type": "array", "items": { "$ref": "#/$defs/Node" } }
                        }
                    }
                }
            }),
        ),
        (
            "choice",
            json!({
                "oneOf": [
                    { "title": "By card", "type": "object", "properties": { "card": { "type": "string" } }, "required": ["card"] },
                    { "title": "By transfer", "type": "object", "properties": { "iban": { "type": "string" } }, "required": ["iban"] }
                ]
            }),
        ),
        (
            "hostile",
            json!({
                "type": "object",
                "properties": {
                    "never": false,
                    "__proto__": { "type": "string" },
                    "either": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                    "self": { "$ref": "#" },
                    "both": { "type": ["string", "integer", "null"] },
                    "none": { "not": {} },
                    "tuple": { "type": "array", "prefixItems": [{ "type": "string" }], "items": false },
                    "deep": { "type": "object", "properties": { "a": { "type": "object", "properties": { "b": { "type": "object", "properties": { "c": { "const": "d" } } } } } } }
                },
                "required": ["never"]
            }),
        ),
    ]
}

/// Every schema renders: each item of the gallery shows a resume form (a
/// JSON editor where the generator cannot do better), the page stays live
/// (no reconnecting, nothing wiped), an enum behind `$ref` is a select, and
/// a form built from `$ref`s resumes its call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_schema_renders_and_no_item_breaks_the_page() {
    let _one = ONE_BROWSER.lock().await;
    let Some(browser) = Browser::start("tool-inbox-schemas-").await else {
        return;
    };
    let (client, dir) = (&browser.client, browser.path().to_path_buf());
    let tools: Vec<Tool> = schema_gallery()
        .into_iter()
        .map(|(name, schema)| {
            Tool::builder(name)
                .description("Asks with a form of its resume schema")
                .resume_schema(schema)
                .execute(|_input: Value, ctx: ToolContext<Value, Value>| async move {
                    match ctx.resume_data() {
                        None => ctx.suspend(json!({ "question": "?" })),
                        Some(data) => Ok::<_, ToolError>(data.clone()),
                    }
                })
                .build()
                .unwrap()
        })
        .collect();
    let pay = Tool::builder("pay")
        .description("Pays; its requester may not approve it")
        .require_approval(true)
        .execute(|_input: Value, _ctx| async move { Ok::<_, ToolError>(json!("paid")) })
        .build()
        .unwrap();
    let runtime = Runtime::builder()
        .tools(tools)
        .tool(pay)
        .forbid_self_approval(true)
        .sqlite_store(dir.join("calls.sqlite"))
        .build()
        .unwrap();
    // Asked for by the person signed in: they may decline it only.
    runtime
        .call(ToolCall::new("own", "pay", json!({})).with_requester("ops"))
        .await;
    // Text that hides what it says: a right-to-left override, a zero-width
    // space, a Cyrillic letter among Latin ones.
    runtime
        .call(
            ToolCall::new(
                "tricky",
                "pay",
                json!({ "to": "\u{202E}moc.live", "site": "pay\u{200B}pal.com", "name": "p\u{0430}ypal" }),
            )
            .with_requester("alice"),
        )
        .await;
    for (name, _) in schema_gallery() {
        let outcome = runtime
            .call(ToolCall::new(format!("s-{name}"), name, json!({})))
            .await;
        assert!(
            matches!(outcome, CallOutcome::Suspended { .. }),
            "{name}: {outcome:?}"
        );
    }
    let address = serve(&runtime).await;
    sign_in(client, address).await;
    // Every item opens with its form: none breaks the page.
    for (name, _) in schema_gallery() {
        let call_id = format!("s-{name}");
        open(client, &call_id).await;
        client
            .find(Locator::Css(&item(&call_id, ".resume-form button.resume")))
            .await
            .unwrap();
    }
    // The requester's own call: a decline, no approve.
    open(client, "own").await;
    open(client, "tricky").await;
    client
        .find(Locator::Css(&item("own", "button.decline")))
        .await
        .unwrap();
    for absent in ["button.approve", ".edit-form", ".respond-form"] {
        assert!(
            client
                .find_all(Locator::Css(&item("own", absent)))
                .await
                .unwrap()
                .is_empty(),
            "no {absent}: the requester may not take it"
        );
    }
    assert_accessible(client, "with every schema's form open").await;
    // Hidden characters are shown, with a warning.
    let marks = client
        .find_all(Locator::Css(&item("tricky", "pre.input .hidden-char")))
        .await
        .unwrap();
    let mut shown = Vec::new();
    for mark in marks {
        shown.push(mark.text().await.unwrap());
    }
    shown.sort();
    assert_eq!(shown, ["⟦U+200B⟧", "⟦U+202E⟧"]);
    let warning = text(client, &item("tricky", ".warning")).await;
    assert!(
        warning.contains("hidden characters") && warning.contains("Cyrillic"),
        "{warning}"
    );
    // Something typed stays: nothing reconnects and redraws the list.
    type_into(
        client,
        &item("s-any", ".resume-form textarea"),
        "{\"kept\": true}",
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(text(client, "#status").await, "Live");
    let kept = client
        .find(Locator::Css(&item("s-any", ".resume-form textarea")))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap();
    assert_eq!(kept.as_deref(), Some("{\"kept\": true}"));

    // The enum behind `$ref` is a select; the form resumes the call.
    let options = client
        .find_all(Locator::Css(&item(
            "s-typed",
            "select[name=carrier] option",
        )))
        .await
        .unwrap();
    let mut labels = Vec::new();
    for option in options {
        labels.push(option.text().await.unwrap());
    }
    assert_eq!(labels, ["post", "courier"]);
    click(
        client,
        &item("s-typed", "select[name=carrier] option:nth-child(2)"),
    )
    .await;
    click(client, &item("s-typed", "button.resume")).await;
    gone(client, &item("s-typed", "")).await;

    // A oneOf is a chooser: the second variant's field, then resumed with it.
    click(
        client,
        &item("s-choice", ".choice select option:nth-child(2)"),
    )
    .await;
    type_into(client, &item("s-choice", "input[name=iban]"), "DE89 3704").await;
    click(client, &item("s-choice", "button.resume")).await;
    gone(client, &item("s-choice", "")).await;
    client.clone().close().await.unwrap();
    let output = settled(runtime.inbox().stored("s-typed").await.unwrap());
    assert_eq!(output.output().unwrap()["carrier"], "courier", "{output:?}");
    let chosen = settled(runtime.inbox().stored("s-choice").await.unwrap());
    assert_eq!(chosen.output(), Some(&json!({ "iban": "DE89 3704" })));
}

/// How many rows the list shows.
async fn rows(client: &Client) -> usize {
    client
        .find_all(Locator::Css("#items > li"))
        .await
        .unwrap()
        .len()
}

/// Waits until the list shows `count` rows.
async fn rows_become(client: &Client, count: usize) {
    let started = Instant::now();
    loop {
        let shown = rows(client).await;
        if shown == count {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{shown} rows, not {count}, after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `css` shows `expected` (some of it).
async fn shows(client: &Client, css: &str, expected: &str) {
    let started = Instant::now();
    loop {
        let shown = match client.find(Locator::Css(css)).await {
            Ok(found) => found.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if shown.contains(expected) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{css} shows {shown:?}, not {expected:?}, after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the list's first row is `call_id`'s.
async fn first_row_becomes(client: &Client, call_id: &str) {
    let started = Instant::now();
    loop {
        let first = match client.find(Locator::Css("#items > li")).await {
            Ok(row) => row.attr("data-call-id").await.ok().flatten(),
            Err(_) => None,
        };
        if first.as_deref() == Some(call_id) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the first row is {first:?}, not {call_id}, after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A decision by another approver, in code (as their own page would take it).
async fn decided_elsewhere(runtime: &Runtime, call_id: &str, decision: tool_runtime::Decision) {
    let stored = runtime.inbox().stored(call_id).await.unwrap().unwrap();
    let decider = tool_runtime::Decider::new(Principal::new("bob"), stored.digest());
    runtime.decide_as(call_id, decision, decider).await.unwrap();
}

/// The list as an approver with many items lives in it: paged (a page,
/// then more), searched on the server, following what others decide (a
/// notice, a count of approvals), with batches and dismissals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_pages_searches_follows_others_and_decides_in_batches() {
    let _one = ONE_BROWSER.lock().await;
    let Some(browser) = Browser::start("tool-inbox-list-").await else {
        return;
    };
    let client = &browser.client;
    let runs = Arc::new(AtomicUsize::new(0));
    // Notes need two approvers, within the hour.
    let runtime = with_tools(
        Runtime::builder()
            .tool_approvals_required("note", 2)
            .tool_approval_ttl("note", Duration::from_secs(3600)),
        Arc::clone(&runs),
    )
    .sqlite_store(browser.path().join("calls.sqlite"))
    .build()
    .unwrap();
    for n in 0..120 {
        let call = ToolCall::new(format!("c{n:03}"), "transfer", json!({ "amount": n + 1 }))
            .with_requester(if n % 2 == 0 { "alice" } else { "bob" });
        runtime.call(call).await;
    }
    // The last in the list's order: loaded with the third page.
    runtime
        .call(ToolCall::new("n1", "note", json!({ "memo": "two of us" })))
        .await;
    let address = serve(&runtime).await;
    sign_in(client, address).await;
    shows(client, "#who", "Signed in as ops").await;
    rows_become(client, 50).await;
    // "Load more" by hand, then by scrolling to the list's end.
    click(client, "#more").await;
    let started = Instant::now();
    while rows(client).await < 100 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no second page"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client
        .execute("window.scrollTo(0, document.body.scrollHeight);", vec![])
        .await
        .unwrap();
    rows_become(client, 121).await;
    assert!(
        !client
            .find(Locator::Css("#more"))
            .await
            .unwrap()
            .is_displayed()
            .await
            .unwrap(),
        "all loaded"
    );
    // The note's approval counts down; another's approval counts.
    let left = text(client, &item("n1", ".expires")).await;
    assert!(left.starts_with("expires in 59m"), "a countdown: {left}");
    assert_eq!(text(client, &item("n1", ".count")).await, "0 of 2");
    decided_elsewhere(&runtime, "n1", tool_runtime::Decision::Approve).await;
    shows(client, &item("n1", ".count"), "1 of 2 (bob)").await;

    // Another approver declines c001: it goes, with a notice saying who.
    decided_elsewhere(&runtime, "c001", tool_runtime::Decision::Decline(None)).await;
    gone(client, &item("c001", "")).await;
    shows(client, "#notices", "c001) was declined by bob").await;

    // The server searches: ten of the 120 hold "c11".
    type_into(client, "#q", "c11").await;
    rows_become(client, 10).await;
    let first = client
        .find(Locator::Css("#items > li"))
        .await
        .unwrap()
        .attr("data-call-id")
        .await
        .unwrap();
    assert_eq!(first.as_deref(), Some("c110"));
    screenshot(client, "inbox-search.png").await;
    client
        .find(Locator::Css("#q"))
        .await
        .unwrap()
        .clear()
        .await
        .unwrap();
    type_into(client, "#q", &Key::Enter.to_string()).await;
    rows_become(client, 50).await;

    // Expiring soonest first: the note (within the hour) before every
    // transfer (no expiry); then back to the call ids' order.
    click(client, "#sort option[value=expiry]").await;
    first_row_becomes(client, "n1").await;
    click(client, "#sort option[value=id]").await;
    first_row_becomes(client, "c000").await;
    rows_become(client, 50).await;

    // A batch: c002 and c003 selected, approved, each on its own digest.
    click(client, &item("c002", "input.select")).await;
    click(client, &item("c003", "input.select")).await;
    shows(client, "#batch-count", "2 selected").await;
    screenshot(client, "inbox-batch.png").await;
    open(client, "c005").await;
    assert_accessible(client, "in the list with a selection and an open item").await;
    click(client, "#batch-approve").await;
    gone(client, &item("c002", "")).await;
    gone(client, &item("c003", "")).await;
    shows(client, "#status", "Approved 2 of 2").await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Dismissed: gone from this list, still waiting for others.
    open(client, "c004").await;
    click(client, &item("c004", "button.dismiss")).await;
    gone(client, &item("c004", "")).await;
    assert!(
        runtime
            .inbox()
            .stored("c004")
            .await
            .unwrap()
            .unwrap()
            .state
            .is_pending()
    );
    client.clone().close().await.unwrap();
}

/// A property test of the page's form generator, in the page: 2,000
/// schemas drawn from a seeded generator (every type, bounds, enums, consts,
/// `$ref`s that resolve, loop or point nowhere, `anyOf`/`oneOf`, boolean
/// schemas, arrays, maps, hostile property names, nesting) each build a
/// field without throwing, render a control or a JSON editor, read without
/// a runtime error (a value, nothing, or a validation message), and take
/// errors to show. A failing seed is reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_form_generator_renders_every_generated_schema() {
    let _one = ONE_BROWSER.lock().await;
    let Some(browser) = Browser::start("tool-inbox-forms-").await else {
        return;
    };
    let client = &browser.client;
    let runtime = runtime(
        &browser.path().join("calls.sqlite"),
        Arc::new(AtomicUsize::new(0)),
    );
    let address = serve(&runtime).await;
    sign_in(client, address).await;
    shows(client, "#status", "Live").await;
    let failures = client
        .execute(
            r#"
            // mulberry32: a seeded generator, so a failure names its seed.
            let seed = 20261207;
            const random = () => {
              seed = (seed + 0x6D2B79F5) | 0;
              let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
              t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
              return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
            };
            const pick = (list) => list[Math.floor(random() * list.length)];
            const names = ['a', 'b', '__proto__', 'constructor', 'toString', 'x y', '', '0', 'ü', '$ref'];
            const values = [null, 0, -1, 1.5, 'text', '', true, false, [], {}, [1, 'a'], { k: 'v' }];
            function schema(depth) {
              if (depth > 4) return pick([true, false, {}, { type: 'string' }]);
              switch (Math.floor(random() * 16)) {
                case 0: return pick([true, false, {}, null, 7, 'str', []]);
                case 1: return { type: pick(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array', 'nonsense']), minimum: pick([undefined, 0, -5]), maximum: pick([undefined, 10]), minLength: pick([undefined, 2]), maxLength: pick([undefined, 5, 500]), format: pick([undefined, 'email', 'textarea', 'date']) };
                case 2: return { type: [pick(['string', 'integer']), pick(['null', 'boolean', 'string'])] };
                case 3: return { enum: Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(values)) };
                case 4: return { const: pick(values) };
                case 5: return { $ref: pick(['#', '#/$defs/T', '#/$defs/missing', 'http://elsewhere/x', '#/properties/a', '#/%ZZ', '#/$defs/T/properties/__proto__']) , description: pick([undefined, 'a ref']) };
                case 6: case 7: {
                  const properties = {};
                  for (let i = 0; i < Math.floor(random() * 4); i += 1) Object.defineProperty(properties, pick(names), { value: schema(depth + 1), enumerable: true, configurable: true, writable: true });
                  return { type: pick(['object', undefined]), properties, required: pick([undefined, [], [pick(names)], 'not a list']) };
                }
                case 8: return { type: 'object', additionalProperties: schema(depth + 1) };
                case 9: return { type: 'array', items: pick([schema(depth + 1), [schema(depth + 1)], undefined, false]) };
                case 10: case 11: return { [pick(['anyOf', 'oneOf'])]: Array.from({ length: Math.floor(random() * 4) }, () => schema(depth + 1)) };
                case 12: return { anyOf: [schema(depth + 1), { type: 'null' }] };
                case 13: return { allOf: [schema(depth + 1)], not: schema(depth + 1) };
                case 14: return { title: pick(['T', '', '<b>x</b>']), description: pick(['d', '\u202Eevil']), ...schema(depth + 1) };
                default: return { type: 'object', properties: { a: { $ref: '#' } } };
              }
            }
            const failures = [];
            for (let n = 0; n < 2000; n += 1) {
              const started = seed;
              let root = schema(0);
              if (root && typeof root === 'object' && !Array.isArray(root) && random() < 0.5) root = { ...root, $defs: { T: schema(1) } };
              try {
                const field = schemaField(root, 'Value', [], random() < 0.5, random() < 0.3 ? pick(values) : undefined);
                if (!(field.node instanceof Element)) throw new Error('no node');
                const controls = field.node.matches('input, select, textarea') || field.node.querySelector('input, select, textarea, fieldset') !== null || field.node.tagName === 'FIELDSET';
                if (!controls) throw new Error('nothing to fill in');
                try { field.read(); } catch (error) { if (!(error instanceof Error) || error instanceof TypeError || error instanceof ReferenceError || error instanceof RangeError) throw error; }
                field.showErrors({ errors: ['bad'], fields: { a: { errors: ['worse'] }, __proto__: { errors: ['x'] } } });
                field.clearErrors();
              } catch (error) {
                failures.push({ seed: started, schema: JSON.stringify(root), error: String(error) });
                if (failures.length >= 5) break;
              }
            }
            return failures;
            "#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(failures, json!([]), "schemas the form generator broke on");
    client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_link_opens_a_confirmation_page_and_its_button_decides() {
    let _one = ONE_BROWSER.lock().await;
    let Some(browser) = Browser::start("tool-inbox-link-").await else {
        return;
    };
    let client = &browser.client;
    let runs = Arc::new(AtomicUsize::new(0));
    let builder = with_tools(Runtime::builder().notifications(true), Arc::clone(&runs));
    let runtime = builder.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let links =
        tool_inbox::DecisionLinks::new([9u8; 32], format!("http://{address}/inbox")).unwrap();
    let inbox = tool_inbox::Inbox::new(
        runtime.clone(),
        BearerTokens::new().token(TOKEN, Principal::new("ops")),
    )
    .decision_links(links.clone())
    .router();
    let app = axum::Router::new().nest("/inbox", inbox);
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    let call = ToolCall::new(
        "t1",
        "transfer",
        json!({ "amount": 1200, "memo": "refund for order 1182", "apiKey": "sk-live-secret" }),
    )
    .with_requester("support-agent");
    runtime.call(call).await;
    // As a sink makes it: the request's notification names the version.
    let outbox = runtime
        .inbox()
        .outbox(tool_runtime::store::OutboxQuery::all())
        .await
        .unwrap();
    let digest = tool_runtime::Digest::new(outbox[0].notification.data["digest"].as_str().unwrap());
    let link = links.link(
        "t1",
        &digest,
        &Principal::new("alice"),
        tool_inbox::LinkAction::Approve,
        Duration::from_secs(3600),
    );

    client.goto(&link).await.unwrap();
    let heading = client
        .wait()
        .for_element(Locator::Css("main.link h1"))
        .await
        .unwrap();
    assert_eq!(heading.text().await.unwrap(), "Approve this call?");
    let page = client.source().await.unwrap();
    assert!(
        page.contains("alice")
            && page.contains("\"amount\": 1200")
            && page.contains("support-agent"),
        "{page}"
    );
    assert!(
        !page.contains("sk-live-secret") && !page.contains("order 1182"),
        "values only as displayed (the key hidden, the memo shortened)"
    );
    assert_accessible(client, "on a decision link's confirmation page").await;
    screenshot(client, "notifications-link.png").await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "opening decides nothing");

    click(client, "main.link button[type=submit]").await;
    // The answer's page: the confirmation's own text is no `p.outcome`.
    let said = client
        .wait()
        .for_element(Locator::Css("main.link p.outcome"))
        .await
        .unwrap();
    assert!(
        said.text().await.unwrap().contains("completed"),
        "{}",
        client.source().await.unwrap()
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        settled(runtime.inbox().stored("t1").await.unwrap())
            .output()
            .is_some()
    );

    // The same link again, in the browser: used already.
    client.goto(&link).await.unwrap();
    let heading = client
        .wait()
        .for_element(Locator::Css("main.link h1"))
        .await
        .unwrap();
    assert_eq!(heading.text().await.unwrap(), "Decided already");
}
