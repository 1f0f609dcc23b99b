//! The packet-level discrete-event simulator.
//!
//! Model. Links are FIFO servers with a fixed serialization time per packet (`packet_bytes`
//! at the link capacity), a propagation delay and a buffer of `buffer_pkts` packets (including
//! the one being transmitted), drop-tail or RED (the shared queue model of `mpcc-queue`:
//! Floyd & Jacobson, optional gentle mode and ECN marking), plus optional random loss. Every
//! route of every connection is one TCP subflow: sender (slow start, congestion avoidance with
//! the connection's coupled controller, SACK-based loss detection (RACK: a segment is lost once
//! a later-sent one is delivered), one window reduction per recovery episode, RTO with Linux's
//! 200 ms minimum and exponential backoff) and receiver (cumulative ACK + the SACKed segment,
//! optional delayed ACKs). The reverse (ACK) path mirrors the forward propagation delays and is
//! never congested.
//!
//! Events. Time is integer nanoseconds. Because a link is FIFO with a constant service time,
//! a packet's departure time is known when it is enqueued (`busy_until + tx`), so a link needs
//! no per-packet departure event and no per-packet queue state (its queue length follows from
//! `busy_until`), and, for multi-hop paths, a ring ("pipe") of packets propagating to the next
//! hop with one queue entry for the pipe's head. A packet carries the index of its next hop in
//! the flat table of paths. The receiver of a subflow sees that subflow's packets in the order
//! they are accepted by the last link, so its ACK is computed at that moment and appended to
//! the subflow's ACK ring (ACKs of a subflow arrive in order after a constant delay); again
//! one queue entry per ring head. Timers (RTO, delayed ACK) are lazy: a stale entry is
//! skipped. On single-link paths a data packet therefore costs one event (its ACK), on a path
//! of h links h. The event queue ([`events`]) is a calendar queue that pops in exactly a binary
//! heap's order (time, kind, id); it replaced the heap because on a fat tree nearly every event
//! is scheduled one hop ahead (a 4-ary heap was 2–4 % faster on the k = 16 fat tree and 8 %
//! slower on the dumbbell; a radix heap cost 30 % more instructions at k = 8:
//! bench/sim/FATTREE.md).
//!
//! Modules: this one holds the event loop and the run's set-up; [`link`] the links and
//! forwarding, [`tcp`] the subflow sender, [`receiver`] the subflow receiver, [`mptcp`] the
//! connections and their controllers (window increase and decrease, periodic updates),
//! [`background`] the on/off UDP sources, [`measure`] the time series and the output, and
//! [`budget`] the event and memory limits of a run.
use crate::cc::{self, Controller};
use crate::config::{Config, Options};
use crate::rng::Rng;

mod background;
pub mod budget;
mod events;
mod link;
mod measure;
mod mptcp;
mod mptcp_linux;
mod receiver;
mod tcp;

use background::Background;
pub use budget::Budget;
use events::Events;
use link::Link;
pub use link::{replay_link, Decision};
pub use measure::{Column, Output};
use measure::{Series, Snapshot};
use mptcp::Conn;
use tcp::Subflow;

pub(crate) const NS_PER_S: f64 = 1e9;

pub(crate) fn ns(s: f64) -> u64 {
    if s <= 0.0 {
        0
    } else {
        (s * NS_PER_S).round() as u64
    }
}

// Event kinds (the order breaks ties between events at the same nanosecond, deterministically).
const K_MEASURE: u64 = 0;
const K_START: u64 = 1;
const K_ACK: u64 = 2;
const K_PIPE: u64 = 3;
const K_DELACK: u64 = 4;
const K_RTO: u64 = 5;
/// Periodic update k of a connection's controller is kind K_TIMER + k.
const K_TIMER: u64 = 6;
const K_BG_TOGGLE: u64 = K_TIMER + cc::MAX_TIMERS as u64;
const K_BG_SEND: u64 = K_BG_TOGGLE + 1;
const K_STOP: u64 = K_BG_SEND + 1;
const K_SAMPLE: u64 = K_STOP + 1;
/// Connection-level samples (linux connection level only).
const K_MSK_SAMPLE: u64 = K_SAMPLE + 1;
/// The connection-level retransmission timer (linux connection level only).
const K_MSK_RTX: u64 = K_SAMPLE + 2;
/// The writer's send timeout (linux connection level only).
const K_MSK_WRITER: u64 = K_SAMPLE + 3;

