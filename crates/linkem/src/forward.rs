//! The forwarding threads: each direction's pipe and delay line, reading arrivals with their
//! kernel stamps, releasing frames at their release times (earliest first across directions),
//! and the adaptive sleep-then-spin wait between releases.
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use linkem::{frame, Pipe, PipeConfig, Verdict};

use crate::net::{now_ns, realtime_ns, Rx, BATCH};
use crate::realtime::set_fifo;

/// Live counters of one direction, read by the stats thread.
#[derive(Default)]
pub(crate) struct Live {
    pub(crate) queue_pkts: AtomicU64,
    pub(crate) arrivals: AtomicU64,
    pub(crate) forwarded: AtomicU64,
    pub(crate) drops_tail: AtomicU64,
    pub(crate) drops_red: AtomicU64,
    pub(crate) drops_loss: AtomicU64,
    pub(crate) marks: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) tx_errors: AtomicU64,
}

/// What one forwarding thread measured about its own timing.
#[derive(Default)]
pub(crate) struct Timing {
    /// send time − release_k of every forwarded frame
    pub(crate) late: linkem::Hist,
    /// time the frame was read − its kernel receive stamp
    pub(crate) rx_lag: linkem::Hist,
    /// frames that carried no kernel stamp (arrival = read time)
    pub(crate) unstamped: u64,
    /// the adaptive spin at exit
    pub(crate) spin_final_ns: u64,
}

/// One direction of the link: its input socket, pipe model, delay line and counters.
pub(crate) struct Direction {
    /// 0 = forward, 1 = reverse
    pub(crate) index: usize,
    pub(crate) rx: Rx,
    pub(crate) out_fd: i32,
    pub(crate) pipe: Pipe,
    /// (release_k, frame), release times non-decreasing
    pub(crate) line: VecDeque<(u64, Vec<u8>)>,
    pub(crate) last_arrival: u64,
    pub(crate) live: Arc<Live>,
    pub(crate) timing: Timing,
    pub(crate) last_publish: u64,
}

impl Direction {
    pub(crate) fn new(index: usize, in_fd: i32, out_fd: i32, cfg: PipeConfig, seed: u64, live: Arc<Live>) -> Self {
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
pub(crate) fn run_thread(
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

/// Report each direction's release timing on stderr and return it as JSON (`--timing`).
pub(crate) fn timing_json(realtime_ok: bool, threads: u8, spin_us: u64, spin_max_us: u64, timings: &[Timing]) -> String {
    let mut json = format!(
        "{{\"realtime\":{},\"threads\":{},\"spin_us\":{},\"spin_max_us\":{}",
        realtime_ok,
        threads,
        spin_us,
        spin_max_us
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
    json
}
