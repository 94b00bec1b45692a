//! Load on an MCP server over stdio: our `McpServer` against a plain rmcp
//! `#[tool_router]` server, both serving the same weather tool, both built
//! here (one binary, so one build of every dependency). Ours validates the
//! input and the output against their schemas; the plain one deserializes
//! with serde.
//!
//!     cargo run --release -p examples-mcp --example mcp_load -- bench [--calls N] [--rounds R] [--stdio pipe|socket]
//!         every round runs both servers (alternating which goes first) at 1
//!         and at 32 calls in flight; prints calls/s, p50 and p99 per run and
//!         the medians.
//!     cargo run --release -p examples-mcp --example mcp_load -- drive [--calls N] [--in-flight K] [--stdio pipe|socket] -- <server command...>
//!         one run against any stdio server (e.g. under valgrind).
//!     mcp_load serve-ours | serve-rmcp
//!         the servers themselves.
//!
//!     cargo run --release -p examples-mcp --example mcp_load -- start-up [--rounds R] [--stdio pipe|socket] -- <server A...> [-- <server B...>]...
//!         each server started R times, interleaved (alternating which goes
//!         first): the time from spawn to the answer to `initialize`, and
//!         the server's peak resident set and page faults at that moment
//!         (Linux: `/proc/<pid>/status` and `stat`); medians, and each
//!         against the first server.
//!
//! `--stdio socket` connects the server's stdin and stdout to Unix sockets,
//! as Node.js starts a child (its `child_process`, and so the TypeScript
//! SDK's stdio client); the default, two pipes, is how a shell,
//! `std::process` or Python's asyncio does.
//!
//! Instructions per call (callgrind counts the server's instructions; the
//! count at 0 calls is the start-up and handshake):
//!     BIN=target/release/examples/mcp_load
//!     for server in ours rmcp; do for n in 0 10000; do
//!       $BIN drive --calls $n -- valgrind --tool=callgrind --callgrind-out-file=/dev/null $BIN serve-$server 2>&1 | grep Collected
//!     done; done

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tool_mcp::McpServer;
use tool_runtime::Runtime;

// The weather tool the benches compare call paths with, shared by path.
#[path = "../../tool-core/benches/weather/mod.rs"]
mod weather;

use weather::{Weather, WeatherInput, WeatherTool};

/// The same tool on rmcp's own router.
#[derive(Clone)]
struct PlainServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl PlainServer {
    #[tool(
        name = "weather-tool",
        description = "Get the current weather for a location"
    )]
    async fn weather(
        &self,
        Parameters(input): Parameters<WeatherInput>,
    ) -> Result<Json<Weather>, String> {
        weather::weather(input)
            .await
            .map(Json)
            .map_err(|error| error.to_string())
    }
}

// The router built once, in a field: `#[tool_handler]`'s default,
// `Self::tool_router()`, builds it again for every request (30,000
// instructions a call).
#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlainServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// One run's figures.
#[derive(Clone, Copy)]
struct Run {
    calls_per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// How the driver connects to the server's stdin and stdout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StdioKind {
    /// Two pipes (FIFOs), as a shell or `std::process` gives a child.
    Pipe,
    /// A Unix socket pair for both, as Node.js gives a child it starts
    /// with piped stdio.
    #[cfg(unix)]
    Socket,
}