/// The MPTCP connection level (`[sim] mptcp`): ideal (every subflow always has data, no
/// state) or upstream Linux's ([`mptcp_linux`]).
enum Mptcp {
    Ideal,
    Linux(Box<mptcp_linux::Linux>),
}

/// Owner ids with this bit set are background (UDP) sources, otherwise subflows.
const BG: u32 = 1 << 31;

/// Ends each path in [`Sim::hops`].
const NO_HOP: u32 = u32::MAX;

/// A data packet on the forward path (24 bytes).
#[derive(Debug, Clone, Copy, Default)]
struct Pkt {
    /// Send time (the TCP timestamp echoed by the ACK), ns.
    ts: u64,
    owner: u32,
    seq: u32,
    /// Index in [`Sim::hops`] of the link the packet goes through next: forwarding reads no
    /// per-subflow state.
    hop: u32,
    ce: bool,
    ect: bool,
}

/// An ACK travelling back to the sender.
#[derive(Debug, Clone, Copy, Default)]
struct Ack {
    time: u64,
    ts: u64,
    cum: u32,
    seq: u32,
    /// Host jitter added to `time`, ns: the ACK left the receiver at time − rev − jit.
    jit: u32,
    ece: bool,
    /// The segment had arrived before (the ACK carries a DSACK, RFC 2883).
    dsack: bool,
}

pub struct Sim {
    opt: Options,
    pkt_bits: f64,
    now: u64,
    end: u64,
    /// Pending events by (time, kind, id): see [`events`].
    queue: Events,
    rng: Rng,
    links: Vec<Link>,
    /// Every path's links, one path after the other, each ended by [`NO_HOP`]; a subflow or
    /// background source holds the index of its path's first link.
    hops: Vec<u32>,
    // Per subflow, contiguous per connection: the controller's view.
    cwnd: Vec<f64>,
    srtt: Vec<f64>,
    base_rtt: Vec<f64>,
    sf: Vec<Subflow>,
    sf_group: Vec<u32>,
    sf_flow: Vec<u32>,
    sf_route: Vec<u32>,
    conns: Vec<Conn>,
    /// One controller instance per connection (it holds the connection's algorithm state).
    ccs: Vec<Box<dyn Controller>>,
    bgs: Vec<Background>,
    sample_ns: u64,
    ack_jitter_ns: u64,
    measure_ns: (u64, u64),
    snaps: [Snapshot; 2],
    series: Series,
    /// Scratch for the controllers' periodic updates (per route of one connection).
    scratch_in_ca: Vec<bool>,
    scratch_sent: Vec<u64>,
    scratch_signals: Vec<u64>,
    scratch_rtt_sum: Vec<f64>,
    scratch_rtt_n: Vec<u64>,
    budget: Budget,
    /// Set when a budget ran out: the run stops and `finish` reports it.
    exceeded: Option<String>,
    events: u64,
    data_packets: u64,
    mptcp: Mptcp,
    /// Senders send tail loss probes (`[sim] tlp`, resolved).
    tlp: bool,
}

