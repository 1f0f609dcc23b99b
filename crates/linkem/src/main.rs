//! linkem — forward Ethernet frames between two interfaces through an emulated link.
//!
//! Run it in a relay network namespace between two veths:
//!
//! ```text
//!   client ──veth── [a] linkem [b] ──veth── server
//!                   a→b: loss → AQM → queue(buffer) → bandwidth → delay   ("forward", shaped)
//!                   b→a: delay only (unless --rev-rate-mbps is given)      ("reverse")
//! ```
//!
//! One forwarding thread serves both directions (`--threads 2`: one thread per direction): it
//! reads frames from each direction's input AF_PACKET socket (recvmmsg, PACKET_IGNORE_OUTGOING
//! so frames we send are not read back), runs them through that direction's pipe model
//! (`linkem::Pipe`), and writes each frame to the output socket at its release time, the
//! earliest release of the two delay lines first (`linkem::earliest`). One thread, because a
//! real-time thread busy-waits before each release: at high packet rates (gaps shorter than the
//! spin) it spins all the time, and two such threads take both CPUs of a 2-vCPU machine from the
//! senders (measured: 1.2 Gb/s offered each way, 0.3 Gb/s got through with two threads, all of
//! it with one).
//!
//! Timing (what makes the added delay exact on a loaded machine):
//! * arrival_k is the kernel's receive stamp of the frame (SO_TIMESTAMPNS, taken when the
//!   frame entered the relay namespace), not the time linkem got round to reading it, so time
//!   a frame spends in the socket queue does not shift its release;
//! * the forwarding threads run SCHED_FIFO with memory locked (`--realtime`, the default when
//!   permitted; a warning says so otherwise), so other work cannot delay their wake-ups;
//! * waiting uses ppoll (1 ns timer slack) until `spin` before the release instant, then a
//!   busy-wait; `spin` adapts to the measured wake-up latency (`linkem::SpinTuner`) between
//!   `--spin-us` and `--spin-max-us`, and is bounded per release, so a real-time thread never spins longer than
//!   that without a packet to send (it must not starve the endpoints' TCP on a 2-core machine).
//! `--timing FILE` writes quantiles of each direction's release lateness (send − release_k)
//! and receive lag (read − kernel stamp) at exit.
//! Stats go to `--stats FILE` every `--stats-interval-ms` as CSV lines:
//! `t_mono_s,dir,queue_pkts,arrivals,forwarded,drops_tail,drops_red,drops_loss,marks,bytes_out,tx_errors`.

mod cli;
mod forward;
mod net;
mod realtime;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use cli::Args;
use forward::{run_thread, Direction, Live, Timing};
use net::{now_ns, packet_socket};
use realtime::has_capability;

static STOP_SIGNAL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: i32) {
    STOP_SIGNAL.store(true, Relaxed);
}

