//! Every relative link of README.md and docs/*.md points at a file that
//! exists, and every `#anchor` at a heading of its page, slugged as GitHub
//! slugs headings. No network: links with a scheme (`https:`) are not
//! followed.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The repository's root (this package is `guide/`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("guide/ has a parent")
        .to_path_buf()
}

/// README.md and every docs/*.md, sorted.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("a readable docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A line opens or closes a fenced code block (``` or ~~~, indented or not).
fn is_fence(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("```") || line.starts_with("~~~")
}

/// The line without its inline code spans (`` `...` ``), which hold no links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The link targets of a Markdown text with their 1-based line numbers:
/// inline links and images (`[text](target)`, `![alt](target)`) and
/// reference definitions (`[label]: target`), outside code.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (index, line) in markdown.lines().enumerate() {
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(open) = rest.find("](") {
            let after = &rest[open + 2..];
            let mut depth = 0usize;
            let end = after
                .char_indices()
                .find(|&(_, c)| match c {
                    '(' => {
                        depth += 1;
                        false
                    }
                    ')' if depth == 0 => true,
                    ')' => {
                        depth -= 1;
                        false
                    }
                    _ => false,
                })
                .map_or(after.len(), |(i, _)| i);
            let inside = &after[..end];
            // `<...>` may hold spaces; otherwise a space starts the title.
            let target = match inside.strip_prefix('<').and_then(|t| t.split_once('>')) {
                Some((target, _)) => target,
                None => inside.split_whitespace().next().unwrap_or(""),
            };
            found.push((index + 1, target.to_string()));
            rest = &after[end..];
        }
        let trimmed = line.trim_start();
        if let Some(label_end) = trimmed.strip_prefix('[').and_then(|t| t.find("]: ")) {
            let target = trimmed[label_end + 4..].split_whitespace().next();
            found.push((index + 1, target.unwrap_or("").to_string()));
        }
    }
    found
}

/// GitHub's anchor for a heading's text: the rendered text (code spans'
/// backticks, emphasis markers and link targets dropped) lowercased, every
/// character but letters, digits, `-`, `_` and spaces removed, each space
/// a `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // [text](target) renders as text.
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|i| close + i) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .flat_map(char::to_lowercase)
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's ATX headings, outside code; a repeated
/// slug gets `-1`, `-2`, ... as on GitHub.
fn anchors(markdown: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if fenced || !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim_end();
        let base = slug(text);
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.push(if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    anchors
}

/// Whether a target names a scheme (`https:`, `mailto:`): not checked.
fn is_external(target: &str) -> bool {
    let scheme: String = target
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
        .collect();
    !scheme.is_empty()
        && target[scheme.len()..].starts_with(':')
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// The broken links of one page, each as `page:line: target: why`.
fn broken_links(page: &Path, shown_as: &str) -> Vec<String> {
    let markdown = fs::read_to_string(page).expect("a readable page");
    let dir = page.parent().expect("a page has a folder");
    let mut broken = Vec::new();
    for (line, target) in links(&markdown) {
        if is_external(&target) {
            continue;
        }
        let fail = |why: &str| format!("{shown_as}:{line}: {target}: {why}");
        if target.is_empty() {
            broken.push(fail("empty link"));
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            page.to_path_buf()
        } else {
            dir.join(path)
        };
        if !file.exists() {
            broken.push(fail(&format!("no file {}", file.display())));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if file.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        let text = fs::read_to_string(&file).expect("a readable linked page");
        let known = anchors(&text);
        if !known.iter().any(|known| known == anchor) {
            broken.push(fail(&format!(
                "no heading with the anchor #{anchor} in {}",
                file.display()
            )));
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = root();
    let mut broken = Vec::new();
    for page in pages(&root) {
        let shown_as = page
            .strip_prefix(&root)
            .unwrap_or(&page)
            .display()
            .to_string();
        broken.extend(broken_links(&page, &shown_as));
    }
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_guide_page_is_a_doctest_of_this_package() {
    let root = root();
    let lib = fs::read_to_string(root.join("guide/src/lib.rs")).expect("guide/src/lib.rs");
    for page in pages(&root) {
        let path = page.strip_prefix(&root).expect("a page under the root");
        let included = format!("\"../../{}\"", path.display());
        assert!(
            lib.contains(&included),
            "guide/src/lib.rs does not include {}: its Rust blocks would go untested",
            path.display()
        );
    }
}

#[test]
fn the_guide_index_links_every_page() {
    let root = root();
    let index = fs::read_to_string(root.join("docs/README.md")).expect("docs/README.md");
    let linked: Vec<String> = links(&index)
        .into_iter()
        .map(|(_, target)| target)
        .collect();
    for page in pages(&root).iter().skip(1) {
        let name = page
            .file_name()
            .expect("a page has a name")
            .to_string_lossy();
        if name == "README.md" {
            continue;
        }
        assert!(
            linked
                .iter()
                .any(|target| target.split('#').next() == Some(&*name)),
            "docs/README.md does not link docs/{name}: nobody would find it"
        );
    }
}

#[test]
fn slugs_follow_github() {
    assert_eq!(
        slug("Agents (crate `tool-agent`)"),
        "agents-crate-tool-agent"
    );
    assert_eq!(slug("Remote tools: `McpClient`"), "remote-tools-mcpclient");
    assert_eq!(
        slug("Using the tools with async-openai (`tool-runtime` feature `async-openai`)"),
        "using-the-tools-with-async-openai-tool-runtime-feature-async-openai"
    );
    assert_eq!(
        slug("What's `on_output`? A [link](x.md)"),
        "whats-on_output-a-link"
    );
    assert_eq!(slug("Français: été"), "français-été");
    let text = "# Title\n\n## Setup\n\n```sh\n# not a heading\n```\n\n## Setup\n";
    assert_eq!(anchors(text), ["title", "setup", "setup-1"]);
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "See [a](a.md#x) and ![img](i.png \"title\").\n\
                `[not](code.md)` [b](<b c.md>)\n\
                ```rust\n[not](fenced.md)\n```\n\
                [ref]: r.md\n\
                [web](https://example.com/(x))\n";
    let targets: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        targets,
        [
            "a.md#x",
            "i.png",
            "b c.md",
            "r.md",
            "https://example.com/(x)"
        ]
    );
    assert!(is_external("https://example.com"));
    assert!(is_external("mailto:a@b.c"));
    assert!(!is_external("docs/a.md#b:c"));
    assert!(!is_external("#anchor"));
}

#[test]
fn a_broken_link_is_named_with_its_page_and_line() {
    // Removed when `tmp` drops, also when the test fails.
    let tmp = tempfile::Builder::new()
        .prefix("guide-links-")
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    fs::write(dir.join("other.md"), "# Other\n\n## Part two\n").unwrap();
    let page = dir.join("page.md");
    fs::write(
        &page,
        "# Page\n\n[ok](other.md#part-two) [self](#page)\n[gone](missing.md)\n\
         [bad anchor](other.md#part-three) [bad self](#nowhere)\n",
    )
    .unwrap();
    let broken = broken_links(&page, "page.md");
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].starts_with("page.md:4: missing.md: no file"));
    assert!(
        broken[1]
            .starts_with("page.md:5: other.md#part-three: no heading with the anchor #part-three")
    );
    assert!(broken[2].starts_with("page.md:5: #nowhere: no heading"));
}
