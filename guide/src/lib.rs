//! The README and the guide pages in `docs/`, compiled and run as doctests:
//! every Rust block of them is a test of this package (`cargo test -p guide
//! --doc`), so a page cannot show code that no longer builds. Its test
//! `links` checks every relative link and `#anchor` of those pages. Nothing
//! here is published.

/// Includes a Markdown page as the docs of a doctest-only struct.
macro_rules! pages {
    ($($name:ident = $path:literal;)*) => {$(
        #[cfg(doctest)]
        #[doc = include_str!($path)]
        pub struct $name;
    )*};
}

pages! {
    Readme = "../../README.md";
    GuideIndex = "../../docs/README.md";
    Tools = "../../docs/tools.md";
    Context = "../../docs/context.md";
    Runtime = "../../docs/runtime.md";
    Approval = "../../docs/approval.md";
    Durability = "../../docs/durability.md";
    Production = "../../docs/production.md";
    Providers = "../../docs/providers.md";
    Mcp = "../../docs/mcp.md";
    McpAsking = "../../docs/mcp-asking.md";
    McpTasks = "../../docs/mcp-tasks.md";
    Agents = "../../docs/agents.md";
    Inbox = "../../docs/inbox.md";
    ScalingOut = "../../docs/scaling-out.md";
    Notifications = "../../docs/notifications.md";
    Testing = "../../docs/testing.md";
    Design = "../../docs/design.md";
}
