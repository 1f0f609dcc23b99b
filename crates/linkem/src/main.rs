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

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use linkem::{frame, Pipe, PipeConfig, RedConfig, Verdict};

#[derive(Parser, Debug)]
#[command(name = "linkem", about = "Dummynet-style link emulator between two interfaces (AF_PACKET)")]
struct Args {
    /// Input interface of the forward (shaped) direction, e.g. the client side.
    #[arg(long = "in")]
    in_if: String,
    /// Output interface of the forward direction, e.g. the server side.
    #[arg(long = "out")]
    out_if: String,
    /// Forward bandwidth in Mb/s (IP bytes); 0 = unlimited.
    #[arg(long, default_value_t = 0.0)]
    rate_mbps: f64,
    /// Forward one-way delay in ms.
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
    /// Forward buffer in packets (queue + in service).
    #[arg(long, default_value_t = 50)]
    buffer_pkts: usize,
    /// Forward random loss probability.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Reverse one-way delay in ms (default: same as --delay-ms).
    #[arg(long)]
    rev_delay_ms: Option<f64>,
    /// Reverse bandwidth in Mb/s; 0 = unlimited (delay only).
    #[arg(long, default_value_t = 0.0)]
    rev_rate_mbps: f64,
    /// Reverse buffer in packets.
    #[arg(long, default_value_t = 100_000)]
    rev_buffer_pkts: usize,
    /// Enable RED on the forward queue with these thresholds (packets of average queue).
    #[arg(long)]
    red_min_th: Option<f64>,
    #[arg(long)]
    red_max_th: Option<f64>,
    #[arg(long, default_value_t = 0.1)]
    red_max_p: f64,
    #[arg(long, default_value_t = 0.002)]
    red_weight: f64,
    /// Disable gentle RED.
    #[arg(long)]
    red_no_gentle: bool,
    /// Mark CE on ECN-capable packets instead of early drops.
    #[arg(long)]
    red_ecn: bool,
    /// Seed of the loss/RED random numbers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write periodic stats (CSV) to this file.
    #[arg(long)]
    stats: Option<String>,
    #[arg(long, default_value_t = 100)]
    stats_interval_ms: u64,
    /// Minimum busy-wait before each release instant, µs (timing accuracy vs CPU); the spin
    /// adapts to the measured wake-up latency between this and --spin-max-us.
    #[arg(long, default_value_t = 30)]
    spin_us: u64,
    /// Upper bound of the adaptive busy-wait (µs): linkem raises the spin up to this when its
    /// timed sleeps wake late (halted vCPUs of an idle VM wake 50–150 µs late).
    #[arg(long, default_value_t = 200)]
    spin_max_us: u64,
    /// Run the forwarding threads SCHED_FIFO and lock memory (mlockall) — the default; when
    /// not permitted (needs root/CAP_SYS_NICE) linkem warns and runs with normal scheduling.
    #[arg(long = "realtime", overrides_with = "no_realtime")]
    realtime: bool,
    /// Normal scheduling for the forwarding threads, no memory locking.
    #[arg(long = "no-realtime", overrides_with = "realtime")]
    no_realtime: bool,
    /// SCHED_FIFO priority of the forwarding threads with --realtime (1–99).
    #[arg(long, default_value_t = 10)]
    rt_priority: i32,
    /// Write release-timing quantiles (JSON) of both directions to this file at exit.
    #[arg(long)]
    timing: Option<String>,
    /// Forwarding threads: 1 = one thread serves both directions (default: on a small machine
    /// two real-time threads that each spin before their releases take every CPU), 2 = one
    /// thread per direction.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    threads: u8,
    /// Socket receive buffer per interface, bytes.
    #[arg(long, default_value_t = 8 << 20)]
    rcvbuf: usize,
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn die(what: &str) -> ! {
    eprintln!("linkem: {what}: {}", std::io::Error::last_os_error());
    std::process::exit(1);
}

/// AF_PACKET raw socket bound to one interface, reading every frame that arrives on it.
fn packet_socket(ifname: &str, rcvbuf: usize) -> i32 {
    let cname = std::ffi::CString::new(ifname).unwrap();
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        eprintln!("linkem: no interface {ifname:?} in this network namespace");
        std::process::exit(1);
    }
    // protocol 0 at creation: receive nothing until bound to the interface (no stray frames)
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        die("socket(AF_PACKET) (needs CAP_NET_RAW)");
    }
    let one: i32 = 1;
    let set = |level, opt, val: &[u8]| unsafe {
        libc::setsockopt(fd, level, opt, val.as_ptr() as *const libc::c_void, val.len() as u32)
    };
    // PACKET_IGNORE_OUTGOING (23): do not read back the frames we transmit on this interface
    if set(libc::SOL_PACKET, 23, &one.to_ne_bytes()) != 0 {
        die("PACKET_IGNORE_OUTGOING");
    }
    // PACKET_QDISC_BYPASS (20): hand frames straight to the driver (veth), no qdisc
    set(libc::SOL_PACKET, 20, &one.to_ne_bytes());
    // SO_TIMESTAMPNS (35, the timespec variant on 64-bit): the kernel's receive time of each
    // frame (CLOCK_REALTIME) comes with it as a control message
    set(libc::SOL_SOCKET, SO_TIMESTAMPNS, &one.to_ne_bytes());
    let rb = rcvbuf as i32;
    if set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &rb.to_ne_bytes()) != 0 {
        set(libc::SOL_SOCKET, libc::SO_RCVBUF, &rb.to_ne_bytes());
    }
    set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &rb.to_ne_bytes());
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
    sll.sll_ifindex = ifindex as i32;
    let r = unsafe {
        libc::bind(fd, &sll as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_ll>() as u32)
    };
    if r != 0 {
        die("bind(AF_PACKET)");
    }
    // promiscuous: frames for the far end's MAC must reach us
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = ifindex as i32;
    mr.mr_type = libc::PACKET_MR_PROMISC as u16;
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mr as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::packet_mreq>() as u32,
        )
    };
    fd
}

