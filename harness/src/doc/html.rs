//! A self-contained HTML page: inline CSS and inline SVG figures, no
//! scripts and no external resources, so it opens anywhere offline.

use super::{Block, Document, Render};

/// The HTML format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

/// `s` with HTML's special characters escaped.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td:first-child{white-space:nowrap}
tr:nth-child(even) td{background:#fafafa}
figure{margin:1.5em 0}
figure svg{max-width:100%;height:auto}
figcaption{font-weight:bold;margin-bottom:0.3em}
details{margin:1em 0}
summary{cursor:pointer}";

fn block(b: &Block, out: &mut String) {
    match b {
        Block::Heading(level, t) => {
            let l = (*level).clamp(2, 4);
            out.push_str(&format!("<h{l}>{}</h{l}>\n", escape(t)));
        }
        Block::Paragraph(t) => out.push_str(&format!("<p>{}</p>\n", escape(t))),
        Block::List(items) => {
            out.push_str("<ul>\n");
            for i in items {
                out.push_str(&format!("<li>{}</li>\n", escape(i)));
            }
            out.push_str("</ul>\n");
        }
        Block::Table(t) => {
            out.push_str("<table>\n<thead><tr>");
            for h in &t.header {
                out.push_str(&format!("<th>{}</th>", escape(h)));
            }
            out.push_str("</tr></thead>\n<tbody>\n");
            for r in &t.rows {
                out.push_str("<tr>");
                for c in r {
                    out.push_str(&format!("<td>{}</td>", escape(c)));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</tbody></table>\n");
        }
        Block::Figure(f) => {
            out.push_str(&format!(
                "<figure><figcaption>{}</figcaption>\n{}\n</figure>\n",
                escape(&f.title),
                f.svg.find("<svg").map_or(f.svg.as_str(), |i| &f.svg[i..])
            ));
        }
        Block::Details(summary, blocks) => {
            out.push_str(&format!(
                "<details><summary>{}</summary>\n",
                escape(summary)
            ));
            for b in blocks {
                block(b, out);
            }
            out.push_str("</details>\n");
        }
    }
}

impl Render for Html {
    fn extension(&self) -> &'static str {
        "html"
    }

    fn render(&self, doc: &Document) -> String {
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            escape(&doc.title),
            escape(&doc.title)
        );
        for b in &doc.blocks {
            block(b, &mut out);
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Table;

    #[test]
    fn text_is_escaped_and_nothing_external_is_referenced() {
        let mut d = Document::new("a <b> & c");
        let mut t = Table::new(&["x"]);
        t.push(vec!["<script>".into()]);
        d.push(Block::Table(t));
        let html = Html.render(&d);
        assert!(html.contains("a &lt;b&gt; &amp; c"));
        assert!(!html.contains("<script>"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
