//! A small document model shared by `report`, `compare` and `gate`:
//! headings, paragraphs, tables and figures, written out by one
//! [`Render`] per format ([`html::Html`], [`markdown::Markdown`]).

pub mod html;
pub mod markdown;

/// One figure: an inline SVG (for HTML) and the PNG file beside the document (for Markdown).
#[derive(Debug, Clone)]
pub struct Figure {
    /// Caption.
    pub title: String,
    /// The SVG text.
    pub svg: String,
    /// Path of the PNG, relative to the document.
    pub png: String,
}

/// A table of text cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows (each as wide as the header).
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names and no rows.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }
}

/// A piece of a document.
#[derive(Debug, Clone)]
pub enum Block {
    /// A heading of level 2 or 3.
    Heading(u8, String),
    /// A paragraph of plain text.
    Paragraph(String),
    /// A bulleted list.
    List(Vec<String>),
    /// A table.
    Table(Table),
    /// A figure.
    Figure(Figure),
    /// Blocks folded away under a summary line.
    Details(String, Vec<Block>),
}

/// A titled sequence of blocks.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The title (level-1 heading).
    pub title: String,
    /// The content.
    pub blocks: Vec<Block>,
}

impl Document {
    /// An empty document.
    pub fn new(title: impl Into<String>) -> Document {
        Document {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    /// Appends a heading.
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        self.blocks.push(Block::Heading(level, text.into()));
    }

    /// Appends a paragraph.
    pub fn para(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    /// Appends any block.
    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }
}

/// One output format of a [`Document`].
pub trait Render {
    /// The file extension (`html`, `md`).
    fn extension(&self) -> &'static str;
    /// The whole document as text.
    fn render(&self, doc: &Document) -> String;
}
