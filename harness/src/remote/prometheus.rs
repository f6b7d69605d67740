//! A small reader of the Prometheus text exposition format (what vLLM's
//! `/metrics` serves): `name{label="value",...} number [timestamp]` lines,
//! `#` comments skipped (OpenMetrics' `# EOF` too). Counters exported by
//! `prometheus_client` carry a `_total` suffix; [`Metrics::sum`] accepts the
//! name with or without it. An OpenMetrics exemplar after a sample
//! (`... 12.0 # {trace_id="a}b"} 1.0 1700000000`) is skipped: the label set
//! ends at the first `}` outside quotes, not at the line's last one.

use std::collections::BTreeMap;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name (with any `_total` suffix as written).
    pub name: String,
    /// Labels, in order.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
}

/// Every sample of one scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Samples in file order.
    pub samples: Vec<Sample>,
}

fn parse_labels(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(out);
        }
        let name: String = chars.by_ref().take_while(|&c| c != '=').collect();
        if chars.next() != Some('"') {
            return Err(format!("label `{}` has no quoted value", name.trim()));
        }
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('"') => break,
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(x) => value.push(x),
                    None => return Err("unterminated label value".into()),
                },
                Some(c) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        }
        out.push((name.trim().to_string(), value));
    }
}

/// The index of the `}` closing the label set opened at `open`: the first
/// one outside a quoted value.
fn label_end(line: &str, open: usize) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line[open..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(open + i),
            _ => {}
        }
    }
    None
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s
            .parse()
            .map_err(|_| format!("value {s:?} is not a number")),
    }
}

impl Metrics {
    /// Parses a scrape; a malformed line is an error naming its number.
    pub fn parse(text: &str) -> Result<Metrics, String> {
        let mut samples = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |m: String| format!("line {}: {m}", i + 1);
            let (name, labels, rest) = match line.find('{') {
                Some(open) => {
                    let close =
                        label_end(line, open).ok_or_else(|| err("`{` without `}`".into()))?;
                    (
                        &line[..open],
                        parse_labels(&line[open + 1..close]).map_err(err)?,
                        &line[close + 1..],
                    )
                }
                None => {
                    let sp = line
                        .find(char::is_whitespace)
                        .ok_or_else(|| err("a name without a value".into()))?;
                    (&line[..sp], Vec::new(), &line[sp..])
                }
            };
            let value = rest
                .split_whitespace()
                .next()
                .ok_or_else(|| err("no value".into()))?;
            samples.push(Sample {
                name: name.trim().to_string(),
                labels,
                value: parse_value(value).map_err(err)?,
            });
        }
        Ok(Metrics { samples })
    }

    fn matches(sample: &str, name: &str) -> bool {
        sample == name || sample.strip_suffix("_total") == Some(name)
    }

    /// Whether any sample of `name` (or `name_total`) exists.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| Metrics::matches(&s.name, name))
    }

    /// The sum of `name` (or `name_total`) over every label set (engines, models).
    pub fn sum(&self, name: &str) -> f64 {
        self.samples
            .iter()
            .filter(|s| Metrics::matches(&s.name, name))
            .map(|s| s.value)
            .sum()
    }

    /// The sums of `name` grouped by the value of label `label`.
    pub fn sum_by(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self
            .samples
            .iter()
            .filter(|s| Metrics::matches(&s.name, name))
        {
            if let Some((_, v)) = s.labels.iter().find(|(k, _)| k == label) {
                *out.entry(v.clone()).or_insert(0.0) += s.value;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = r#"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 12.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 3.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e9
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 1.0
weird{path="a\"b,c}"} +Inf 1700000000
plain 7
"#;

    #[test]
    fn counters_sum_over_engines_with_or_without_the_total_suffix() {
        let m = Metrics::parse(SCRAPE).unwrap();
        assert_eq!(m.sum("vllm:spec_decode_num_drafts"), 15.0);
        assert_eq!(m.sum("vllm:spec_decode_num_drafts_total"), 15.0);
        assert!(!m.has("vllm:spec_decode_num_draft_tokens"));
        assert_eq!(m.sum("plain"), 7.0);
        assert_eq!(m.sum("weird"), f64::INFINITY);
        assert_eq!(m.samples[6].labels[0].1, "a\"b,c}");
        let pos = m.sum_by("vllm:spec_decode_num_accepted_tokens_per_pos", "position");
        assert_eq!(pos, BTreeMap::from([("0".into(), 10.0), ("1".into(), 4.0)]));
    }

    /// vLLM serves OpenMetrics when asked; counters may carry exemplars
    /// whose labels hold braces.
    #[test]
    fn openmetrics_exemplars_and_eof_are_skipped() {
        let text = "# TYPE vllm:spec_decode_num_drafts counter\n\
vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 41.0 # {trace_id=\"ab}c\"} 1.0 1700000000.000\n\
vllm:spec_decode_num_drafts_created{engine=\"0\",model_name=\"m\"} 1.7e9\n\
vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m\"} 1.0\n\
# EOF\n";
        let m = Metrics::parse(text).unwrap();
        assert_eq!(m.sum("vllm:spec_decode_num_drafts"), 42.0);
        assert_eq!(
            m.samples[0].labels,
            vec![
                ("engine".into(), "0".into()),
                ("model_name".into(), "m".into())
            ]
        );
    }

    #[test]
    fn malformed_lines_name_their_number() {
        let e = Metrics::parse("ok 1\nbad{x=\"1\" 2\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = Metrics::parse("a nope\n").unwrap_err();
        assert!(e.contains("not a number"), "{e}");
    }
}
