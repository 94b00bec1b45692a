//! The driver: starts the children, injects the faults, lets the calls
//! settle and their notifications be delivered, stops the children and
//! checks.

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tool_runtime::store::{PostgresStore, SqliteStore};

use crate::check::{self, Params};
use crate::common::{Args, Rng, Store, now_us};
use crate::db::ChaosDb;

/// One run's settings.
struct Config {
    store: Store,
    pg_dir: Option<PathBuf>,
    calls: u64,
    seconds: u64,
    lease_ms: u64,
    seed: u64,
    log_dir: Option<PathBuf>,
}

impl Config {
    fn from_args(args: &Args) -> Result<Config, String> {
        let store = Store::from_args(args)?;
        let pg_dir = args
            .get("pg-dir")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("CI_PG_DIR").map(PathBuf::from));
        let short = args.flag("short");
        Ok(Config {
            pg_dir: if store.is_postgres() { pg_dir } else { None },
            store,
            calls: args.num("calls", if short { 300 } else { 3000 })?,
            seconds: args.num("seconds", if short { 40 } else { 600 })?,
            lease_ms: args.num("lease-ms", if short { 1500 } else { 2000 })?,
            seed: args.num("seed", 22)?,
            log_dir: args.get("log-dir").map(PathBuf::from),
        })
    }
}