/// Live counters of one direction, read by the stats thread.
#[derive(Default)]
struct Live {
    queue_pkts: AtomicU64,
    arrivals: AtomicU64,
    forwarded: AtomicU64,
    drops_tail: AtomicU64,
    drops_red: AtomicU64,
    drops_loss: AtomicU64,
    marks: AtomicU64,
    bytes_out: AtomicU64,
    tx_errors: AtomicU64,
}

const BATCH: usize = 32;
const SLOT: usize = 65536;
const SO_TIMESTAMPNS: i32 = 35; // SO_TIMESTAMPNS_OLD = SCM_TIMESTAMPNS (struct timespec)
const CTRL: usize = 64;

struct Rx {
    fd: i32,
    bufs: Vec<Vec<u8>>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    ctrl: Vec<[u64; CTRL / 8]>,
}

// SAFETY: the raw pointers in `iov`/`hdrs` point into the heap buffers of `bufs`, `iov` and
// `ctrl`, which move with the struct (a Vec's heap block stays put); `read` re-points them before
// every call. An Rx is built on the main thread and then used by exactly one forwarding thread.
unsafe impl Send for Rx {}

impl Rx {
    fn new(fd: i32) -> Self {
        let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; SLOT]).collect();
        let mut iov: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|b| libc::iovec { iov_base: b.as_mut_ptr() as *mut libc::c_void, iov_len: SLOT })
            .collect();
        let hdrs = iov
            .iter_mut()
            .map(|v| {
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = v as *mut libc::iovec;
                h.msg_hdr.msg_iovlen = 1;
                h
            })
            .collect();
        Rx { fd, bufs, iov, hdrs, ctrl: vec![[0u64; CTRL / 8]; BATCH] }
    }

    /// Non-blocking batch read; returns the number of frames now in `bufs[..n]` with lengths
    /// and their kernel receive stamps (CLOCK_REALTIME ns; 0 if the kernel gave none).
    fn read(&mut self, lens: &mut [usize; BATCH], stamps: &mut [u64; BATCH]) -> usize {
        for ((h, v), c) in self.hdrs.iter_mut().zip(self.iov.iter_mut()).zip(self.ctrl.iter_mut()) {
            h.msg_hdr.msg_iov = v as *mut libc::iovec;
            h.msg_hdr.msg_control = c.as_mut_ptr() as *mut libc::c_void;
            h.msg_hdr.msg_controllen = CTRL;
            h.msg_len = 0;
        }
        let n = unsafe {
            libc::recvmmsg(self.fd, self.hdrs.as_mut_ptr(), BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if n <= 0 {
            return 0;
        }
        for i in 0..n as usize {
            lens[i] = (self.hdrs[i].msg_len as usize).min(SLOT);
            stamps[i] = 0;
            let m = &self.hdrs[i].msg_hdr;
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(m);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        stamps[i] = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                    }
                    c = libc::CMSG_NXTHDR(m, c);
                }
            }
        }
        n as usize
    }
}

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What one forwarding thread measured about its own timing.
#[derive(Default)]
struct Timing {
    /// send time − release_k of every forwarded frame
    late: linkem::Hist,
    /// time the frame was read − its kernel receive stamp
    rx_lag: linkem::Hist,
    /// frames that carried no kernel stamp (arrival = read time)
    unstamped: u64,
    /// the adaptive spin at exit
    spin_final_ns: u64,
}

