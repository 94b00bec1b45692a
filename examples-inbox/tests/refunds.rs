//! The refunds example, run as a test: its own assertions (the standing
//! rule's approval, two of finance, the edit that lowers the amount, each
//! refund written once to the app's ledger) hold.

#[path = "../examples/refunds.rs"]
mod refunds;

#[test]
fn the_refunds_example_runs_as_its_comments_say() {
    refunds::main().expect("the example ran");
}
