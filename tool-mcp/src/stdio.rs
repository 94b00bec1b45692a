//! The stdio transport's framing: newline-delimited JSON-RPC between a
//! client's reader and writer and the server, relayed a line at a time so
//! that a [`LineHook`] can rewrite lines on their way (the 2025-11-25 edge
//! does, `compat_2025`); and the process's stdin and stdout as the client's
//! ends ([`standard_streams`]).
//!
//! A line from the client is checked first, as the HTTP transport checks a
//! body (`crate::inbound`): a line over the size limit is skipped up to its
//! newline without being buffered, text that is not JSON and messages that
//! are not JSON-RPC are answered here with their JSON-RPC error, and the
//! next line is served.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::io::{BufReader, DuplexStream, ReadBuf};
use tokio::task::JoinHandle;

use crate::inbound::{self, Refusal};

/// The buffer between the relay and the server.
const LINE_BUFFER: usize = 1 << 16;

/// Rewrites lines on their way between the client and the server; `None`
/// lets a line pass as it came. Each line, `\n` included, is one message
/// (or batch).
pub(crate) trait LineHook: Send + Sync + 'static {
    /// A line from the client, before the server reads it.
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>>;
    /// A line from the server, before the client reads it.
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>>;
}

/// Relays lines between the client's `reader` / `writer` and the returned
/// stream, the server's end, through `hook`, in a task of its own; the task
/// runs until both directions close.
pub(crate) fn relay<R, W>(
    reader: R,
    writer: W,
    max_message: usize,
    hook: impl LineHook,
) -> (DuplexStream, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_end, relay_end) = tokio::io::duplex(LINE_BUFFER);
    let task = tokio::spawn(lines(reader, writer, relay_end, max_message, hook));
    (server_end, task)
}

async fn lines<R, W>(
    reader: R,
    writer: W,
    server: DuplexStream,
    max_message: usize,
    hook: impl LineHook,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (from_server, mut to_server) = tokio::io::split(server);
    let hook = &hook;
    // Both directions write whole lines to the client: the server's, and
    // this edge's answers to lines the server never sees.
    let writer = &tokio::sync::Mutex::new(writer);
    let inward = async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            let refusal = match read_line_within(&mut reader, &mut line, max_message).await {
                Ok(LineRead::End) | Err(_) => break,
                Ok(LineRead::TooLong) => Some(Refusal::too_large(max_message)),
                Ok(LineRead::Line) if line.trim_ascii().is_empty() => continue,
                Ok(LineRead::Line) => match serde_json::from_slice::<Value>(&line) {
                    Err(error) => Some(Refusal::parse_error(&error)),
                    Ok(message) => inbound::check(&message),
                },
            };
            if let Some(refusal) = refusal {
                let answer = format!("{}\n", refusal.to_json());
                if send(writer, answer.as_bytes()).await.is_err() {
                    break;
                }
                continue;
            }
            let rewritten = hook.inbound(&line);
            let out = rewritten.as_deref().unwrap_or(&line);
            if to_server.write_all(out).await.is_err() {
                break;
            }
        }
        // The client closed its end: so does the server's.
        let _ = to_server.shutdown().await;
    };
    let outward = async move {
        let mut reader = BufReader::new(from_server);
        let mut line = Vec::new();
        while next_line(&mut reader, &mut line).await {
            let rewritten = hook.outbound(&line);
            let out = rewritten.as_deref().unwrap_or(&line);
            if send(writer, out).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(inward, outward);
}

/// Writes one whole line to the client.
async fn send<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(line).await?;
    writer.flush().await
}

/// What [`read_line_within`] read.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A line within the limit (its `\n` included, unless the input ended).
    Line,
    /// A line over the limit, read up to its newline and dropped.
    TooLong,
    /// The end of the input.
    End,
}

/// Reads the next line into `line` (cleared first), keeping at most
/// `max` bytes of it (and its newline): a longer line is read to its end
/// without being kept, so memory stays bounded whatever the client sends.
async fn read_line_within<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => LineRead::TooLong,
                (false, true) => LineRead::End,
                (false, false) => LineRead::Line,
            });
        }
        let newline = available.iter().position(|&byte| byte == b'\n');
        let piece = &available[..newline.map_or(available.len(), |at| at + 1)];
        let length = piece.len();
        // The newline does not count against the limit.
        let content = length - usize::from(newline.is_some());
        if !too_long && line.len() + content > max {
            too_long = true;
            line.clear();
            line.shrink_to(max.min(LINE_BUFFER));
        }
        if !too_long {
            line.extend_from_slice(piece);
        }
        reader.consume(length);
        if newline.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// Reads the next line into `line` (cleared first); false at the end of