/// Make the calling thread SCHED_FIFO at `priority`; Err(errno text) if not permitted.
fn set_fifo(priority: i32) -> Result<(), String> {
    let p = libc::sched_param { sched_priority: priority };
    let r = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &p) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::from_raw_os_error(r).to_string()) }
}

/// One direction of the link: its input socket, pipe model, delay line and counters.
struct Direction {
    /// 0 = forward, 1 = reverse
    index: usize,
    rx: Rx,
    out_fd: i32,
    pipe: Pipe,
    /// (release_k, frame), release times non-decreasing
    line: VecDeque<(u64, Vec<u8>)>,
    last_arrival: u64,
    live: Arc<Live>,
    timing: Timing,
    last_publish: u64,
}

impl Direction {
    fn new(index: usize, in_fd: i32, out_fd: i32, cfg: PipeConfig, seed: u64, live: Arc<Live>) -> Self {
        Direction {
            index,
            rx: Rx::new(in_fd),
            out_fd,
            pipe: Pipe::new(cfg, seed),
            line: VecDeque::new(),
            last_arrival: 0,
            live,
            timing: Timing::default(),
            last_publish: 0,
        }
    }

    /// Take in what has arrived (at most 8 batches, so that a flood of arrivals cannot hold
    /// back releases that are due; the rest is read after them, stamps intact).
    fn take_arrivals(&mut self, pool: &mut Vec<Vec<u8>>, lens: &mut [usize; BATCH], stamps: &mut [u64; BATCH]) {
        for _ in 0..8 {
            let n = self.rx.read(lens, stamps);
            if n == 0 {
                break;
            }
            // arrival_k on CLOCK_MONOTONIC = now − (realtime now − kernel stamp); a stamp from
            // the future or older than 1 s (clock step) is not trusted: arrival = now
            let (now, rt_now) = (now_ns(), realtime_ns());
            for i in 0..n {
                let f = &self.rx.bufs[i][..lens[i]];
                let lag = rt_now.wrapping_sub(stamps[i]);
                let arrival = if stamps[i] != 0 && lag < 1_000_000_000 {
                    self.timing.rx_lag.record(lag);
                    now - lag
                } else {
                    self.timing.unstamped += 1;
                    now
                };
                // the pipe's clock never runs backwards (stamps of one socket are ordered)
                self.last_arrival = self.last_arrival.max(arrival);
                if let Verdict::Forward { release_ns, mark } =
                    self.pipe.arrive(self.last_arrival, frame::wire_bytes(f), frame::is_ect(f))
                {
                    let mut b = pool.pop().unwrap_or_else(|| Vec::with_capacity(2048));
                    b.clear();
                    b.extend_from_slice(f);
                    if mark {
                        frame::set_ce(&mut b);
                    }
                    self.line.push_back((release_ns, b));
                }
            }
            if n < BATCH {
                break;
            }
        }
    }

    fn publish(&mut self, now: u64) {
        if now.saturating_sub(self.last_publish) > 1_000_000 {
            let q = self.pipe.queue_len(now) as u64;
            let c = self.pipe.counters;
            let l = &self.live;
            l.queue_pkts.store(q, Relaxed);
            l.arrivals.store(c.arrivals, Relaxed);
            l.drops_tail.store(c.drops_tail, Relaxed);
            l.drops_red.store(c.drops_red, Relaxed);
            l.drops_loss.store(c.drops_loss, Relaxed);
            l.marks.store(c.marks, Relaxed);
            self.last_publish = now;
        }
    }
}

