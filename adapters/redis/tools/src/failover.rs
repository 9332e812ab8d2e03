//! The failover stress's shared log and what is read from it: double grants, token
//! inversions, leases lost, waiters stranded, refused calls, and how long grants paused
//! around each failover.
//!
//! Each worker process appends one line per event (`O_APPEND`, one `write` per line):
//! - `enter <name> <token> <grant_us> <owner>`: granted; `grant_us` is the server's time of
//!   the grant (its deadline minus the ttl, both on the server's clock);
//! - `exit <name> <token> <end_us> <owner>`: the holder stops using the lease; `end_us` is
//!   the earlier of the worker's clock and the last deadline the server confirmed (on one
//!   host the worker's clock is the servers' clock);
//! - `lost <name> <token> <owner>`: a renewal answered `Expired`, or the release `false`,
//!   while the holder still believed it held the lease;
//! - `stranded <name> <owner>`: a bounded `acquire` ended without a grant;
//! - `refused <what> <owner>`: a call answered `Unavailable`.

use std::collections::BTreeMap;
use std::fmt;

/// One lease as the log tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The fencing token.
    pub token: u64,
    /// The server's time of the grant, µs since the Unix epoch.
    pub grant_us: u64,
    /// When its holder stopped using it (µs; `u64::MAX` if it never said).
    pub end_us: u64,
}

/// What a run's log holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Leases granted.
    pub grants: usize,
    /// Pairs of leases on one name whose intervals (grant to end, on the servers' clock)
    /// overlap.
    pub double_grants: usize,
    /// Leases on a name granted later than another but with a smaller or equal token.
    pub inversions: usize,
    /// Leases found gone while their holder believed them held.
    pub lost: usize,
    /// Bounded waits that ended without a grant.
    pub stranded: usize,
    /// Calls that answered `Unavailable`.
    pub refused: usize,
    /// Every grant's server time, sorted (for the pauses around failovers).
    pub grant_times: Vec<u64>,
    /// The double grants: (name, the earlier lease, the later one).
    pub doubles: Vec<(String, Lease, Lease)>,
}

impl Figures {
    /// Reads a log; a line it cannot read is an error naming it.
    pub fn read(log: &str) -> Result<Figures, String> {
        let mut figures = Figures::default();
        // Per name: token -> lease.
        let mut leases: BTreeMap<&str, BTreeMap<u64, Lease>> = BTreeMap::new();
        for line in log.lines().filter(|l| !l.is_empty()) {
            let parts: Vec<&str> = line.split(' ').collect();
            let number = |i: usize| -> Result<u64, String> {
                parts
                    .get(i)
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(|| format!("bad line {line:?}"))
            };
            match parts.first().copied() {
                Some("enter") if parts.len() == 5 => {
                    let (token, grant_us) = (number(2)?, number(3)?);
                    let lease = Lease {
                        token,
                        grant_us,
                        end_us: u64::MAX,
                    };
                    let name = leases.entry(parts[1]).or_default();
                    if name.insert(token, lease).is_some() {
                        return Err(format!("token {token} granted twice: {line:?}"));
                    }
                    figures.grants += 1;
                }
                Some("exit") if parts.len() == 5 => {
                    let (token, end_us) = (number(2)?, number(3)?);
                    let lease = leases
                        .get_mut(parts[1])
                        .and_then(|name| name.get_mut(&token))
                        .ok_or_else(|| format!("exit without its enter: {line:?}"))?;
                    lease.end_us = end_us;
                }
                Some("lost") if parts.len() == 4 => figures.lost += 1,
                Some("stranded") if parts.len() == 3 => figures.stranded += 1,
                Some("refused") if parts.len() == 3 => figures.refused += 1,
                _ => return Err(format!("bad line {line:?}")),
            }
        }
        for (name, leases) in &leases {
            let mut by_grant: Vec<Lease> = leases.values().copied().collect();
            by_grant.sort_by_key(|l| (l.grant_us, l.token));
            let doubles = overlaps(&by_grant);
            figures.double_grants += doubles.len();
            figures.doubles.extend(
                doubles
                    .into_iter()
                    .map(|(earlier, later)| ((*name).to_owned(), earlier, later)),
            );
            figures.inversions += by_grant
                .windows(2)
                .filter(|w| w[1].token <= w[0].token)
                .count();
            figures
                .grant_times
                .extend(by_grant.iter().map(|l| l.grant_us));
        }
        figures.grant_times.sort_unstable();
        Ok(figures)
    }

