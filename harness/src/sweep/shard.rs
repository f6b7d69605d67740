//! `--shard i/n`: a deterministic slice of the grid.
//!
//! The unit of sharding is the baseline group (one model pair x prompt set x
//! batch size x temperature x repeat, with its baseline row and every draft
//! config, in each span mode): group `g` of the grid's run order belongs to shard
//! `g mod n`. A row's baseline is therefore always in the same shard, so
//! speedup and lossless are computed within the shard exactly as in an
//! unsharded run, and `specula merge` only has to concatenate.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0-based index; `0/1` is the whole grid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// 0-based shard index.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// The whole grid.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Whether baseline group `group` belongs to this shard.
    pub fn owns(&self, group: usize) -> bool {
        group % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {s:?}: expected i/n with 0 <= i < n, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_groups() {
        let shards: Vec<Shard> = (0..4).map(|i| format!("{i}/4").parse().unwrap()).collect();
        for g in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.owns(g)).count(), 1);
        }
        assert!("4/4".parse::<Shard>().is_err());
        assert!("1".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
    }
}
