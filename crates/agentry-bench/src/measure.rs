//! Process measurements: CPU time, resident set size and its peak.

use std::time::Duration;

/// User plus system CPU time of this process.
pub(crate) fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct we pass and reads nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn status_kib(field: &str) -> u64 {
    process_status_kib("self", field)
}

/// A field of `/proc/<pid>/status`, KiB (0 when it cannot be read).
pub(crate) fn process_status_kib(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Current resident set size, KiB.
pub(crate) fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// Peak resident set size since the last [`reset_peak`], KiB.
pub(crate) fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// Resets the kernel's peak-RSS mark to the current RSS (Linux `clear_refs` 5).
pub(crate) fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