    /// The longest pause between two grants (any name) that ends after `at_us` and starts
    /// before `until_us`: how long after a failover at `at_us` grants resumed. `None` when no
    /// grant came after `at_us`.
    pub fn pause_after(&self, at_us: u64, until_us: u64) -> Option<u64> {
        let times = &self.grant_times;
        let first_after = times.partition_point(|t| *t <= at_us);
        if first_after == times.len() {
            return None;
        }
        let start = first_after.saturating_sub(1);
        times[start..]
            .windows(2)
            .take_while(|w| w[0] < until_us)
            .map(|w| w[1] - w[0])
            .max()
            .or_else(|| times.get(first_after).map(|t| t - at_us))
    }
}

/// Pairs of leases (sorted by grant time) whose `[grant_us, end_us)` intervals overlap.
fn overlaps(by_grant: &[Lease]) -> Vec<(Lease, Lease)> {
    let mut pairs = Vec::new();
    for (i, later) in by_grant.iter().enumerate() {
        pairs.extend(
            by_grant[..i]
                .iter()
                .filter(|earlier| earlier.end_us > later.grant_us)
                .map(|earlier| (*earlier, *later)),
        );
    }
    pairs
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} grants, {} double grants, {} token inversions, {} leases lost, {} waiters \
             stranded, {} calls refused",
            self.grants,
            self.double_grants,
            self.inversions,
            self.lost,
            self.stranded,
            self.refused
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_log_has_no_double_grant_and_no_inversion() {
        let log = "enter a 100 100 p0\nexit a 100 150 p0\nenter a 160 160 p1\n\
                   exit a 160 170 p1\nenter b 165 165 p2\nexit b 165 400 p2\n\
                   stranded a p3\nrefused renew p1\n";
        let f = Figures::read(log).unwrap();
        assert_eq!((f.grants, f.double_grants, f.inversions), (3, 0, 0));
        assert_eq!((f.stranded, f.refused, f.lost), (1, 1, 0));
        assert_eq!(f.grant_times, [100, 160, 165]);
    }

    #[test]
    fn overlapping_leases_and_smaller_later_tokens_are_counted() {
        // b: the second lease starts before the first ended, with a smaller token.
        let log = "enter b 500 100 p0\nenter b 400 120 p1\nexit b 400 130 p1\n\
                   exit b 500 200 p0\nlost b 500 p0\n\
                   enter c 900 300 p2\n";
        let f = Figures::read(log).unwrap();
        assert_eq!((f.double_grants, f.inversions, f.lost), (1, 1, 1));
        let (name, earlier, later) = &f.doubles[0];
        assert_eq!((name.as_str(), earlier.token, later.token), ("b", 500, 400));
        // A lease never exited counts as held to the end of the run.
        let log = "enter c 900 300 p2\nenter c 950 400 p3\nexit c 950 410 p3\n";
        assert_eq!(Figures::read(log).unwrap().double_grants, 1);
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(Figures::read("enter a x 1 p\n").is_err());
        assert!(Figures::read("exit a 1 2 p\n").is_err());
        assert!(Figures::read("enter a 1 2 p\nenter a 1 3 q\n").is_err());
        assert!(Figures::read("hello\n").is_err());
    }

    #[test]
    fn pauses_after_a_failover_are_the_longest_gap() {
        let f = Figures {
            grant_times: vec![10, 20, 30, 1030, 1040, 5000],
            ..Figures::default()
        };
        assert_eq!(f.pause_after(35, 1035), Some(1000));
        assert_eq!(f.pause_after(1035, 1500), Some(3960));
        assert_eq!(f.pause_after(6000, 7000), None);
    }
}