type ServerReader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type ServerWriter = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// Starts `command` with its stdin and stdout connected as `stdio` says;
/// the ends the driver reads and writes.
fn start(
    command: &[String],
    stdio: StdioKind,
) -> Result<(tokio::process::Child, ServerReader, ServerWriter), String> {
    let (program, args) = command.split_first().ok_or("no server command")?;
    let mut server = tokio::process::Command::new(program);
    server.args(args).stderr(Stdio::inherit());
    let cannot_start = |error| format!("cannot start {program}: {error}");
    match stdio {
        StdioKind::Pipe => {
            server.stdin(Stdio::piped()).stdout(Stdio::piped());
            let mut child = server.spawn().map_err(cannot_start)?;
            let stdin = child.stdin.take().ok_or("no stdin")?;
            let stdout = child.stdout.take().ok_or("no stdout")?;
            Ok((child, Box::new(stdout), Box::new(stdin)))
        }
        #[cfg(unix)]
        StdioKind::Socket => {
            let pair = || -> std::io::Result<_> {
                let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
                let theirs_out = theirs.try_clone()?;
                ours.set_nonblocking(true)?;
                Ok((ours, theirs, theirs_out))
            };
            let (ours, theirs, theirs_out) =
                pair().map_err(|error| format!("socket pair: {error}"))?;
            server
                .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
                .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)));
            let child = server.spawn().map_err(cannot_start)?;
            let ours = tokio::net::UnixStream::from_std(ours)
                .map_err(|error| format!("socket pair: {error}"))?;
            // Dropping the write half shuts the socket down for writing:
            // the server reads the end of its stdin.
            let (read, write) = ours.into_split();
            Ok((child, Box::new(read), Box::new(write)))
        }
    }
}

/// Starts `command` as a stdio MCP server, initializes, makes `calls`
/// tools/call requests with `in_flight` outstanding, and waits for the
/// server to exit once its stdin closes.
async fn drive(
    command: &[String],
    calls: usize,
    in_flight: usize,
    stdio: StdioKind,
) -> Result<Run, String> {
    let (mut child, stdout, mut stdin) = start(command, stdio)?;
    let mut lines = BufReader::new(stdout).lines();
    let mut send = async |message: Value| -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|error| format!("write: {error}"))
    };

    send(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "mcp_load", "version": "0.1.0" } }
    }))
    .await?;
    read_response(&mut lines).await?;
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await?;

    let request = |id: usize| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "weather-tool", "arguments": { "location": format!("city {id}") } }
        })
    };
    let mut sent_at = Vec::with_capacity(calls);
    let mut latencies = Vec::with_capacity(calls);
    let started = Instant::now();
    while sent_at.len() < calls.min(in_flight) {
        sent_at.push(Instant::now());
        send(request(sent_at.len() - 1)).await?;
    }
    while latencies.len() < calls {
        let response = read_response(&mut lines).await?;
        if response.get("error").is_some() || response["result"]["isError"] == true {
            return Err(format!("the call failed: {response}"));
        }
        let id = response["id"]
            .as_u64()
            .and_then(|id| usize::try_from(id).ok())
            .filter(|id| *id < sent_at.len())
            .ok_or_else(|| format!("a response to no call: {response}"))?;
        latencies.push(sent_at[id].elapsed());
        if sent_at.len() < calls {
            sent_at.push(Instant::now());
            send(request(sent_at.len() - 1)).await?;
        }
    }
    let elapsed = started.elapsed();
    drop(stdin);
    child
        .wait()
        .await
        .map_err(|error| format!("wait: {error}"))?;
    latencies.sort_unstable();
    let percentile = |p: usize| {
        latencies
            .get((latencies.len() * p / 100).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Ok(Run {
        calls_per_second: calls as f64 / elapsed.as_secs_f64(),
        p50: percentile(50),
        p99: percentile(99),
    })
}

/// What one start of a server cost, at the moment it answered `initialize`.
struct StartUp {
    time: Duration,
    /// Peak resident set (`VmHWM`), KiB.
    peak_rss_kib: f64,
    /// Minor page faults so far: pages mapped on first touch (the binary's
    /// code and data, the heap, the threads' stacks).
    minor_faults: f64,
}

/// Starts `command`, sends `initialize`, and reads what the start cost
/// once the answer arrives; then closes its stdin and waits for it.
async fn start_once(command: &[String], stdio: StdioKind) -> Result<StartUp, String> {
    let started = Instant::now();
    let (mut child, stdout, mut stdin) = start(command, stdio)?;
    let mut lines = BufReader::new(stdout).lines();
    let mut line = json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": { "name": "mcp_load", "version": "0.1.0" } }
    })
    .to_string();
    line.push('\n');
    stdin
        .write_all(line.as_bytes())
        .await
        .map_err(|error| format!("write: {error}"))?;
    read_response(&mut lines).await?;
    let time = started.elapsed();
    let pid = child.id().ok_or("the server exited")?;
    let proc_file = |name: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{name}"))
            .map_err(|error| format!("/proc/{pid}/{name}: {error} (Linux only)"))
    };
    let status = proc_file("status")?;
    let peak_rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmHWM in /proc/<pid>/status")?;
    // `stat`'s tenth field, counted after the command name's parenthesis
    // (a name may hold spaces).
    let stat = proc_file("stat")?;
    let minor_faults = stat
        .rsplit_once(')')
        .and_then(|(_, fields)| fields.split_whitespace().nth(7))
        .and_then(|value| value.parse().ok())
        .ok_or("no minflt in /proc/<pid>/stat")?;
    drop(stdin);
    child
        .wait()
        .await
        .map_err(|error| format!("wait: {error}"))?;
    Ok(StartUp {
        time,
        peak_rss_kib,
        minor_faults,
    })
}