impl Sim {
    pub fn new(cfg: &Config) -> Result<Sim, String> {
        let budget = Budget::check(cfg)?;
        let opt = cfg.options.clone();
        let end = ns(cfg.duration_s);
        let pkt_bits = cfg.packet_bytes as f64 * 8.0;
        let mut rng = Rng::new(cfg.seed);
        let mut links = Vec::with_capacity(cfg.links.len());
        for (i, l) in cfg.links.iter().enumerate() {
            links.push(Link::new(l, pkt_bits).map_err(|e| format!("links[{i}].{e}"))?);
        }
        let check_path = |p: &Vec<u32>, field: &str| -> Result<(), String> {
            if p.is_empty() || p.iter().any(|&l| l as usize >= links.len()) {
                Err(format!(
                    "{field}: path {p:?} refers to a link that does not exist"
                ))
            } else {
                Ok(())
            }
        };
        let n_sf = budget.subflows as usize;
        let mut sim = Sim {
            opt,
            pkt_bits,
            now: 0,
            end,
            queue: Events::new(),
            rng: Rng::new(0),
            links: Vec::new(),
            hops: Vec::new(),
            cwnd: Vec::with_capacity(n_sf),
            srtt: Vec::with_capacity(n_sf),
            base_rtt: Vec::with_capacity(n_sf),
            sf: Vec::with_capacity(n_sf),
            sf_group: Vec::with_capacity(n_sf),
            sf_flow: Vec::with_capacity(n_sf),
            sf_route: Vec::with_capacity(n_sf),
            conns: Vec::new(),
            ccs: Vec::new(),
            bgs: Vec::new(),
            sample_ns: ns(cfg.sample_interval_s),
            ack_jitter_ns: ns(cfg.options.host_jitter_s),
            measure_ns: (ns(cfg.measure.0).min(end), ns(cfg.measure.1).min(end)),
            snaps: Default::default(),
            series: Series::default(),
            scratch_in_ca: Vec::new(),
            scratch_sent: Vec::new(),
            scratch_signals: Vec::new(),
            scratch_rtt_sum: Vec::new(),
            scratch_rtt_n: Vec::new(),
            budget,
            exceeded: None,
            events: 0,
            data_packets: 0,
            mptcp: Mptcp::Ideal,
            tlp: match cfg.options.tlp {
                crate::config::Tlp::Auto => cfg.options.mptcp == crate::config::MptcpMode::Linux,
                t => t == crate::config::Tlp::On,
            },
        };
        let linux_rx = match cfg.options.receiver {
            crate::config::Receiver::Auto => cfg.options.mptcp == crate::config::MptcpMode::Linux,
            r => r == crate::config::Receiver::Linux,
        };
        let mut linux = (cfg.options.mptcp == crate::config::MptcpMode::Linux).then(|| {
            let mut l = mptcp_linux::Linux::new(
                cfg.options.tcp_wmem,
                cfg.options.tcp_rmem,
                cfg.packet_bytes,
                cfg.options.sndbuf_expand,
                cfg.options.sndbuf_per_mss,
                ns(cfg.options.writer_wait_s),
            );
            l.samples = vec![Default::default(); cfg.groups.len()];
            Box::new(l)
        });
        if sim.measure_ns.1 <= sim.measure_ns.0 {
            return Err(format!(
                "measure: the measurement window [{}, {}] s must have t1 > t0 within duration_s",
                cfg.measure.0, cfg.measure.1
            ));
        }
        for (gi, g) in cfg.groups.iter().enumerate() {
            let proto = cc::build(&g.algorithm, &g.params)
                .map_err(|e| format!("groups[{gi}].algorithm: {e}"))?;
            let timers = proto.timers();
            if timers.len() > cc::MAX_TIMERS {
                return Err(format!(
                    "groups[{gi}].algorithm: {} asks for {} periodic updates, at most {}",
                    proto.name(),
                    timers.len(),
                    cc::MAX_TIMERS
                ));
            }
            for (k, &t) in timers.iter().enumerate() {
                // a periodic update shorter than 1 µs would dominate the run (issue #12)
                if !(t >= 1e-6) || !t.is_finite() {
                    return Err(format!(
                        "groups[{gi}].algorithm: periodic update {k} of {} every {t:e} s; use an interval ≥ 1e-6 s",
                        proto.name()
                    ));
                }
            }
            let init_ssthresh = proto.initial_ssthresh(sim.opt.initial_cwnd);
            if g.paths.is_empty() {
                return Err(format!("groups[{gi}].paths: no paths"));
            }
            for (pi, p) in g.paths.iter().enumerate() {
                check_path(p, &format!("groups[{gi}].paths[{pi}]"))?;
            }
            let active_s = (g.stop_s.min(cfg.duration_s) - g.start_s).max(0.0);
            let jitter = sim.opt.start_jitter_s.min(0.1 * active_s).max(0.0);
            for flow in 0..g.count {
                let c = sim.conns.len() as u32;
                let first = sim.sf.len() as u32;
                for (r, p) in g.paths.iter().enumerate() {
                    let path_id = sim.hops.len() as u32;
                    sim.hops.extend(p.iter().copied().chain([NO_HOP]));
                    let rev_ns: u64 = p.iter().map(|&l| links[l as usize].delay_ns).sum();
                    let tx: u64 = p.iter().map(|&l| links[l as usize].tx_ns).sum();
                    let prop_rtt = (2 * rev_ns + tx) as f64 / NS_PER_S;
                    let mut sf = Subflow::new(c, path_id, rev_ns, init_ssthresh);
                    if linux_rx {
                        sf.linux_ack = Some(Box::new(receiver::LinuxAck::new(
                            2 * rev_ns + tx,
                            ns(sim.opt.rto_min_s),
                            (sim.opt.tcp_rmem[1] / mptcp_linux::RX_TRUESIZE).floor(),
                        )));
                    }
                    sim.sf.push(sf);
                    sim.cwnd.push(sim.opt.initial_cwnd);
                    sim.srtt.push(prop_rtt);
                    sim.base_rtt.push(f64::INFINITY);
                    sim.sf_group.push(gi as u32);
                    sim.sf_flow.push(flow);
                    sim.sf_route.push(r as u32);
                }
                let n = g.paths.len();
                if let Some(l) = linux.as_mut() {
                    let delack = if linux_rx {
                        receiver::TCP_DELACK_MAX
                    } else if sim.opt.delayed_ack {
                        ns(sim.opt.delayed_ack_s)
                    } else {
                        0
                    };
                    let rev = sim.sf[first as usize..]
                        .iter()
                        .map(|f| f.rev_ns)
                        .max()
                        .unwrap_or(0);
                    l.add_conn(n, rev + sim.ack_jitter_ns + delack + 1_000_000);
                    for s in first as usize..sim.sf.len() {
                        // (a single-path connection is a TCP socket: its buffer never empties)
                        if n >= 2 {
                            sim.sf[s].data_end = 0;
                        }
                        l.init_pacing(s, sim.srtt[s], sim.opt.initial_cwnd);
                    }
                }
                sim.conns
                    .push(Conn::new(gi as u32, first, n as u32, &*proto));
                sim.ccs.push(proto.connection(n));
                let start = g.start_s + jitter * rng.uniform();
                if ns(start) < end {
                    sim.push(ns(start), K_START, c);
                    for (k, &t) in timers.iter().enumerate() {
                        sim.push(ns(start + t), K_TIMER + k as u64, c);
                    }
                    if g.stop_s < cfg.duration_s {
                        sim.push(ns(g.stop_s), K_STOP, c);
                    }
                }
            }
        }
        let n_routes = sim.conns.iter().map(|c| c.n as usize).max().unwrap_or(0);
        sim.scratch_in_ca = vec![false; n_routes];
        sim.scratch_sent = vec![0; n_routes];
        sim.scratch_signals = vec![0; n_routes];
        sim.scratch_rtt_sum = vec![0.0; n_routes];
        sim.scratch_rtt_n = vec![0; n_routes];
        for (bi, b) in cfg.background.iter().enumerate() {
            check_path(&b.path, &format!("background[{bi}].path"))?;
            let path_id = sim.hops.len() as u32;
            sim.hops.extend(b.path.iter().copied().chain([NO_HOP]));
            sim.bgs.push(
                Background::new(b, path_id, pkt_bits, end)
                    .map_err(|e| format!("background[{bi}].{e}"))?,
            );
            sim.push(ns(b.start_s), K_BG_TOGGLE, bi as u32);
        }
        sim.links = links;
        sim.rng = rng;
        if sim.sample_ns > 0 {
            sim.push(sim.sample_ns, K_SAMPLE, 0);
        }
        if let Some(l) = linux {
            sim.mptcp = Mptcp::Linux(l);
            sim.push(mptcp_linux::SAMPLE_NS, K_MSK_SAMPLE, 0);
        }
        sim.push(sim.measure_ns.0, K_MEASURE, 0);
        sim.push(sim.measure_ns.1, K_MEASURE, 1);
        Ok(sim)
    }

