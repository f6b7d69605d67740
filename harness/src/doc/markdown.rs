//! Markdown (GitHub flavour): tables, PNG figures by relative path, and
//! folded sections as `<details>`, fit for a CI job page.

use super::{Block, Document, Render};

/// The Markdown format.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markdown;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn block(b: &Block, out: &mut String) {
    match b {
        Block::Heading(level, t) => out.push_str(&format!(
            "{} {t}\n\n",
            "#".repeat((*level).clamp(2, 4) as usize)
        )),
        Block::Paragraph(t) => out.push_str(&format!("{t}\n\n")),
        Block::List(items) => {
            for i in items {
                out.push_str(&format!("- {i}\n"));
            }
            out.push('\n');
        }
        Block::Table(t) => {
            let row = |cells: &[String]| {
                format!(
                    "| {} |\n",
                    cells
                        .iter()
                        .map(|c| cell(c))
                        .collect::<Vec<_>>()
                        .join(" | ")
                )
            };
            out.push_str(&row(&t.header));
            out.push_str(&format!("|{}\n", " --- |".repeat(t.header.len())));
            for r in &t.rows {
                out.push_str(&row(r));
            }
            out.push('\n');
        }
        Block::Figure(f) => out.push_str(&format!("![{}]({})\n\n", f.title, f.png)),
        Block::Details(summary, blocks) => {
            out.push_str(&format!("<details><summary>{summary}</summary>\n\n"));
            for b in blocks {
                block(b, out);
            }
            out.push_str("</details>\n\n");
        }
    }
}

impl Render for Markdown {
    fn extension(&self) -> &'static str {
        "md"
    }

    fn render(&self, doc: &Document) -> String {
        let mut out = format!("# {}\n\n", doc.title);
        for b in &doc.blocks {
            block(b, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Table;

    #[test]
    fn tables_escape_pipes() {
        let mut d = Document::new("t");
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["x|y".into(), "z".into()]);
        d.push(Block::Table(t));
        let md = Markdown.render(&d);
        assert!(md.contains("| a | b |\n| --- | --- |\n| x\\|y | z |"));
    }
}