async fn start_up(servers: &[Vec<String>], rounds: usize, stdio: StdioKind) -> Result<(), String> {
    if servers.is_empty() {
        usage();
    }
    let mut figures: Vec<Vec<StartUp>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for index in order {
            figures[index].push(start_once(&servers[index], stdio).await?);
        }
    }
    let of = |index: usize, figure: fn(&StartUp) -> f64| {
        median(figures[index].iter().map(figure).collect())
    };
    println!("{rounds} starts each, interleaved");
    println!("| server | spawn to `initialize` answered | peak RSS | minor faults |");
    println!("|---|---|---|---|");
    for (index, command) in servers.iter().enumerate() {
        let time = of(index, |run| run.time.as_secs_f64() * 1e3);
        let rss = of(index, |run| run.peak_rss_kib);
        let faults = of(index, |run| run.minor_faults);
        println!(
            "| `{}` | {time:.2} ms: {:.2}x | {:.1} MiB: {:.2}x | {faults:.0}: {:.2}x |",
            command.join(" "),
            time / of(0, |run| run.time.as_secs_f64() * 1e3),
            rss / 1024.0,
            rss / of(0, |run| run.peak_rss_kib),
            faults / of(0, |run| run.minor_faults),
        );
    }
    Ok(())
}

/// The next line that is a response (has an id); notifications are skipped.
async fn read_response(
    lines: &mut tokio::io::Lines<BufReader<ServerReader>>,
) -> Result<Value, String> {
    loop {
        let line = lines
            .next_line()
            .await
            .map_err(|error| format!("read: {error}"))?
            .ok_or("the server closed its stdout")?;
        let message: Value =
            serde_json::from_str(&line).map_err(|error| format!("not JSON ({error}): {line}"))?;
        if message.get("id").is_some() {
            return Ok(message);
        }
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

async fn bench(calls: usize, rounds: usize, stdio: StdioKind) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|error| format!("current exe: {error}"))?
        .to_string_lossy()
        .into_owned();
    let servers = ["rmcp", "ours"];
    let mut figures: Vec<(usize, &str, Run)> = Vec::new();
    println!("calls per run: {calls}");
    println!("| round | in flight | server | calls/s | p50 | p99 |");
    println!("|---|---|---|---|---|---|");
    for round in 0..rounds {
        for in_flight in [1, 32] {
            // Alternate which server goes first, so neither always meets a
            // warmer machine.
            let order: Vec<&str> = if round % 2 == 0 {
                servers.to_vec()
            } else {
                servers.iter().rev().copied().collect()
            };
            for server in order {
                let command = [exe.clone(), format!("serve-{server}")];
                let run = drive(&command, calls, in_flight, stdio).await?;
                println!(
                    "| {round} | {in_flight} | {server} | {:.0} | {:.1} µs | {:.1} µs |",
                    run.calls_per_second,
                    run.p50.as_secs_f64() * 1e6,
                    run.p99.as_secs_f64() * 1e6
                );
                figures.push((in_flight, server, run));
            }
        }
    }
    println!();
    println!("| in flight | server | median calls/s | median p50 | median p99 | calls/s vs rmcp |");
    println!("|---|---|---|---|---|---|");
    for in_flight in [1, 32] {
        let of = |server: &str, figure: fn(&Run) -> f64| {
            median(
                figures
                    .iter()
                    .filter(|(k, s, _)| *k == in_flight && *s == server)
                    .map(|(_, _, run)| figure(run))
                    .collect(),
            )
        };
        let baseline = of("rmcp", |run| run.calls_per_second);
        for server in servers {
            let rate = of(server, |run| run.calls_per_second);
            println!(
                "| {in_flight} | {server} | {rate:.0} | {:.1} µs | {:.1} µs | {:.2}x |",
                of(server, |run| run.p50.as_secs_f64() * 1e6),
                of(server, |run| run.p99.as_secs_f64() * 1e6),
                rate / baseline
            );
        }
    }
    Ok(())
}

