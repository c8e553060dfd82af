//! Readable output: aligned tables and content blocks as text. Exact JSON (`--json`) is
//! printed by the commands themselves.

use vellum::protocol::{ContentBlock, ResourceContents};

/// Prints rows as aligned columns under a header; the last column is not padded.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) {
    let n = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, cell) in r.iter().enumerate().take(n) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 < n {
                out.push_str(&format!("{c:<w$}  ", w = widths[i]));
            } else {
                out.push_str(c);
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
}

/// The first line of a description, shortened for a table cell.
pub(crate) fn short(text: Option<&str>) -> String {
    let first = text.unwrap_or("").lines().next().unwrap_or("").trim();
    let mut out: String = first.chars().take(70).collect();
    if out.chars().count() < first.chars().count() {
        out.push('…');
    }
    out
}

/// A resource's contents as text (binary summarised).
pub(crate) fn resource_text(r: &ResourceContents) -> String {
    match r {
        ResourceContents::Text(t) => t.text.clone(),
        ResourceContents::Blob(b) => format!(
            "[binary {}: {} bytes of base64]",
            b.mime_type.as_deref().unwrap_or("data"),
            b.blob.len()
        ),
    }
}

/// A content block as text: text as is, other kinds summarised on one line.
pub(crate) fn content_text(c: &ContentBlock) -> String {
    match c {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => {
            format!("[image {}: {} bytes of base64]", i.mime_type, i.data.len())
        }
        ContentBlock::Audio(a) => {
            format!("[audio {}: {} bytes of base64]", a.mime_type, a.data.len())
        }
        ContentBlock::ResourceLink(l) => format!("[resource link {} ({})]", l.uri, l.name),
        ContentBlock::Resource(e) => resource_text(&e.resource),
    }
}