/// One forwarding thread serving `dirs` (both directions, or one with `--threads 2`): read
/// arrivals, release what is due in release order across its directions, wait. `rt_priority`
/// > 0: try SCHED_FIFO and report the outcome on `rt_result` before forwarding anything.
fn run_thread(
    mut dirs: Vec<Direction>,
    spin: (u64, u64),
    rt_priority: i32,
    rt_result: std::sync::mpsc::Sender<Result<(), String>>,
    stop: Arc<AtomicBool>,
) -> Vec<(usize, Timing)> {
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    let _ = rt_result.send(if rt_priority > 0 { set_fifo(rt_priority) } else { Ok(()) });
    let mut lens = [0usize; BATCH];
    let mut stamps = [0u64; BATCH];
    let mut tuner = linkem::SpinTuner::new(spin.0, spin.1);
    let mut slept = true;
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut pfds: Vec<libc::pollfd> =
        dirs.iter().map(|d| libc::pollfd { fd: d.rx.fd, events: libc::POLLIN, revents: 0 }).collect();
    while !stop.load(Relaxed) {
        // 1. arrivals of every direction
        for d in dirs.iter_mut() {
            d.take_arrivals(&mut pool, &mut lens, &mut stamps);
        }
        // 2. release what is due, earliest first across the directions (each send runs the
        //    receiver's softirq work inline, so the clock is read again before every frame)
        let mut now = now_ns();
        while let Some((i, t)) = linkem::earliest(dirs.iter().map(|d| d.line.front().map(|(t, _)| *t))) {
            if t > now {
                now = now_ns();
                if t > now {
                    break;
                }
            }
            let d = &mut dirs[i];
            let (t, b) = d.line.pop_front().unwrap();
            d.timing.late.record(now.saturating_sub(t));
            if !slept {
                tuner.no_sleep();
            }
            slept = false;
            let r = unsafe { libc::send(d.out_fd, b.as_ptr() as *const libc::c_void, b.len(), 0) };
            if r < 0 {
                d.live.tx_errors.fetch_add(1, Relaxed);
            } else {
                d.live.forwarded.fetch_add(1, Relaxed);
                d.live.bytes_out.fetch_add(b.len() as u64, Relaxed);
            }
            if pool.len() < 4096 {
                pool.push(b);
            }
            now = now_ns();
        }
        for d in dirs.iter_mut() {
            d.publish(now);
        }
        // 3. wait for the next arrival or release: sleep until `spin` before it, then spin
        let next = linkem::earliest(dirs.iter().map(|d| d.line.front().map(|(t, _)| *t)));
        let wait_ns = match next {
            Some((_, t)) => t.saturating_sub(now_ns()),
            None => 50_000_000,
        };
        let spin_ns = tuner.spin_ns();
        if wait_ns > spin_ns {
            let sleep = (wait_ns - spin_ns).min(50_000_000);
            let ts = libc::timespec { tv_sec: (sleep / 1_000_000_000) as i64, tv_nsec: (sleep % 1_000_000_000) as i64 };
            for p in pfds.iter_mut() {
                p.revents = 0;
            }
            let wake_at = now_ns() + sleep;
            let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
            if r == 0 {
                // timed out: how late did we wake? (arrivals end the sleep early: no sample)
                tuner.overshoot(now_ns().saturating_sub(wake_at));
            }
            // woken by the timer or by an arrival, the thread blocked: its CPU may have halted,
            // so the next release is no evidence that wake-ups have become fast
            slept = true;
        } else if wait_ns > 0 {
            std::hint::spin_loop();
        }
    }
    let spin_final = tuner.spin_ns();
    dirs.into_iter()
        .map(|mut d| {
            d.timing.spin_final_ns = spin_final;
            (d.index, d.timing)
        })
        .collect()
}

static STOP_SIGNAL: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: i32) {
    STOP_SIGNAL.store(true, Relaxed);
}