async fn serve_ours() -> Result<(), String> {
    let runtime = Runtime::builder()
        .tool(WeatherTool)
        .build()
        .map_err(|error| error.to_string())?;
    McpServer::new(runtime)
        .serve_stdio()
        .await
        .map_err(|error| error.to_string())
}

async fn serve_rmcp() -> Result<(), String> {
    let server = PlainServer {
        tool_router: PlainServer::tool_router(),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| error.to_string())?;
    running
        .waiting()
        .await
        .map(drop)
        .map_err(|error| error.to_string())
}

fn usage() -> ! {
    eprintln!(
        "usage: mcp_load bench [--calls N] [--rounds R] [--stdio pipe|socket]\n       mcp_load drive [--calls N] [--in-flight K] [--stdio pipe|socket] -- <server command...>\n       mcp_load start-up [--rounds R] [--stdio pipe|socket] -- <server...> [-- <server...>]...\n       mcp_load serve-ours | serve-rmcp"
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut calls, mut rounds, mut in_flight) = (10_000, 3, 1);
    let mut command = Vec::new();
    let mut stdio = StdioKind::Pipe;
    let mut options = args.iter().skip(1);
    while let Some(option) = options.next() {
        let mut number = || {
            options
                .next()
                .and_then(|value| value.parse().ok())
                .unwrap_or_else(|| usage())
        };
        match option.as_str() {
            "--calls" => calls = number(),
            "--rounds" => rounds = number(),
            "--in-flight" => in_flight = number(),
            "--stdio" => {
                stdio = match options.next().map(String::as_str) {
                    Some("pipe") => StdioKind::Pipe,
                    #[cfg(unix)]
                    Some("socket") => StdioKind::Socket,
                    _ => usage(),
                }
            }
            "--" => {
                command = options.by_ref().cloned().collect();
            }
            _ => usage(),
        }
    }
    let result = match args.first().map(String::as_str) {
        Some("bench") => bench(calls, rounds, stdio).await,
        Some("drive") => drive(&command, calls, in_flight, stdio).await.map(|run| {
            println!(
                "{calls} calls, {in_flight} in flight: {:.0} calls/s, p50 {:.1} µs, p99 {:.1} µs",
                run.calls_per_second,
                run.p50.as_secs_f64() * 1e6,
                run.p99.as_secs_f64() * 1e6
            );
        }),
        Some("start-up") => {
            let servers: Vec<Vec<String>> = command
                .split(|word| word == "--")
                .filter(|server| !server.is_empty())
                .map(<[String]>::to_vec)
                .collect();
            start_up(&servers, rounds, stdio).await
        }
        Some("serve-ours") => serve_ours().await,
        Some("serve-rmcp") => serve_rmcp().await,
        _ => usage(),
    };
    if let Err(error) = result {
        eprintln!("mcp_load: {error}");
        std::process::exit(1);
    }
}
