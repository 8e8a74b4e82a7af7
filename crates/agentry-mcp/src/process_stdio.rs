//! This process's stdin and stdout as asynchronous I/O that reads and writes on the runtime's
//! own threads, for serving MCP on stdio.
//!
//! `tokio::io::stdin()` and `stdout()` work on any file, and pay for it: every read and every
//! write is handed to a thread of the blocking pool and back, two thread wake-ups per message
//! each way. When stdin and stdout are pipes or sockets, which is how MCP clients start their
//! servers, they can be polled by the runtime like any other pipe or socket instead: no hand-off.
//! Anything else (a terminal, a file) falls back to tokio's.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// This process's stdin, for [`process_stdio`].
#[derive(Debug)]
pub struct StdinReader {
    inner: Reader,
    _restore: Option<Blocking>,
}

/// This process's stdout, for [`process_stdio`].
#[derive(Debug)]
pub struct StdoutWriter {
    inner: Writer,
    _restore: Option<Blocking>,
}

#[derive(Debug)]
enum Reader {
    Pipe(pipe::Receiver),
    Socket(UnixStream),
    Other(tokio::io::Stdin),
}

#[derive(Debug)]
enum Writer {
    Pipe(pipe::Sender),
    Socket(UnixStream),
    Other(tokio::io::Stdout),
}

/// This process's stdin and stdout, polled by the runtime when they are pipes or sockets (they
/// are switched to non-blocking mode until both halves are dropped), and tokio's `stdin()` and
/// `stdout()` otherwise. An rmcp transport as a pair: `service.serve(process_stdio())`.
///
/// While they live, write nothing to stdout by other means (`println!` could find the pipe full
/// and fail): on an MCP server's stdout, anything but protocol messages is a fault anyway.
///
/// # Panics
///
/// When called outside a tokio runtime with I/O enabled.
pub fn process_stdio() -> (StdinReader, StdoutWriter) {
    let (reader, restore_in) = match io::stdin().as_fd().try_clone_to_owned().and_then(reader) {
        Ok((reader, restore)) => (reader, Some(restore)),
        Err(_) => (Reader::Other(tokio::io::stdin()), None),
    };
    let (writer, restore_out) = match io::stdout().as_fd().try_clone_to_owned().and_then(writer) {
        Ok((writer, restore)) => (writer, Some(restore)),
        Err(_) => (Writer::Other(tokio::io::stdout()), None),
    };
    (
        StdinReader {
            inner: reader,
            _restore: restore_in,
        },
        StdoutWriter {
            inner: writer,
            _restore: restore_out,
        },
    )
}

/// What kind of file `fd` is.
fn kind(fd: &OwnedFd) -> io::Result<std::fs::FileType> {
    Ok(std::fs::File::from(fd.try_clone()?).metadata()?.file_type())
}

fn reader(fd: OwnedFd) -> io::Result<(Reader, Blocking)> {
    let kind = kind(&fd)?;
    let restore = Blocking::remember(&fd)?;
    let reader = if kind.is_fifo() {
        Reader::Pipe(pipe::Receiver::from_owned_fd(fd)?)
    } else if kind.is_socket() {
        Reader::Socket(socket(fd)?)
    } else {
        return Err(io::ErrorKind::Unsupported.into());
    };
    Ok((reader, restore))
}

fn writer(fd: OwnedFd) -> io::Result<(Writer, Blocking)> {
    let kind = kind(&fd)?;
    let restore = Blocking::remember(&fd)?;
    let writer = if kind.is_fifo() {
        Writer::Pipe(pipe::Sender::from_owned_fd(fd)?)
    } else if kind.is_socket() {
        Writer::Socket(socket(fd)?)
    } else {
        return Err(io::ErrorKind::Unsupported.into());
    };
    Ok((writer, restore))
}

fn socket(fd: OwnedFd) -> io::Result<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    UnixStream::from_std(stream)
}

/// Puts a file back in blocking mode when dropped, if it was in blocking mode when remembered
/// (the mode belongs to the open file, which this process shares with whoever started it).
#[derive(Debug)]
struct Blocking(Option<OwnedFd>);

impl Blocking {
    fn remember(fd: &OwnedFd) -> io::Result<Blocking> {
        let flags =
            nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL).map_err(io::Error::from)?;
        let was_blocking =
            !nix::fcntl::OFlag::from_bits_truncate(flags).contains(nix::fcntl::OFlag::O_NONBLOCK);
        Ok(Blocking(was_blocking.then(|| fd.try_clone()).transpose()?))
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        if let Some(fd) = &self.0
            && let Ok(flags) = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFL)
        {
            let blocking =
                nix::fcntl::OFlag::from_bits_truncate(flags) - nix::fcntl::OFlag::O_NONBLOCK;
            let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFL(blocking));
        }
    }
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Reader::Pipe(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Socket(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Other(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().inner {
            Writer::Pipe(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Socket(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Other(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Writer::Pipe(w) => Pin::new(w).poll_flush(cx),
            Writer::Socket(w) => Pin::new(w).poll_flush(cx),
            Writer::Other(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().inner {
            Writer::Pipe(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Socket(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Other(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
