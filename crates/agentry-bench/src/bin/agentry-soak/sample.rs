//! The resident memory and open file descriptors of the worker that is never killed, sampled
//! over the soak, and whether they stayed flat.

use std::fmt;
use std::time::Duration;

/// One sample: when, resident kB, open descriptors.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at: Duration,
    rss_kb: u64,
    fds: u64,
}

/// The samples of the steady worker.
#[derive(Default)]
pub(crate) struct Samples(Vec<Sample>);

impl Samples {
    /// Samples process `pid` (Linux `/proc`; nothing elsewhere).
    pub(crate) fn take(&mut self, pid: u32, at: Duration) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rss_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok());
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count() as u64);
        if let (Some(rss_kb), Ok(fds)) = (rss_kb, fds) {
            self.0.push(Sample { at, rss_kb, fds });
        }
    }

    /// Compares the last third of the samples with the middle third (the first is warm-up).
    pub(crate) fn verdict(&self) -> Verdict {
        let n = self.0.len();
        if n < 9 {
            return Verdict::TooFew(n);
        }
        let mid = &self.0[n / 3..2 * n / 3];
        let last = &self.0[2 * n / 3..];
        let median = |s: &[Sample], f: fn(&Sample) -> u64| {
            let mut v: Vec<u64> = s.iter().map(f).collect();
            v.sort_unstable();
            v[v.len() / 2]
        };
        Verdict::Measured {
            samples: n,
            span: self.0[n - 1].at,
            rss_mid_kb: median(mid, |s| s.rss_kb),
            rss_last_kb: median(last, |s| s.rss_kb),
            rss_peak_kb: self.0.iter().map(|s| s.rss_kb).max().unwrap_or(0),
            fds_mid: median(mid, |s| s.fds),
            fds_last: median(last, |s| s.fds),
            fds_peak: self.0.iter().map(|s| s.fds).max().unwrap_or(0),
        }
    }
}

/// Whether the steady worker's memory and descriptors stayed flat.
pub(crate) enum Verdict {
    TooFew(usize),
    Measured {
        samples: usize,
        span: Duration,
        rss_mid_kb: u64,
        rss_last_kb: u64,
        rss_peak_kb: u64,
        fds_mid: u64,
        fds_last: u64,
        fds_peak: u64,
    },
}

impl Verdict {
    /// Flat: the last third's median RSS within 25% (and 16 MiB) of the middle third's, and
    /// its open descriptors within 16 of it.
    pub(crate) fn ok(&self) -> bool {
        match *self {
            Verdict::TooFew(_) => false,
            Verdict::Measured {
                rss_mid_kb,
                rss_last_kb,
                fds_mid,
                fds_last,
                ..
            } => {
                let grown = rss_last_kb.saturating_sub(rss_mid_kb);
                (grown * 4 <= rss_mid_kb || grown <= 16 << 10) && fds_last <= fds_mid + 16
            }
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = if self.ok() {
            "flat"
        } else {
            "FAILED: not flat"
        };
        match *self {
            Verdict::TooFew(n) => write!(f, "FAILED: only {n} samples of the steady worker"),
            Verdict::Measured {
                samples,
                span,
                rss_mid_kb,
                rss_last_kb,
                rss_peak_kb,
                fds_mid,
                fds_last,
                fds_peak,
            } => write!(
                f,
                "steady worker over {:.0} s ({samples} samples): RSS median {:.1} MiB in the middle third, {:.1} MiB in the last, peak {:.1} MiB; open fds {fds_mid} then {fds_last}, peak {fds_peak}: {word}",
                span.as_secs_f64(),
                rss_mid_kb as f64 / 1024.0,
                rss_last_kb as f64 / 1024.0,
                rss_peak_kb as f64 / 1024.0,
            ),
        }
    }
}