fn main() {
    let a = Args::parse();
    let check = |ok: bool, msg: &str| {
        if !ok {
            eprintln!("linkem: {msg}");
            std::process::exit(2);
        }
    };
    check(a.rate_mbps >= 0.0 && a.rev_rate_mbps >= 0.0, "rates must be ≥ 0");
    check(a.delay_ms >= 0.0 && a.rev_delay_ms.unwrap_or(0.0) >= 0.0, "delays must be ≥ 0");
    check((0.0..1.0).contains(&a.loss), "--loss must be in [0, 1)");
    check(a.buffer_pkts >= 1, "--buffer-pkts must be ≥ 1");
    let red = match (a.red_min_th, a.red_max_th) {
        (Some(min_th), Some(max_th)) => {
            check(min_th < max_th, "--red-min-th must be < --red-max-th");
            check(a.red_max_p > 0.0 && a.red_max_p <= 1.0, "--red-max-p must be in (0, 1]");
            check(a.red_weight > 0.0 && a.red_weight <= 1.0, "--red-weight must be in (0, 1]");
            Some(RedConfig { min_th, max_th, max_p: a.red_max_p, weight: a.red_weight, gentle: !a.red_no_gentle, ecn: a.red_ecn })
        }
        (None, None) => None,
        _ => {
            check(false, "give both --red-min-th and --red-max-th");
            None
        }
    };
    // die with the parent (the testbed): never outlive the run that owns us
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as u64, 0u64, 0u64, 0u64) };
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    let rate = |m: f64| if m > 0.0 { Some(m * 1e6) } else { None };
    let fwd = PipeConfig {
        rate_bps: rate(a.rate_mbps),
        delay_ns: (a.delay_ms * 1e6).round() as u64,
        buffer_pkts: a.buffer_pkts,
        loss: a.loss,
        red,
    };
    let rev = PipeConfig {
        rate_bps: rate(a.rev_rate_mbps),
        delay_ns: (a.rev_delay_ms.unwrap_or(a.delay_ms) * 1e6).round() as u64,
        buffer_pkts: a.rev_buffer_pkts,
        loss: 0.0,
        red: None,
    };
    let realtime = !a.no_realtime;
    check(!realtime || (1..=99).contains(&a.rt_priority), "--rt-priority must be in 1..=99");
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
    let rt_note = if !realtime {
        "real-time off (--no-realtime): normal scheduling".to_string()
    } else {
        match (&fifo, &mlock) {
            (Ok(()), Ok(())) => format!(
                "real-time: forwarding threads SCHED_FIFO priority {}, memory locked (kernel RT limit {} of every {} µs)",
                a.rt_priority,
                read_sysctl("kernel/sched_rt_runtime_us"),
                read_sysctl("kernel/sched_rt_period_us")
            ),
            _ => {
                let why: Vec<String> = [fifo.as_ref().err().map(|e| format!("SCHED_FIFO: {e}")), mlock.as_ref().err().map(|e| format!("mlockall: {e}"))]
                    .into_iter()
                    .flatten()
                    .collect();
                format!(
                    "warning: real-time not permitted ({}); running with {} — releases can be late by the scheduler's \
                     wake-up latency when other work loads the CPU. Run as root (CAP_SYS_NICE, CAP_IPC_LOCK) for precise \
                     delays, or pass --no-realtime to silence this",
                    why.join(", "),
                    if fifo.is_ok() { "SCHED_FIFO but unlocked memory" } else { "normal scheduling" }
                )
            }
        }
    };
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
    let mut json = format!(
        "{{\"realtime\":{},\"threads\":{},\"spin_us\":{},\"spin_max_us\":{}",
        realtime && fifo.is_ok(),
        a.threads,
        a.spin_us,
        a.spin_max_us
    );
    for (dir, t) in ["fwd", "rev"].iter().zip(timings.iter()) {
        eprintln!(
            "linkem: {dir}: {} frames; release late by p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs; socket lag p99 {:.1} µs",
            t.late.count,
            t.late.quantile_ns(0.5) as f64 / 1e3,
            t.late.quantile_ns(0.99) as f64 / 1e3,
            t.late.max_ns as f64 / 1e3,
            t.rx_lag.quantile_ns(0.99) as f64 / 1e3
        );
        json += &format!(
            ",\"{dir}\":{{\"release_late\":{},\"rx_lag\":{},\"unstamped\":{},\"spin_final_us\":{:.1}}}",
            t.late.json(),
            t.rx_lag.json(),
            t.unstamped,
            t.spin_final_ns as f64 / 1e3
        );
    }
    json += "}\n";
    if let Some(p) = &a.timing {
        if let Err(e) = std::fs::write(p, json) {
            eprintln!("linkem: cannot write {p}: {e}");
        }
    }
}

/// Is capability number `cap` (linux/capability.h, e.g. 14 = CAP_IPC_LOCK) in our effective set?
fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| u64::from_str_radix(v.trim(), 16).ok())))
        .flatten()
        .is_some_and(|eff| eff >> cap & 1 == 1)
}

fn read_sysctl(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/{name}")).map(|s| s.trim().to_string()).unwrap_or_else(|_| "?".into())
}