fn main() {
    let a = Args::parse();
    let (fwd, rev) = a.pipes();
    // die with the parent (the testbed): never outlive the run that owns us
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as u64, 0u64, 0u64, 0u64) };
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let realtime = !a.no_realtime;
    let fd_in = packet_socket(&a.in_if, a.rcvbuf);
    let fd_out = packet_socket(&a.out_if, a.rcvbuf);
    // real time, part 1: lock all memory (no page fault on the forwarding path)
    // (only with CAP_IPC_LOCK: under a finite RLIMIT_MEMLOCK, MCL_FUTURE would make later
    // allocations — thread stacks, the delay line — fail instead of just going unlocked)
    let mlock = if !realtime {
        Ok(())
    } else if !has_capability(14) {
        Err("needs CAP_IPC_LOCK".to_string())
    } else if unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    };
    let stop = Arc::new(AtomicBool::new(false));
    let lives = [Arc::new(Live::default()), Arc::new(Live::default())];
    let spin = (a.spin_us * 1000, a.spin_max_us.max(a.spin_us) * 1000);
    let rt_priority = if realtime { a.rt_priority } else { 0 };
    let (rt_tx, rt_rx) = std::sync::mpsc::channel();
    let dirs = vec![
        Direction::new(0, fd_in, fd_out, fwd, a.seed, lives[0].clone()),
        Direction::new(1, fd_out, fd_in, rev, a.seed ^ 0x5eed, lives[1].clone()),
    ];
    // --threads 1: one thread serves both directions (one spin, not two, on a small machine);
    // --threads 2: a thread per direction
    let groups: Vec<Vec<Direction>> = if a.threads == 1 { vec![dirs] } else { dirs.into_iter().map(|d| vec![d]).collect() };
    let mut threads = Vec::new();
    for (k, group) in groups.into_iter().enumerate() {
        let (stop, rt_tx) = (stop.clone(), rt_tx.clone());
        let name = if a.threads == 1 { "fwd+rev".to_string() } else { ["fwd", "rev"][k].to_string() };
        threads.push(
            std::thread::Builder::new()
                .name(name)
                .spawn(move || run_thread(group, spin, rt_priority, rt_tx, stop))
                .unwrap(),
        );
    }
    // real time, part 2: every forwarding thread reports whether SCHED_FIFO was granted
    let fifo: Result<(), String> = (0..threads.len()).try_for_each(|_| rt_rx.recv().unwrap_or(Err("thread failed".into())));
    let rt_note = realtime::note(realtime, a.rt_priority, &fifo, &mlock);
    eprintln!("linkem: {rt_note}");
    let mut out = a.stats.as_ref().map(|p| {
        std::fs::File::create(p).unwrap_or_else(|e| {
            eprintln!("linkem: cannot write {p}: {e}");
            std::process::exit(1)
        })
    });
    if let Some(f) = out.as_mut() {
        let _ = writeln!(f, "t_mono_s,dir,queue_pkts,arrivals,forwarded,drops_tail,drops_red,drops_loss,marks,bytes_out,tx_errors");
    }
    eprintln!("linkem: forwarding {} <-> {} (fwd {:?}, rev {:?})", a.in_if, a.out_if, fwd, rev);
    let write_stats = |out: &mut Option<std::fs::File>| {
        if let Some(f) = out.as_mut() {
            let t = now_ns() as f64 / 1e9;
            for (dir, l) in ["fwd", "rev"].iter().zip(lives.iter()) {
                let _ = writeln!(
                    f,
                    "{t:.6},{dir},{},{},{},{},{},{},{},{},{}",
                    l.queue_pkts.load(Relaxed),
                    l.arrivals.load(Relaxed),
                    l.forwarded.load(Relaxed),
                    l.drops_tail.load(Relaxed),
                    l.drops_red.load(Relaxed),
                    l.drops_loss.load(Relaxed),
                    l.marks.load(Relaxed),
                    l.bytes_out.load(Relaxed),
                    l.tx_errors.load(Relaxed)
                );
            }
            let _ = f.flush();
        }
    };
    let interval = Duration::from_millis(a.stats_interval_ms.max(1));
    while !STOP_SIGNAL.load(Relaxed) {
        std::thread::sleep(interval.min(Duration::from_millis(20)));
        static LAST: AtomicU64 = AtomicU64::new(0);
        let now = now_ns();
        if now - LAST.load(Relaxed) >= interval.as_nanos() as u64 {
            LAST.store(now, Relaxed);
            write_stats(&mut out);
        }
    }
    stop.store(true, Relaxed);
    let mut timings: Vec<Timing> = vec![Timing::default(), Timing::default()];
    for t in threads {
        for (i, tm) in t.join().unwrap_or_default() {
            timings[i] = tm;
        }
    }
    write_stats(&mut out);
    let json = forward::timing_json(realtime && fifo.is_ok(), a.threads, a.spin_us, a.spin_max_us, &timings);
    if let Some(p) = &a.timing {
        if let Err(e) = std::fs::write(p, json) {
            eprintln!("linkem: cannot write {p}: {e}");
        }
    }
}
