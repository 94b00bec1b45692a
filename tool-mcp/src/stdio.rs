//! The stdio transport's framing: newline-delimited JSON-RPC between a
//! client's reader and writer and the server, relayed a line at a time so
//! that a [`LineHook`] can rewrite lines on their way (the 2025-11-25 edge
//! does, `compat_2025`).

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::io::{BufReader, DuplexStream};
use tokio::task::JoinHandle;

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
    hook: impl LineHook,
) -> (DuplexStream, JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (server_end, relay_end) = tokio::io::duplex(LINE_BUFFER);
    let task = tokio::spawn(lines(reader, writer, relay_end, hook));
    (server_end, task)
}

async fn lines<R, W>(reader: R, mut writer: W, server: DuplexStream, hook: impl LineHook)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (from_server, mut to_server) = tokio::io::split(server);
    let hook = &hook;
    let inward = async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        while next_line(&mut reader, &mut line).await {
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
            if writer.write_all(out).await.is_err() || writer.flush().await.is_err() {
                break;
            }
        }
    };
    tokio::join!(inward, outward);
}

/// Reads the next line into `line` (cleared first); false at the end of
/// the input or on a read error.
async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R, line: &mut Vec<u8>) -> bool {
    line.clear();
    matches!(reader.read_until(b'\n', line).await, Ok(read) if read > 0)
}