    #[inline]
    fn push(&mut self, t: u64, kind: u64, id: u32) {
        self.queue
            .push(((t as u128) << 64) | ((kind << 32) | id as u64) as u128);
    }

    /// Run to `duration_s` and return the measurements, or the budget that ran out.
    pub fn run(mut self) -> Result<Output, String> {
        self.run_until(f64::INFINITY);
        self.finish()
    }

    /// Simulated duration, seconds.
    pub fn duration_s(&self) -> f64 {
        self.end as f64 / NS_PER_S
    }

    /// Process every event up to simulated time `t_s` (capped at the duration); returns true
    /// when the run is complete (or stopped by its budget). `run_until` + `finish` is `run` in
    /// slices (progress reports).
    pub fn run_until(&mut self, t_s: f64) -> bool {
        let stop = if t_s.is_finite() {
            ns(t_s).min(self.end)
        } else {
            self.end
        };
        while let Some(key) = self.queue.peek() {
            let t = (key >> 64) as u64;
            if t > stop {
                return stop >= self.end;
            }
            if self.events >= self.budget.next_check {
                if let Err(e) = self.budget.check_now(self.events, self.memory_bytes()) {
                    self.exceeded = Some(e);
                    return true;
                }
            }
            self.now = t;
            self.events += 1;
            let tag = key as u64;
            let id = tag as u32;
            let kind = tag >> 32;
            if kind == K_ACK {
                // The subflow's next ACK (if any) becomes its next event.
                let s = id as usize;
                self.queue.pop();
                let ack = self.sf[s].acks.pop_front().expect("ack event without ack");
                if let Some(next) = self.sf[s].acks.front() {
                    let t = next.time;
                    self.push(t, K_ACK, id);
                }
                self.prefetch_next();
                let acked = self.process_ack(s, ack);
                if self.tlp {
                    self.tlp_ack(s, &ack, acked);
                }
                // tcp_ack, mptcp_incoming_options, then tcp_data_snd_check: the subflow sends,
                // then tcp_check_space may expand its buffer
                let linux = matches!(self.mptcp, Mptcp::Linux(_));
                if linux {
                    self.linux_ack(s, &ack);
                }
                self.try_send(s);
                if linux {
                    self.linux_sndbuf_expand(s);
                }
                continue;
            }
            self.queue.pop();
            self.prefetch_next();
            match kind {
                K_PIPE => self.pipe_event(id as usize),
                K_RTO => self.rto_event(id as usize),
                K_DELACK => self.delack_event(id as usize),
                K_START => self.start(id as usize),
                K_STOP => self.stop(id as usize),
                K_BG_TOGGLE => self.bg_toggle(id as usize),
                K_BG_SEND => self.bg_send(id as usize),
                K_SAMPLE => self.sample(),
                K_MSK_SAMPLE => self.linux_sample(),
                K_MSK_RTX => self.linux_rtx_event(id as usize),
                K_MSK_WRITER => self.linux_writer_event(id as usize),
                K_MEASURE => self.snapshot(id as usize),
                k if (K_TIMER..K_BG_TOGGLE).contains(&k) => {
                    self.timer_event(id as usize, (k - K_TIMER) as usize)
                }
                _ => unreachable!(),
            }
        }
        true
    }
}

