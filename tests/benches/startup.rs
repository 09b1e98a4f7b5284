//! Cold start to the first 200 from `/health`, and idle footprint, of the real `souz` binary.
//!
//! Run with `scripts/bench.sh startup` (builds the release binary first). Measures:
//! - `first_start`: a fresh `SOUZ_HOME` (writes config, token, creates and migrates the database);
//! - `restart`: an existing home.
//!
//! Then it prints idle RSS and CPU time of a daemon left alone for a few seconds.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use souz_e2e::{http, souz, status_kib, wait_for_daemon_file};

#[allow(clippy::zombie_processes)] // the caller stops and waits for the child
fn start(home: &std::path::Path) -> (Child, Duration) {
    let began = Instant::now();
    let child = souz(home)
        .arg("serve")
        .env("SOUZ_PORT", "0")
        .env("SOUZ_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn souz");
    let address = wait_for_daemon_file(home, Duration::from_secs(20))
        .trim_start_matches("http://")
        .to_owned();
    loop {
        if let Ok(response) = http(&address, "GET", "/health", &[], b"")
            && response.status == 200
        {
            return (child, began.elapsed());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn stop(mut child: Child) {
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

fn startup(c: &mut Criterion) {
    let mut group = c.benchmark_group("startup");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("first_start_to_healthy", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let home = tempfile::tempdir().expect("tempdir");
                let (child, elapsed) = start(home.path());
                total += elapsed;
                stop(child);
            }
            total
        });
    });
    let home = tempfile::tempdir().expect("tempdir");
    let (child, _) = start(home.path());
    stop(child);
    group.bench_function("restart_to_healthy", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let _ = std::fs::remove_file(home.path().join("daemon.json"));
                let (child, elapsed) = start(home.path());
                total += elapsed;
                stop(child);
            }
            total
        });
    });
    group.finish();
    idle_footprint();
}

fn idle_footprint() {
    let home = tempfile::tempdir().expect("tempdir");
    let (child, _) = start(home.path());
    std::thread::sleep(Duration::from_secs(3));
    let pid = child.id();
    let cpu_before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(5));
    let cpu_after = cpu_ticks(pid);
    let rss_kib = status_kib(pid, "VmRSS");
    stop(child);
    match (rss_kib, cpu_before, cpu_after) {
        (Some(rss), Some(before), Some(after)) => println!(
            "idle footprint: RSS {:.1} MiB after 3 s; CPU {} ticks (1/100 s) over the next 5 s",
            rss as f64 / 1024.0,
            after - before
        ),
        _ => println!("idle footprint: /proc not available on this system"),
    }
}

fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

criterion_group!(benches, startup);
criterion_main!(benches);