/// `chaos run`.
pub fn run_command(args: &Args) -> Result<ExitCode, String> {
    let config = Config::from_args(args)?;
    let passed = block_on(run(config))??;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `chaos ci`: the short form on PostgreSQL (`$DATABASE_URL`, the server in
/// `$CI_PG_DIR`, restarted and stopped) and then on SQLite.
pub fn ci_command(args: &Args) -> Result<ExitCode, String> {
    let seed = args.num("seed", 22)?;
    let calls = args.num("calls", 300)?;
    let seconds = args.num("seconds", 40)?;
    let lease_ms = args.num("lease-ms", 1500)?;
    let mut passed = true;
    if !args.flag("sqlite-only") {
        let url = std::env::var("DATABASE_URL").map_err(|_| "chaos ci: set DATABASE_URL and CI_PG_DIR (source .ci/postgres start), or pass --sqlite-only")?;
        let dir = std::env::var_os("CI_PG_DIR")
            .ok_or("chaos ci: set CI_PG_DIR (source .ci/postgres start)")?;
        let started = Instant::now();
        passed &= block_on(run(Config {
            store: Store::Postgres { url },
            pg_dir: Some(PathBuf::from(dir)),
            calls,
            seconds,
            lease_ms,
            seed,
            log_dir: None,
        }))??;
        println!(
            "chaos ci: PostgreSQL took {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    let dir = std::env::temp_dir().join(format!("chaos-ci-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("store.db").to_string_lossy().into_owned();
    let started = Instant::now();
    passed &= block_on(run(Config {
        store: Store::Sqlite {
            chaos: format!("{path}.chaos"),
            path,
        },
        pg_dir: None,
        calls,
        seconds,
        lease_ms,
        seed: seed + 1,
        log_dir: Some(dir.join("logs")),
    }))??;
    println!(
        "chaos ci: SQLite took {:.0} s",
        started.elapsed().as_secs_f64()
    );
    if passed {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn block_on<T>(future: impl Future<Output = T>) -> Result<T, String> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("{e}"))?;
    Ok(tokio.block_on(future))
}

/// A child process and what it is.
struct Kid {
    role: &'static str,
    index: usize,
    generation: u32,
    instance: String,
    child: Child,
}

impl Kid {
    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap_or(i32::MAX)
    }

    fn signal(&self, signal: Signal) {
        let _ = kill(Pid::from_raw(self.pid()), signal);
    }
}

/// What the driver needs to start children.
struct Spawner {
    exe: PathBuf,
    store: Store,
    run: String,
    lease_ms: u64,
    seed: u64,
    log_dir: PathBuf,
    until_ms: u64,
    interval_ms: u64,
}

impl Spawner {
    fn spawn(&self, role: &'static str, index: usize, generation: u32) -> Result<Kid, String> {
        let instance = format!("{role}-{index}-g{generation}");
        let log_path = self.log_dir.join(format!("{instance}.log"));
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let err = log.try_clone().map_err(|e| format!("{e}"))?;
        let mut command = Command::new(&self.exe);
        command
            .arg(role)
            .args(self.store.to_args())
            .args(["--run", &self.run, "--instance", &instance])
            .args(["--lease-ms", &self.lease_ms.to_string()])
            .args([
                "--seed",
                &(self.seed ^ u64::from(generation) << 8 ^ index as u64).to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        match role {
            "front" => {
                command
                    .args(["--until-ms", &self.until_ms.to_string()])
                    .args(["--interval-ms", &self.interval_ms.to_string()])
                    .args(["--leave", &(generation % 2).to_string()]);
            }
            "decider" => {
                command.args(["--index", &index.to_string()]);
            }
            _ => {}
        }
        let child = command
            .spawn()
            .map_err(|e| format!("starting {instance}: {e}"))?;
        Ok(Kid {
            role,
            index,
            generation,
            instance,
            child,
        })
    }
}

/// The PostgreSQL server, restarted and stopped as `.ci/postgres` started it.
struct Postgres {
    pg_ctl: PathBuf,
    dir: PathBuf,
    run_as: Option<String>,
    port: String,
    log: PathBuf,
}

impl Postgres {
    fn new(dir: &Path, url: &str, log: PathBuf) -> Result<Postgres, String> {
        let bin = match std::env::var_os("PG_BIN") {
            Some(bin) => PathBuf::from(bin),
            None => {
                let mut found: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
                    .map_err(|e| format!("/usr/lib/postgresql: {e}; set PG_BIN"))?
                    .filter_map(Result::ok)
                    .map(|entry| {
                        let version = entry
                            .file_name()
                            .to_string_lossy()
                            .split('.')
                            .map(|part| part.parse().unwrap_or(0))
                            .collect();
                        (version, entry.path().join("bin"))
                    })
                    .filter(|(_, bin)| bin.join("pg_ctl").exists())
                    .collect();
                found.sort();
                found
                    .pop()
                    .ok_or("no /usr/lib/postgresql/*/bin/pg_ctl; set PG_BIN")?
                    .1
            }
        };
        let owner = std::fs::metadata(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .uid();
        let me = std::fs::metadata("/proc/self")
            .map_err(|e| format!("/proc/self: {e}"))?
            .uid();
        let run_as = if me == 0 && owner != 0 {
            let passwd =
                std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
            let name = passwd
                .lines()
                .map(|line| line.split(':').collect::<Vec<_>>())
                .find(|fields| fields.get(2).and_then(|uid| uid.parse::<u32>().ok()) == Some(owner))
                .and_then(|fields| fields.first().map(|name| (*name).to_owned()))
                .ok_or_else(|| format!("no user with uid {owner} owns {}", dir.display()))?;
            Some(name)
        } else {
            None
        };
        Ok(Postgres {
            pg_ctl: bin.join("pg_ctl"),
            dir: dir.to_owned(),
            run_as,
            port: port_of(url),
            log,
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), String> {
        let mut command = match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(&self.pg_ctl);
                command
            }
            None => Command::new(&self.pg_ctl),
        };
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let err = log.try_clone().map_err(|e| format!("{e}"))?;
        let status = command
            .args(args)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .status()
            .map_err(|e| format!("pg_ctl: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!(
                "pg_ctl {args:?}: {status} (see {})",
                self.log.display()
            ))
        }
    }

    fn server_log(&self) -> String {
        self.dir.join("server.log").to_string_lossy().into_owned()
    }

    fn dir(&self) -> String {
        self.dir.to_string_lossy().into_owned()
    }

    fn restart_immediate(&self) -> Result<(), String> {
        let (dir, log, port) = (self.dir(), self.server_log(), format!("-p {}", self.port));
        self.pg_ctl(&[
            "restart",
            "-D",
            &dir,
            "-m",
            "immediate",
            "-w",
            "-t",
            "60",
            "-l",
            &log,
            "-o",
            &port,
        ])
    }

    fn stop_immediate(&self) -> Result<(), String> {
        let dir = self.dir();
        self.pg_ctl(&["stop", "-D", &dir, "-m", "immediate", "-w", "-t", "60"])
    }

    fn start(&self) -> Result<(), String> {
        let (dir, log, port) = (self.dir(), self.server_log(), format!("-p {}", self.port));
        self.pg_ctl(&[
            "start", "-D", &dir, "-l", &log, "-o", &port, "-w", "-t", "60",
        ])
    }
}

/// The port of a `postgres://user@host:port/db` URL (5432 when it has none).
fn port_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    host.rsplit_once(':')
        .map_or_else(|| "5432".to_owned(), |(_, port)| port.to_owned())
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    KillWorker,
    KillDecider,
    KillFront,
    KillDispatcher,
    StopWorker,
    PgRestart,
    PgOutage,
}

/// The run: children, faults, settling, the check. `Ok(true)` when no
/// check was violated.
async fn run(config: Config) -> Result<bool, String> {
    let started_ms = u64::try_from(now_us() / 1000).unwrap_or(0);
    let run = format!("r{}t{started_ms}", config.seed);
    let log_dir = config
        .log_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("chaos-{run}")));
    std::fs::create_dir_all(&log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
    let store_name = if config.store.is_postgres() {
        "postgres"
    } else {
        "sqlite"
    };
    println!(
        "chaos run {run}: {store_name}, {} calls over {} s, lease {} ms, seed {}; children log to {}",
        config.calls,
        config.seconds,
        config.lease_ms,
        config.seed,
        log_dir.display()
    );
    let postgres = match (&config.store, &config.pg_dir) {
        (Store::Postgres { url }, Some(dir)) => {
            Some(Postgres::new(dir, url, log_dir.join("pg_ctl.log"))?)
        }
        (Store::Postgres { .. }, None) => {
            println!("chaos: no --pg-dir (nor CI_PG_DIR): no PostgreSQL restarts or outages");
            None
        }
        _ => None,
    };

    // The store's tables and the chaos tables, before any child starts.
    match &config.store {
        Store::Postgres { url } => drop(
            PostgresStore::connect(url)
                .await
                .map_err(|e| format!("{e}"))?,
        ),
        Store::Sqlite { path, .. } => drop(SqliteStore::open(path).map_err(|e| format!("{e}"))?),
    }
    let db = ChaosDb::open(&config.store)?;
    db.setup(&config.store, true).await?;

    let lease = Duration::from_millis(config.lease_ms);
    let until_ms = started_ms + config.seconds * 1000;
    let spawner = Spawner {
        exe: std::env::current_exe().map_err(|e| format!("{e}"))?,
        store: config.store.clone(),
        run: run.clone(),
        lease_ms: config.lease_ms,
        seed: config.seed,
        log_dir: log_dir.clone(),
        until_ms,
        interval_ms: (config.seconds * 1000 / config.calls.max(1)).max(1),
    };
    let mut kids = vec![spawner.spawn("front", 0, 0)?];
    for index in 0..2 {
        kids.push(spawner.spawn("worker", index, 0)?);
        kids.push(spawner.spawn("decider", index, 0)?);
        kids.push(spawner.spawn("dispatcher", index, 0)?);
    }

    // Faults, one at a time, until the deadline.
    let mut rng = Rng::new(config.seed);
    let mut menu = vec![
        Fault::KillWorker,
        Fault::KillDecider,
        Fault::KillFront,
        Fault::KillDispatcher,
        Fault::StopWorker,
    ];
    if postgres.is_some() {
        menu.extend([Fault::PgRestart, Fault::PgOutage]);
    }
    // Every kind once, in a random order, then at random.
    let mut first: Vec<Fault> = menu.clone();
    for i in (1..first.len()).rev() {
        let j = usize::try_from(rng.range(0, i as u64)).unwrap_or(0);
        first.swap(i, j);
    }
    first.reverse();
    let deadline = Instant::now() + Duration::from_secs(config.seconds);
    let mut made = 0u32;
    loop {
        let gap = rng.range(config.lease_ms / 2, config.lease_ms * 2);
        watch(&mut kids, &spawner, &db, Duration::from_millis(gap)).await?;
        if Instant::now() >= deadline {
            break;
        }
        let fault = first.pop().unwrap_or_else(|| {
            let weights: &[(Fault, u64)] = if postgres.is_some() {
                &[
                    (Fault::KillWorker, 20),
                    (Fault::KillDecider, 15),
                    (Fault::KillFront, 10),
                    (Fault::KillDispatcher, 10),
                    (Fault::StopWorker, 25),
                    (Fault::PgRestart, 15),
                    (Fault::PgOutage, 15),
                ]
            } else {
                &[
                    (Fault::KillWorker, 30),
                    (Fault::KillDecider, 20),
                    (Fault::KillFront, 15),
                    (Fault::KillDispatcher, 15),
                    (Fault::StopWorker, 35),
                ]
            };
            let total: u64 = weights.iter().map(|(_, w)| w).sum();
            let mut pick = rng.range(0, total - 1);
            weights
                .iter()
                .find(|(_, w)| {
                    if pick < *w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .map_or(Fault::KillWorker, |(fault, _)| *fault)
        });
        made += 1;
        let hold = lease
            + lease / 4
            + Duration::from_millis(rng.range(config.lease_ms / 4, config.lease_ms));
        match fault {
            Fault::KillWorker | Fault::KillDecider | Fault::KillFront | Fault::KillDispatcher => {
                let role = match fault {
                    Fault::KillWorker => "worker",
                    Fault::KillDecider => "decider",
                    Fault::KillDispatcher => "dispatcher",
                    _ => "front",
                };
                let candidates: Vec<usize> =
                    (0..kids.len()).filter(|&i| kids[i].role == role).collect();
                let at = candidates
                    [usize::try_from(rng.range(0, candidates.len() as u64 - 1)).unwrap_or(0)];
                let mut kid = kids.remove(at);
                kid.signal(Signal::SIGKILL);
                let _ = kid.child.wait();
                db.fault("kill", &kid.instance, kid.pid(), "SIGKILL").await;
                println!(
                    "  {:>5.1} s: SIGKILL {} (pid {})",
                    elapsed(started_ms),
                    kid.instance,
                    kid.pid()
                );
                tokio::time::sleep(Duration::from_millis(rng.range(0, 500))).await;
                kids.push(spawner.spawn(kid.role, kid.index, kid.generation + 1)?);
            }
            Fault::StopWorker => {
                let candidates: Vec<usize> = (0..kids.len())
                    .filter(|&i| kids[i].role == "worker")
                    .collect();
                let at = candidates
                    [usize::try_from(rng.range(0, candidates.len() as u64 - 1)).unwrap_or(0)];
                let (instance, pid) = (kids[at].instance.clone(), kids[at].pid());
                db.fault(
                    "stop",
                    &instance,
                    pid,
                    &format!("SIGSTOP for {} ms", hold.as_millis()),
                )
                .await;
                kids[at].signal(Signal::SIGSTOP);
                println!(
                    "  {:>5.1} s: SIGSTOP {instance} (pid {pid}) for {} ms",
                    elapsed(started_ms),
                    hold.as_millis()
                );
                watch(&mut kids, &spawner, &db, hold).await?;
                if let Some(kid) = kids.iter().find(|kid| kid.pid() == pid) {
                    kid.signal(Signal::SIGCONT);
                }
                db.fault("cont", &instance, pid, "SIGCONT").await;
            }
            Fault::PgRestart => {
                let Some(pg) = &postgres else { continue };
                db.fault(
                    "pg_restart_begin",
                    "postgres",
                    0,
                    "pg_ctl restart -m immediate",
                )
                .await;
                println!(
                    "  {:>5.1} s: pg_ctl restart -m immediate",
                    elapsed(started_ms)
                );
                let restarted = pg.restart_immediate();
                db.fault("pg_restart_end", "postgres", 0, &format!("{restarted:?}"))
                    .await;
                restarted?;
            }
            Fault::PgOutage => {
                let Some(pg) = &postgres else { continue };
                db.fault(
                    "pg_down",
                    "postgres",
                    0,
                    &format!("pg_ctl stop -m immediate for {} ms", hold.as_millis()),
                )
                .await;
                println!(
                    "  {:>5.1} s: pg_ctl stop -m immediate, down for {} ms",
                    elapsed(started_ms),
                    hold.as_millis()
                );
                let stopped = pg.stop_immediate();
                watch(&mut kids, &spawner, &db, hold).await?;
                let started = pg.start();
                db.fault(
                    "pg_up",
                    "postgres",
                    0,
                    &format!("stop {stopped:?}, start {started:?}"),
                )
                .await;
                stopped?;
                started?;
            }
        }
    }
    println!(
        "  {:>5.1} s: {made} faults made; settling",
        elapsed(started_ms)
    );

    // Settle: the front's deadline has passed; wait until every call of the
    // run is settled (or give up, and let check 1 say which are not).
    let settle_deadline = Instant::now() + Duration::from_secs(30) + lease * 20;
    let mut last = (0, 0);
    while Instant::now() < settle_deadline {
        watch(&mut kids, &spawner, &db, Duration::from_millis(500)).await?;
        if now_us() / 1000 < i64::try_from(until_ms).unwrap_or(i64::MAX) {
            continue;
        }
        match db.unsettled(&config.store, &run).await {
            Ok(counts) => {
                last = counts;
                if counts.1 == 0 {
                    break;
                }
            }
            Err(error) => println!("  reading the store: {error}"),
        }
    }
    println!(
        "  {:>5.1} s: {} calls in the store, {} not settled",
        elapsed(started_ms),
        last.0,
        last.1
    );
    // Answers asked again and records in flight.
    watch(&mut kids, &spawner, &db, lease + Duration::from_secs(1)).await?;
    // Deliver: every call settled, no notification is written any more;
    // wait until the dispatchers delivered every one (a claim of a killed
    // dispatcher runs out with its lease), or give up, and let check 8 say
    // which are not.
    let deliver_deadline = Instant::now() + Duration::from_secs(30) + lease * 4;
    let mut notified = (0, 0);
    while Instant::now() < deliver_deadline {
        match db.undelivered(&config.store, &run).await {
            Ok(counts) => {
                notified = counts;
                if counts.1 == 0 {
                    break;
                }
            }
            Err(error) => println!("  reading the outbox: {error}"),
        }
        watch(&mut kids, &spawner, &db, Duration::from_millis(500)).await?;
    }
    println!(
        "  {:>5.1} s: {} notifications in the outbox, {} not delivered; stopping the children",
        elapsed(started_ms),
        notified.0,
        notified.1
    );
    for mut kid in kids {
        kid.signal(Signal::SIGKILL);
        let _ = kid.child.wait();
        db.fault("shutdown", &kid.instance, kid.pid(), "SIGKILL at the end")
            .await;
    }

    let data = db.load(&config.store, &run).await?;
    let report = check::check(
        &data,
        &Params {
            tol_us: if config.store.is_postgres() { 0 } else { 2000 },
            lease_us: i64::try_from(lease.as_micros()).unwrap_or(i64::MAX),
        },
        store_name,
    );
    report.print();
    println!("  children's logs: {}", log_dir.display());
    Ok(report.violations.is_empty())
}

fn elapsed(started_ms: u64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "a duration in milliseconds")]
    let ms = (now_us() / 1000 - i64::try_from(started_ms).unwrap_or(0)) as f64;
    ms / 1000.0
}

/// Waits `how_long`, restarting any child that exited on its own (recorded
/// as an unexpected exit).
async fn watch(
    kids: &mut [Kid],
    spawner: &Spawner,
    db: &ChaosDb,
    how_long: Duration,
) -> Result<(), String> {
    let until = Instant::now() + how_long;
    loop {
        for kid in kids.iter_mut() {
            if let Ok(Some(status)) = kid.child.try_wait() {
                db.fault("exit", &kid.instance, kid.pid(), &format!("{status}"))
                    .await;
                println!(
                    "  {} (pid {}) exited on its own: {status}; restarting it",
                    kid.instance,
                    kid.pid()
                );
                *kid = spawner.spawn(kid.role, kid.index, kid.generation + 1)?;
            }
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        tokio::time::sleep((until - now).min(Duration::from_millis(200))).await;
    }
}