impl Sim {
    /// Ask the CPU to start loading the state that the next event in the queue will touch
    /// (its link), while this one is processed. A hint only: if this event schedules an
    /// earlier one, the load was merely wasted. On a fat tree most links are out of cache, and
    /// this hides much of the wait for them.
    #[inline(always)]
    fn prefetch_next(&self) {
        if let Some(key) = self.queue.peek_cheap() {
            let tag = key as u64;
            let kind = tag >> 32;
            if kind == K_PIPE {
                if let Some(l) = self.links.get(tag as u32 as usize) {
                    // the queue state and the pipe's head (link.rs: the first two lines)
                    prefetch(l, 128);
                }
            } else if kind == K_ACK {
                if let Some(sf) = self.sf.get(tag as u32 as usize) {
                    // the ACK itself (the ring was written one reverse delay ago) and the
                    // sender's state that `process_ack` reads
                    if let Some(a) = sf.acks.front() {
                        prefetch(a, 32);
                    }
                    prefetch(sf, std::mem::size_of::<Subflow>());
                }
            }
        }
    }
}

/// Hint the CPU to load the cache lines of the first `bytes` of `*x` (a hint: it never
/// faults; other architectures skip it).
#[inline(always)]
#[allow(unused_variables)]
fn prefetch<T>(x: &T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = x as *const T as *const i8;
        for off in (0..bytes.min(std::mem::size_of::<T>())).step_by(64) {
            // SAFETY: prefetching never faults, and every address is inside `*x`.
            unsafe { _mm_prefetch(p.wrapping_add(off), _MM_HINT_T0) };
        }
    }
}