/// the input or on a read error.
async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R, line: &mut Vec<u8>) -> bool {
    line.clear();
    matches!(reader.read_until(b'\n', line).await, Ok(read) if read > 0)
}

/// The process's stdin and stdout as the relay's client ends, on the IO
/// reactor where that leaves the process's own descriptors as they are:
/// two FIFOs (how a shell or `std::process` starts a child) through rmcp's
/// `stdio_pipes`, which reopens them; two sockets (how Node.js starts a
/// child) read and written with `MSG_DONTWAIT`. Anything else gets tokio's
/// blocking stdio, which hands every read, write and flush to a thread of
/// the blocking pool and waits for it.
pub(crate) fn standard_streams() -> (StdinReader, StdoutWriter) {
    #[cfg(unix)]
    if let (Some(stdin), Some(stdout)) = (
        socket::Socket::new(&std::io::stdin(), tokio::io::Interest::READABLE),
        socket::Socket::new(&std::io::stdout(), tokio::io::Interest::WRITABLE),
    ) {
        return (StdinReader::Socket(stdin), StdoutWriter::Socket(stdout));
    }
    let (reader, writer) = rmcp::transport::stdio_pipes();
    (StdinReader::Stdio(reader), StdoutWriter::Stdio(writer))
}

/// Stdin as the relay reads it ([`standard_streams`]).
pub(crate) enum StdinReader {
    Stdio(rmcp::transport::StdioReader),
    #[cfg(unix)]
    Socket(socket::Socket),
}

impl AsyncRead for StdinReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdinReader::Stdio(stdin) => Pin::new(stdin).poll_read(cx, buf),
            #[cfg(unix)]
            StdinReader::Socket(stdin) => stdin.poll_read(cx, buf),
        }
    }
}

/// Stdout as the relay writes it ([`standard_streams`]).
pub(crate) enum StdoutWriter {
    Stdio(rmcp::transport::StdioWriter),
    #[cfg(unix)]
    Socket(socket::Socket),
}

impl AsyncWrite for StdoutWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            StdoutWriter::Stdio(stdout) => Pin::new(stdout).poll_write(cx, buf),
            #[cfg(unix)]
            StdoutWriter::Socket(stdout) => stdout.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdoutWriter::Stdio(stdout) => Pin::new(stdout).poll_flush(cx),
            // A socket holds no buffer of ours.
            #[cfg(unix)]
            StdoutWriter::Socket(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            StdoutWriter::Stdio(stdout) => Pin::new(stdout).poll_shutdown(cx),
            #[cfg(unix)]
            StdoutWriter::Socket(_) => Poll::Ready(Ok(())),
        }
    }
}

