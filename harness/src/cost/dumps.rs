//! Reading callgrind's dump files back: each `Client Request` dump with a
//! [`super::recorder`] label is one segment (`prefill`, `draft`, `verify`,
//! `gap`, `tail`) of one step of one call of one row, with its instruction
//! count (`totals:`, the `Ir` event).

use super::recorder::LABEL_TAG;
use super::CostError;
use std::path::Path;

/// One dump: what ran since the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The row key.
    pub row: String,
    /// The `generate` call's number in the probe.
    pub call: usize,
    /// The step: 0 the prefill, 1.. the decode steps.
    pub step: usize,
    /// `prefill`, `draft`, `verify`, `gap` or `tail`.
    pub kind: String,
    /// Instructions executed (callgrind's `Ir`).
    pub instructions: u64,
}

/// The segment of one dump file's text, `None` for a dump this probe did not label.
pub fn parse(text: &str, path: &Path) -> Result<Option<Segment>, CostError> {
    let bad = |what: &str| CostError::Probe(format!("{}: {what}", path.display()));
    let Some(label) = text
        .lines()
        .find_map(|l| l.strip_prefix("desc: Trigger: Client Request: "))
    else {
        return Ok(None);
    };
    let parts: Vec<&str> = label.trim().split('|').collect();
    let [tag, row, call, step, kind] = parts[..] else {
        return Ok(None);
    };
    if tag != LABEL_TAG {
        return Ok(None);
    }
    let number = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| bad("a label's number is not one"))
    };
    let instructions = text
        .lines()
        .rev()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .ok_or_else(|| bad("no `totals:` line"))?
        .split_whitespace()
        .next()
        .unwrap_or("0")
        .parse::<u64>()
        .map_err(|_| bad("`totals:` is not a count"))?;
    Ok(Some(Segment {
        row: row.to_string(),
        call: number(call)?,
        step: number(step)?,
        kind: kind.to_string(),
        instructions,
    }))
}

/// Every labelled segment of the dumps `out_file.1`, `out_file.2`, ... in dump order.
pub fn read_all(out_file: &Path) -> Result<Vec<Segment>, CostError> {
    let dir = out_file.parent().unwrap_or(Path::new("."));
    let stem = out_file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let mut numbered: Vec<(u64, std::path::PathBuf)> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| CostError::io(dir, e))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = name
            .strip_prefix(&stem)
            .and_then(|r| r.strip_prefix('.'))
            .and_then(|n| n.parse::<u64>().ok())
        {
            numbered.push((n, e.path()));
        }
    }
    numbered.sort();
    let mut out = Vec::new();
    for (_, p) in numbered {
        let text = std::fs::read_to_string(&p).map_err(|e| CostError::io(&p, e))?;
        out.extend(parse(&text, &p)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_labelled_dump_is_a_segment_and_others_are_skipped() {
        let text = "version: 1\ncreator: callgrind-3.19.0\ndesc: Trigger: Client Request: specula|m.base.b1.builtin.t0.r0|3|2|verify\nevents: Ir\nsummary: 1656\n\nfn=(1) f\n0 1656\n\ntotals: 1656\n";
        let s = parse(text, Path::new("cg.out.7")).unwrap().unwrap();
        assert_eq!(
            (
                s.row.as_str(),
                s.call,
                s.step,
                s.kind.as_str(),
                s.instructions
            ),
            ("m.base.b1.builtin.t0.r0", 3, 2, "verify", 1656)
        );
        let end = "desc: Trigger: Program termination\nsummary: 10\ntotals: 10\n";
        assert_eq!(parse(end, Path::new("cg.out")).unwrap(), None);
        let no_totals = "desc: Trigger: Client Request: specula|r|0|0|gap\n";
        assert!(parse(no_totals, Path::new("x")).is_err());
    }
}