/// Parse a JSON run description and simulate it.
pub fn run_json(config: &str) -> Result<Output, String> {
    let cfg = crate::config::parse(config)?;
    Sim::new(&cfg)?.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> Sim {
        let cfg = crate::config::parse(
            r#"{"duration_s": 1, "measure": [0, 1],
            "links": [{"capacity_mbps": 10, "delay_ms": 1, "buffer_pkts": 10}], "groups": []}"#,
        )
        .unwrap();
        Sim::new(&cfg).unwrap()
    }

    /// The queue orders events by time, then by kind (the documented tie-break), then by id.
    #[test]
    fn events_pop_by_time_then_kind_then_id() {
        let mut s = sim();
        s.queue.clear();
        s.push(5, K_RTO, 1);
        s.push(5, K_START, 2);
        s.push(3, K_SAMPLE, 0);
        s.push(5, K_START, 1);
        s.push(5, K_TIMER + 1, 0);
        let order: Vec<(u64, u64, u32)> = std::iter::from_fn(|| s.queue.pop())
            .map(|k| ((k >> 64) as u64, (k as u64) >> 32, k as u32))
            .collect();
        assert_eq!(
            order,
            vec![
                (3, K_SAMPLE, 0),
                (5, K_START, 1),
                (5, K_START, 2),
                (5, K_RTO, 1),
                (5, K_TIMER + 1, 0)
            ]
        );
        // controller timers sort after the TCP timers and before background traffic
        assert!(K_RTO < K_TIMER && K_TIMER + cc::MAX_TIMERS as u64 <= K_BG_TOGGLE);
    }

    /// `run_until` in slices ends where one `run` does.
    #[test]
    fn sliced_run_equals_one_run() {
        let json = r#"{"duration_s": 5, "seed": 4, "measure": [1, 5],
            "links": [{"capacity_mbps": 10, "delay_ms": 5, "buffer_pkts": 30}],
            "groups": [{"algorithm": "olia", "count": 2, "paths": [[0], [0]], "stop_s": 5}]}"#;
        let cfg = crate::config::parse(json).unwrap();
        let one = Sim::new(&cfg).unwrap().run().unwrap();
        let mut s = Sim::new(&cfg).unwrap();
        let mut t = 0.0;
        while !s.run_until(t) {
            t += 0.37;
        }
        let sliced = s.finish().unwrap();
        assert_eq!(
            (one.events, one.data_packets),
            (sliced.events, sliced.data_packets)
        );
        assert_eq!(one.u64("sf_delivered"), sliced.u64("sf_delivered"));
    }
}