#[cfg(unix)]
mod socket {
    use std::io;
    use std::os::fd::{AsFd, AsRawFd as _, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use std::task::{Context, Poll, ready};

    use nix::sys::socket::{MsgFlags, recv, send};
    use tokio::io::unix::AsyncFd;
    use tokio::io::{Interest, ReadBuf};

    /// `fd` on the reactor. tokio deprecates the safe registration because
    /// an arbitrary `AsRawFd` may change or close its descriptor while
    /// registered; an `OwnedFd` owned by the registration cannot.
    #[allow(
        deprecated,
        reason = "sound for an OwnedFd; the unsafe replacement is forbidden here"
    )]
    fn register(fd: OwnedFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
        AsyncFd::with_interest(fd, interest)
    }

    /// A standard stream that is a socket, on the IO reactor. Each read and
    /// write is non-blocking by its flags (`MSG_DONTWAIT`), not by the
    /// descriptor's: the process's own stdin and stdout, which share the
    /// descriptor's open file description with any child that inherits
    /// them, stay blocking.
    pub(crate) struct Socket(AsyncFd<OwnedFd>);

    impl Socket {
        /// `stream` on the reactor, for `interest`, if it is a socket.
        pub(crate) fn new(stream: &impl AsFd, interest: Interest) -> Option<Socket> {
            let fd = stream.as_fd().try_clone_to_owned().ok()?;
            let metadata = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?;
            if !metadata.file_type().is_socket() {
                return None;
            }
            register(fd, interest).ok().map(Socket)
        }

        pub(crate) fn poll_read(
            &mut self,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            loop {
                let mut ready = ready!(self.0.poll_read_ready(cx))?;
                let unfilled = buf.initialize_unfilled();
                let read = ready.try_io(|fd| {
                    recv(fd.as_raw_fd(), unfilled, MsgFlags::MSG_DONTWAIT).map_err(io::Error::from)
                });
                if let Ok(read) = read {
                    buf.advance(read?);
                    return Poll::Ready(Ok(()));
                }
            }
        }

        pub(crate) fn poll_write(
            &mut self,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            loop {
                let mut ready = ready!(self.0.poll_write_ready(cx))?;
                let flags = MsgFlags::MSG_DONTWAIT;
                if let Ok(written) =
                    ready.try_io(|fd| send(fd.as_raw_fd(), buf, flags).map_err(io::Error::from))
                {
                    return Poll::Ready(written);
                }
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::{BufRead as _, BufReader as StdBufReader, Write as _};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    use tokio::io::Interest;

    use super::*;

    struct Unchanged;

    impl LineHook for Unchanged {
        fn inbound(&self, _: &[u8]) -> Option<Vec<u8>> {
            None
        }
        fn outbound(&self, _: &[u8]) -> Option<Vec<u8>> {
            None
        }
    }

    /// A client on a socket pair (as Node.js starts a child) and a server
    /// that echoes lines: a line larger than the socket's buffers passes
    /// both ways whole, and the client closing its end ends the relay.
    #[tokio::test]
    async fn socket_ends_carry_lines_both_ways_and_end_with_the_client() {
        let (client, ends) = UnixStream::pair().unwrap();
        let dev_null = std::fs::File::open("/dev/null").unwrap();
        assert!(socket::Socket::new(&dev_null, Interest::READABLE).is_none());
        let reader = socket::Socket::new(&ends, Interest::READABLE).expect("a socket");
        let writer = socket::Socket::new(&ends, Interest::WRITABLE).expect("a socket");
        let (server_end, relay_task) = relay(
            StdinReader::Socket(reader),
            StdoutWriter::Socket(writer),
            4 << 20,
            Unchanged,
        );
        let echo = tokio::spawn(async move {
            let (from_client, mut to_client) = tokio::io::split(server_end);
            let mut from_client = BufReader::new(from_client);
            let mut line = Vec::new();
            while next_line(&mut from_client, &mut line).await {
                to_client.write_all(&line).await.unwrap();
            }
        });
        // Lines are JSON-RPC messages: the relay answers anything else itself.
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"pad\",\"params\":{{\"x\":\"{}\"}}}}\n",
            "x".repeat(1 << 20)
        );
        let client = tokio::task::spawn_blocking(move || {
            let mut lines = StdBufReader::new(client.try_clone().unwrap());
            let mut writer = &client;
            for sent in ["{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n", big.as_str()] {
                writer.write_all(sent.as_bytes()).unwrap();
                let mut echoed = String::new();
                lines.read_line(&mut echoed).unwrap();
                assert_eq!(echoed, sent);
            }
            client.shutdown(std::net::Shutdown::Write).unwrap();
        });
        let ended = async {
            client.await.unwrap();
            echo.await.unwrap();
            relay_task.await.unwrap();
        };
        tokio::time::timeout(Duration::from_secs(10), ended)
            .await
            .expect("the relay ends once the client closed its end");
    }

    /// Yields `total` bytes of `x` (no newline), then `tail`, in reads of
    /// at most 64 KiB, without holding them.
    struct Flood {
        left: usize,
        tail: &'static [u8],
    }

    impl AsyncRead for Flood {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if self.left > 0 {
                let n = self.left.min(buf.remaining()).min(1 << 16);
                buf.put_slice(&vec![b'x'; n]);
                self.left -= n;
            } else {
                let n = self.tail.len().min(buf.remaining());
                buf.put_slice(&self.tail[..n]);
                self.tail = &self.tail[n..];
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_64_mib_line_without_a_newline_is_skipped_with_bounded_memory_and_the_next_line_is_read()
     {
        let max = 4 << 20;
        let mut reader = BufReader::new(Flood {
            left: 64 << 20,
            tail: b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
        });
        let mut line = Vec::new();
        let first = read_line_within(&mut reader, &mut line, max).await.unwrap();
        assert_eq!(first, LineRead::TooLong);
        assert!(
            line.capacity() <= max + (1 << 16),
            "the line kept {} bytes of a 64 MiB line with a 4 MiB limit",
            line.capacity()
        );
        let next = read_line_within(&mut reader, &mut line, max).await.unwrap();
        assert_eq!(next, LineRead::Line);
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
        );
        let end = read_line_within(&mut reader, &mut line, max).await.unwrap();
        assert_eq!(end, LineRead::End);
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_read_and_one_byte_more_is_not() {
        for (content, expected) in [(8, LineRead::Line), (9, LineRead::TooLong)] {
            let text = format!("{}\n", "x".repeat(content));
            let mut reader = BufReader::with_capacity(3, text.as_bytes());
            let mut line = Vec::new();
            let read = read_line_within(&mut reader, &mut line, 8).await.unwrap();
            assert_eq!(read, expected, "{content} bytes");
            assert_eq!(
                read_line_within(&mut reader, &mut line, 8).await.unwrap(),
                LineRead::End
            );
        }
    }
}
