//! Faults written as text, for the command line: `status:429:1500ms`, `cut-after:Lis`, ...

use crate::Fault;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A fault spec that could not be read; its message says what was wrong and lists the forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseFaultError(String);

impl fmt::Display for ParseFaultError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; a fault is one of: pass, status:CODE[:RETRY_AFTER], slow:DURATION, cut-after:TEXT, stall, stall-after:TEXT, garbage:BYTES, reset, reset-after:TEXT (a duration is `250ms`, `2s` or milliseconds)",
            self.0
        )
    }
}

impl std::error::Error for ParseFaultError {}

/// Reads the forms [`Fault`]'s `Display` writes:
///
/// ```
/// use agentry_faultproxy::Fault;
/// use std::time::Duration;
/// assert_eq!("status:503".parse(), Ok(Fault::status(503)));
/// assert_eq!("status:429:1s".parse(), Ok(Fault::rate_limited(Duration::from_secs(1))));
/// assert_eq!("slow:250ms".parse(), Ok(Fault::SlowFirstByte(Duration::from_millis(250))));
/// assert_eq!("cut-after:\"arguments\"".parse(), Ok(Fault::cut_after("\"arguments\"")));
/// assert_eq!("garbage:64".parse(), Ok(Fault::Garbage(64)));
/// assert!("explode".parse::<Fault>().is_err());
/// ```
impl FromStr for Fault {
    type Err = ParseFaultError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (name, rest) = match spec.split_once(':') {
            Some((name, rest)) => (name, Some(rest)),
            None => (spec, None),
        };
        let bad = |why: &str| ParseFaultError(format!("`{spec}`: {why}"));
        let marker = |rest: Option<&str>| match rest {
            Some(text) if !text.is_empty() => Ok(text.as_bytes().to_vec()),
            _ => Err(bad("the marker text is missing")),
        };
        let fault = match name {
            "pass" => Fault::Pass,
            "stall" => Fault::Stall,
            "reset" => Fault::Reset,
            "status" => {
                let rest = rest.ok_or_else(|| bad("the status code is missing"))?;
                let (code, wait) = match rest.split_once(':') {
                    Some((code, wait)) => (code, Some(wait)),
                    None => (rest, None),
                };
                let code: u16 = code
                    .parse()
                    .ok()
                    .filter(|c| (100..=999).contains(c))
                    .ok_or_else(|| bad("the status code is not a number from 100 to 999"))?;
                let retry_after = wait.map(duration).transpose().map_err(|e| bad(&e))?;
                Fault::Status { code, retry_after }
            }
            "slow" => Fault::SlowFirstByte(
                duration(rest.ok_or_else(|| bad("the duration is missing"))?)
                    .map_err(|e| bad(&e))?,
            ),
            "garbage" => Fault::Garbage(
                rest.and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
                    .ok_or_else(|| bad("the byte count is missing or not a positive number"))?,
            ),
            "cut-after" => Fault::CutAfter(marker(rest)?),
            "stall-after" => Fault::StallAfter(marker(rest)?),
            "reset-after" => Fault::ResetAfter(marker(rest)?),
            _ => return Err(bad("unknown fault")),
        };
        if rest.is_some() && matches!(fault, Fault::Pass | Fault::Stall | Fault::Reset) {
            return Err(bad("this fault takes no argument"));
        }
        Ok(fault)
    }
}

/// `250ms`, `2s`, `1.5s` or a number of milliseconds.
fn duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration");
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().map(Duration::from_millis).map_err(|_| bad());
    }
    if let Some(secs) = text.strip_suffix('s') {
        let secs: f64 = secs.parse().map_err(|_| bad())?;
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    text.parse().map(Duration::from_millis).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fault_reads_back_what_it_displays() {
        for fault in [
            Fault::Pass,
            Fault::status(500),
            Fault::rate_limited(Duration::from_millis(1500)),
            Fault::SlowFirstByte(Duration::from_millis(300)),
            Fault::cut_after("\"arguments\":\"{"),
            Fault::Stall,
            Fault::stall_after("data:"),
            Fault::Garbage(17),
            Fault::Reset,
            Fault::reset_after("x:y"),
        ] {
            assert_eq!(fault.to_string().parse(), Ok(fault.clone()), "{fault}");
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (spec, says) in [
            ("status", "status code is missing"),
            ("status:99", "100 to 999"),
            ("status:500:soon", "`soon` is not a duration"),
            ("slow", "duration is missing"),
            ("garbage:0", "positive number"),
            ("cut-after:", "marker text is missing"),
            ("stall:1s", "takes no argument"),
            ("boom", "unknown fault"),
        ] {
            let error = spec.parse::<Fault>().unwrap_err().to_string();
            assert!(
                error.contains(says) && error.contains("one of"),
                "{spec}: {error}"
            );
        }
    }
}
