//! A command's process group, killed whole when the command ends, overruns or is abandoned; and
//! its output kept within a cap.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::VecDeque;

/// Kills a process group when dropped (once): a call that is cancelled or times out leaves
/// nothing running.
pub(crate) struct GroupGuard(Option<Pid>);

impl GroupGuard {
    /// Guards the group led by the process `pid` (started with `process_group(0)`).
    pub(crate) fn new(pid: Option<u32>) -> Self {
        GroupGuard(pid.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw))
    }

    /// Kills every process of the group now.
    pub(crate) fn kill(&mut self) {
        if let Some(group) = self.0.take() {
            // Gone already is fine: nothing is left to stop.
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A command's output, capped: the first half of the cap and the last half are kept, and what
/// lies between is counted and replaced by a marker.
pub(crate) struct Capture {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    /// Keeps at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        Capture {
            cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Adds bytes read.
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_cap = self.cap / 2;
        let tail_cap = self.cap - head_cap;
        let room = head_cap.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        bytes = rest;
        if bytes.len() >= tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - tail_cap..]);
            return;
        }
        let over = (self.tail.len() + bytes.len()).saturating_sub(tail_cap);
        self.tail.drain(..over);
        self.tail.extend(bytes);
    }

    /// How many bytes were cut.
    pub(crate) fn cut(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The output as text, with a marker where bytes were cut.
    pub(crate) fn text(&self) -> String {
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        let mut head = &self.head[..];
        let mut tail = &tail[..];
        if self.cut() == 0 {
            let mut all = head.to_vec();
            all.extend_from_slice(tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Not half a character on either side of the marker.
        if let Err(e) = std::str::from_utf8(head)
            && e.error_len().is_none()
        {
            head = &head[..e.valid_up_to()];
        }
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        tail = &tail[skip..];
        let cut = self.total - (head.len() + tail.len()) as u64;
        format!(
            "{}\n[... {cut} bytes of output cut here (of {} in all; the output cap is {} bytes): send long output to a file and Read or Grep it ...]\n{}",
            String::from_utf8_lossy(head),
            self.total,
            self.cap,
            String::from_utf8_lossy(tail)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut c = Capture::new(10);
        c.push(b"hello");
        c.push(b"world");
        assert_eq!(c.text(), "helloworld");
        assert_eq!(c.cut(), 0);
    }

    #[test]
    fn keeps_head_and_tail_over_the_cap() {
        let mut c = Capture::new(10);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrst", b"uvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.cut(), 16);
        let text = c.text();
        assert!(
            text.starts_with("abcde\n[... 16 bytes of output cut"),
            "{text}"
        );
        assert!(text.ends_with("vwxyz"), "{text}");
    }

    #[test]
    fn cuts_between_characters() {
        let mut c = Capture::new(6);
        c.push("ééééé".as_bytes());
        let text = c.text();
        assert!(text.starts_with("é\n[... 6 bytes"), "{text}");
        assert!(text.ends_with("\né"), "{text}");
        assert!(!text.contains('\u{FFFD}'), "{text}");
    }
}
