//! The packet-level discrete-event simulator.
//!
//! Model. Links are FIFO servers with a fixed serialization time per packet (`packet_bytes`
//! at the link capacity), a propagation delay and a buffer of `buffer_pkts` packets (including
//! the one being transmitted), drop-tail or RED (Floyd & Jacobson, optional gentle mode and
//! ECN marking), plus optional random loss. Every route of every connection is one TCP
//! subflow: sender (slow start, congestion avoidance with the connection's coupled
//! controller, SACK-based loss detection (RACK: a segment is lost once a later-sent one is delivered), one window reduction per
//! recovery episode, RTO with Linux's 200 ms minimum and exponential backoff) and receiver
//! (cumulative ACK + the SACKed segment, optional delayed ACKs). The reverse (ACK) path mirrors
//! the forward propagation delays and is never congested.
//!
//! Events. Time is integer nanoseconds. Because a link is FIFO with a constant service time,
//! a packet's departure time is known when it is enqueued (`busy_until + tx`), so a link needs
//! no per-packet departure event: it keeps a ring of departure times (its queue) and, for
//! multi-hop paths, a ring ("pipe") of packets propagating to the next hop with one heap entry
//! for the pipe's head. The receiver of a subflow sees that subflow's packets in the order they
//! are accepted by the last link, so its ACK is computed at that moment and appended to the
//! subflow's ACK ring (ACKs of a subflow arrive in order after a constant delay); again one
//! heap entry per ring head. Timers (RTO, delayed ACK) are lazy: a stale heap entry is skipped.
//! On single-link paths a data packet therefore costs one heap push and pop (its ACK).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::cc::{self, Controller, Subflows};
use crate::config::{Config, Options, RedCfg};
use crate::rng::Rng;

const NS_PER_S: f64 = 1e9;

fn ns(s: f64) -> u64 {
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
const K_FAST: u64 = 6;
const K_ADAPT: u64 = 7;
const K_BG_TOGGLE: u64 = 8;
const K_BG_SEND: u64 = 9;
const K_STOP: u64 = 10;
const K_SAMPLE: u64 = 11;

/// Owner ids with this bit set are background (UDP) sources, otherwise subflows.
const BG: u32 = 1 << 31;

// Scoreboard flags of a sent segment.
const SACKED: u8 = 1;
const LOST: u8 = 2;
const RETRANS: u8 = 4;
const INFLIGHT: u8 = 8;

// Congestion states (Linux tcp_ca_state).
const OPEN: u8 = 0;
const CWR: u8 = 1;
const RECOVERY: u8 = 2;
const LOSS: u8 = 3;

const MAX_RTO_NS: u64 = 120_000_000_000;

/// A data packet on the forward path (24 bytes).
#[derive(Debug, Clone, Copy, Default)]
struct Pkt {
    /// Send time (the TCP timestamp echoed by the ACK), ns.
    ts: u64,
    owner: u32,
    seq: u32,
    hop: u8,
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
    ece: bool,
}

struct Link {
    tx_ns: u64,
    delay_ns: u64,
    buffer: u32,
    busy_until: u64,
    /// Departure times of the packets in the queue (the head one is in transmission).
    departs: VecDeque<u64>,
    /// Packets propagating to their next hop: (arrival time there, packet).
    pipe: VecDeque<(u64, Pkt)>,
    red: Option<RedCfg>,
    red_avg: f64,
    red_count: i64,
    loss: f64,
    arrivals: u64,
    drops: u64,
    marks: u64,
    accepted: u64,
    max_queue: u32,
}

impl Link {
    fn queue_at(&mut self, now: u64) -> u32 {
        while let Some(&d) = self.departs.front() {
            if d <= now {
                self.departs.pop_front();
            } else {
                break;
            }
        }
        self.departs.len() as u32
    }
}

#[derive(Default)]
struct Subflow {
    conn: u32,
    path: u32,
    /// Reverse-path (ACK) delay: Σ one-way delays of the path.
    rev_ns: u64,
    // --- sender
    snd_una: u32,
    snd_nxt: u32,
    inflight: u32,
    /// RACK: send time and sequence of the most recently sent segment known delivered.
    rack_ts: u64,
    rack_seq: u32,
    /// Transmissions in send order (seq, send time); stale entries are skipped.
    tsorted: VecDeque<(u32, u64)>,
    /// Latest transmission time of every outstanding segment (ring like `sb`).
    xmit_ts: Vec<u64>,
    ssthresh: f64,
    state: u8,
    recover: u32,
    have_rtt: bool,
    rttvar: f64,
    rto_ns: u64,
    backoff: u32,
    rto_deadline: u64,
    rto_timer_at: u64,
    sb: Vec<u8>,
    mask: u32,
    retx: VecDeque<u32>,
    acks: VecDeque<Ack>,
    /// OLIA's loss markers (mptcp_olia.c `mptcp_loss1..3`, here in packets): snd_una at the
    /// loss before last, at the last loss, and at the latest ACK that reached cong_avoid.
    olia_loss: [u32; 3],
    /// OLIA's fixed-point window counter (mptcp_olia.c `mptcp_snd_cwnd_cnt`, 2^−10 packets).
    olia_cnt: i64,
    // FAST: RTT samples over the update interval; Algorithm 2 accumulators.
    rtt_sum: f64,
    rtt_n: u32,
    a_rtt_sum: f64,
    a_rtt_n: u64,
    a_sent: u64,
    a_lost: u64,
    // --- receiver
    rcv_nxt: u32,
    ooo: VecDeque<bool>,
    delack_pending: bool,
    delack_at: u64,
    last_ack_time: u64,
    pending_ack: Ack,
    // --- statistics (cumulative)
    delivered: u64,
    sent: u64,
    retrans: u64,
    drops: u64,
    marks: u64,
    loss_events: u64,
    timeouts: u64,
    delivered_sample: u64,
    /// Σ over loss events in the measurement window of (w_r − w_r') / Σ_k w_k, and their count:
    /// the empirical D_s of Peng et al. §III-F (relative decrease of the total window per loss).
    ds_sum: f64,
    ds_n: u64,
}

struct Conn {
    group: u32,
    first: u32,
    n: u32,
    active: bool,
    alpha: f64,
}

struct Background {
    path: u32,
    interval_ns: u64,
    mean_on_s: f64,
    mean_off_s: f64,
    stop_ns: u64,
    on: bool,
    next_send: u64,
}

/// Counters at one instant, for the measurement window.
#[derive(Clone, Default)]
struct Snapshot {
    taken: bool,
    sf: Vec<[u64; 7]>,
    link: Vec<[u64; 4]>,
}

/// A column of the output.
pub enum Column {
    F64(Vec<f64>),
    U64(Vec<u64>),
    U32(Vec<u32>),
}

/// What a run returns: named columns (per subflow, per link, time series) and counters.
pub struct Output {
    pub columns: Vec<(&'static str, Column)>,
    pub events: u64,
    pub data_packets: u64,
}

impl Output {
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c)
    }
    pub fn f64(&self, name: &str) -> &[f64] {
        match self.get(name) {
            Some(Column::F64(v)) => v,
            _ => panic!("no f64 column {name}"),
        }
    }
    pub fn u64(&self, name: &str) -> &[u64] {
        match self.get(name) {
            Some(Column::U64(v)) => v,
            _ => panic!("no u64 column {name}"),
        }
    }
    pub fn u32(&self, name: &str) -> &[u32] {
        match self.get(name) {
            Some(Column::U32(v)) => v,
            _ => panic!("no u32 column {name}"),
        }
    }
}

pub struct Sim {
    opt: Options,
    pkt_bits: f64,
    now: u64,
    end: u64,
    heap: BinaryHeap<Reverse<u128>>,
    rng: Rng,
    links: Vec<Link>,
    paths: Vec<Vec<u32>>,
    // Per subflow, contiguous per connection: the controller's view.
    cwnd: Vec<f64>,
    srtt: Vec<f64>,
    loss_interval: Vec<f64>,
    base_rtt: Vec<f64>,
    sf: Vec<Subflow>,
    sf_group: Vec<u32>,
    sf_flow: Vec<u32>,
    sf_route: Vec<u32>,
    conns: Vec<Conn>,
    ccs: Vec<Box<dyn Controller>>,
    /// Per group: the controller is OLIA, whose window update follows mptcp_olia.c.
    olia: Vec<bool>,
    bgs: Vec<Background>,
    sample_ns: u64,
    ack_jitter_ns: u64,
    measure_ns: (u64, u64),
    snaps: [Snapshot; 2],
    // time series
    ts_sf_time: Vec<f64>,
    ts_sf_id: Vec<u32>,
    ts_cwnd: Vec<f64>,
    ts_srtt: Vec<f64>,
    ts_rate: Vec<f64>,
    ts_losses: Vec<u64>,
    ts_link_time: Vec<f64>,
    ts_link_id: Vec<u32>,
    ts_queue: Vec<u32>,
    ts_drops: Vec<u64>,
    /// FAST Algorithm 2 log: (time s, first subflow of the connection, new α, q s, l).
    fast_log: Vec<(f64, u32, f64, f64, f64)>,
    events: u64,
    data_packets: u64,
}

impl Sim {
    pub fn new(cfg: &Config) -> Result<Sim, String> {
        let opt = cfg.options.clone();
        if !(cfg.duration_s > 0.0) {
            return Err("duration_s must be > 0".into());
        }
        let pkt_bits = cfg.packet_bytes as f64 * 8.0;
        let end = ns(cfg.duration_s);
        let mut rng = Rng::new(cfg.seed);
        let mut links = Vec::with_capacity(cfg.links.len());
        for (i, l) in cfg.links.iter().enumerate() {
            if !(l.capacity_mbps > 0.0) || l.buffer_pkts == 0 || l.delay_ms < 0.0 {
                return Err(format!(
                    "link {i}: capacity and buffer must be > 0, delay ≥ 0"
                ));
            }
            links.push(Link {
                tx_ns: ns(pkt_bits / (l.capacity_mbps * 1e6)).max(1),
                delay_ns: ns(l.delay_ms * 1e-3),
                buffer: l.buffer_pkts,
                busy_until: 0,
                departs: VecDeque::with_capacity(l.buffer_pkts.min(4096) as usize),
                pipe: VecDeque::new(),
                red: l.red.clone(),
                red_avg: 0.0,
                red_count: -1,
                loss: l.loss,
                arrivals: 0,
                drops: 0,
                marks: 0,
                accepted: 0,
                max_queue: 0,
            });
        }
        let check_path = |p: &Vec<u32>| -> Result<(), String> {
            if p.is_empty() || p.iter().any(|&l| l as usize >= links.len()) {
                Err(format!("path {p:?} refers to a link that does not exist"))
            } else {
                Ok(())
            }
        };
        let mut sim = Sim {
            opt,
            pkt_bits,
            now: 0,
            end,
            heap: BinaryHeap::new(),
            rng: Rng::new(0),
            links: Vec::new(),
            paths: Vec::new(),
            cwnd: Vec::new(),
            srtt: Vec::new(),
            loss_interval: Vec::new(),
            base_rtt: Vec::new(),
            sf: Vec::new(),
            sf_group: Vec::new(),
            sf_flow: Vec::new(),
            sf_route: Vec::new(),
            conns: Vec::new(),
            ccs: Vec::new(),
            olia: Vec::new(),
            bgs: Vec::new(),
            sample_ns: ns(cfg.sample_interval_s),
            ack_jitter_ns: ns(cfg.options.host_jitter_s),
            measure_ns: (ns(cfg.measure.0).min(end), ns(cfg.measure.1).min(end)),
            snaps: Default::default(),
            ts_sf_time: Vec::new(),
            ts_sf_id: Vec::new(),
            ts_cwnd: Vec::new(),
            ts_srtt: Vec::new(),
            ts_rate: Vec::new(),
            ts_losses: Vec::new(),
            ts_link_time: Vec::new(),
            ts_link_id: Vec::new(),
            ts_queue: Vec::new(),
            ts_drops: Vec::new(),
            fast_log: Vec::new(),
            events: 0,
            data_packets: 0,
        };
        if sim.measure_ns.1 <= sim.measure_ns.0 {
            return Err("measurement window must have t1 > t0".into());
        }
        for (gi, g) in cfg.groups.iter().enumerate() {
            let algo =
                cc::build(&g.algorithm, &g.params).map_err(|e| format!("group {gi}: {e}"))?;
            let fast_params = algo
                .fast()
                .map(|f| (f.alpha, f.update_interval_s, f.adapt_interval_s));
            sim.olia.push(algo.name() == "olia");
            sim.ccs.push(algo);
            for p in &g.paths {
                check_path(p)?;
            }
            if g.paths.is_empty() {
                return Err(format!("group {gi}: no paths"));
            }
            let active_s = (g.stop_s.min(cfg.duration_s) - g.start_s).max(0.0);
            let jitter = sim.opt.start_jitter_s.min(0.1 * active_s).max(0.0);
            for flow in 0..g.count {
                let c = sim.conns.len() as u32;
                let first = sim.sf.len() as u32;
                for (r, p) in g.paths.iter().enumerate() {
                    let path_id = sim.paths.len() as u32;
                    sim.paths.push(p.clone());
                    let rev_ns: u64 = p.iter().map(|&l| links[l as usize].delay_ns).sum();
                    let tx: u64 = p.iter().map(|&l| links[l as usize].tx_ns).sum();
                    let prop_rtt = (2 * rev_ns + tx) as f64 / NS_PER_S;
                    let init_ssthresh = if fast_params.is_some() {
                        sim.opt.initial_cwnd
                    } else {
                        f64::INFINITY
                    };
                    sim.sf.push(Subflow {
                        conn: c,
                        path: path_id,
                        rev_ns,
                        ssthresh: init_ssthresh,
                        rto_ns: ns(1.0),
                        rto_timer_at: u64::MAX,
                        sb: vec![0; 64],
                        xmit_ts: vec![0; 64],
                        mask: 63,
                        ..Default::default()
                    });
                    sim.cwnd.push(sim.opt.initial_cwnd);
                    sim.srtt.push(prop_rtt);
                    sim.loss_interval.push(0.0);
                    sim.base_rtt.push(f64::INFINITY);
                    sim.sf_group.push(gi as u32);
                    sim.sf_flow.push(flow);
                    sim.sf_route.push(r as u32);
                }
                sim.conns.push(Conn {
                    group: gi as u32,
                    first,
                    n: g.paths.len() as u32,
                    active: false,
                    alpha: fast_params.map(|f| f.0).unwrap_or(0.0),
                });
                let start = g.start_s + jitter * rng.uniform();
                if ns(start) < end {
                    sim.push(ns(start), K_START, c);
                    if let Some((_, upd, adapt)) = fast_params {
                        sim.push(ns(start + upd), K_FAST, c);
                        if adapt > 0.0 {
                            sim.push(ns(start + adapt), K_ADAPT, c);
                        }
                    }
                    if g.stop_s < cfg.duration_s {
                        sim.push(ns(g.stop_s), K_STOP, c);
                    }
                }
            }
        }
        for (bi, b) in cfg.background.iter().enumerate() {
            check_path(&b.path)?;
            if !(b.rate_mbps > 0.0) {
                return Err(format!("background {bi}: rate must be > 0"));
            }
            let path_id = sim.paths.len() as u32;
            sim.paths.push(b.path.clone());
            sim.bgs.push(Background {
                path: path_id,
                interval_ns: ns(pkt_bits / (b.rate_mbps * 1e6)).max(1),
                mean_on_s: b.mean_on_s,
                mean_off_s: b.mean_off_s,
                stop_ns: ns(b.stop_s).min(end),
                on: false,
                next_send: 0,
            });
            sim.push(ns(b.start_s), K_BG_TOGGLE, bi as u32);
        }
        sim.links = links;
        sim.rng = rng;
        if sim.sample_ns > 0 {
            sim.push(sim.sample_ns, K_SAMPLE, 0);
        }
        sim.push(sim.measure_ns.0, K_MEASURE, 0);
        sim.push(sim.measure_ns.1, K_MEASURE, 1);
        Ok(sim)
    }

    #[inline]
    fn push(&mut self, t: u64, kind: u64, id: u32) {
        self.heap.push(Reverse(
            ((t as u128) << 64) | ((kind << 32) | id as u64) as u128,
        ));
    }

    /// Run to `duration_s` and return the measurements.
    pub fn run(mut self) -> Output {
        self.run_until(f64::INFINITY);
        self.finish()
    }

    /// Simulated duration, seconds.
    pub fn duration_s(&self) -> f64 {
        self.end as f64 / NS_PER_S
    }

    /// Process every event up to simulated time `t_s` (capped at the duration); returns true
    /// when the run is complete. `run_until` + `finish` is `run` in slices (progress reports).
    pub fn run_until(&mut self, t_s: f64) -> bool {
        let stop = if t_s.is_finite() {
            ns(t_s).min(self.end)
        } else {
            self.end
        };
        while let Some(&Reverse(key)) = self.heap.peek() {
            let t = (key >> 64) as u64;
            if t > stop {
                return stop >= self.end;
            }
            self.now = t;
            self.events += 1;
            let tag = key as u64;
            let id = tag as u32;
            let kind = tag >> 32;
            if kind == K_ACK {
                // The subflow's next ACK (if any) replaces this entry at the top of the heap:
                // one sift-down instead of a pop and a push.
                let s = id as usize;
                let ack = self.sf[s].acks.pop_front().expect("ack event without ack");
                match self.sf[s].acks.front() {
                    Some(next) => {
                        let k = ((next.time as u128) << 64) | key as u64 as u128;
                        *self.heap.peek_mut().unwrap() = Reverse(k);
                    }
                    None => {
                        self.heap.pop();
                    }
                }
                self.process_ack(s, ack);
                self.try_send(s);
                continue;
            }
            self.heap.pop();
            match kind {
                K_PIPE => self.pipe_event(id as usize),
                K_RTO => self.rto_event(id as usize),
                K_DELACK => self.delack_event(id as usize),
                K_START => self.start(id as usize),
                K_STOP => self.stop(id as usize),
                K_FAST => self.fast_event(id as usize),
                K_ADAPT => self.adapt_event(id as usize),
                K_BG_TOGGLE => self.bg_toggle(id as usize),
                K_BG_SEND => self.bg_send(id as usize),
                K_SAMPLE => self.sample(),
                K_MEASURE => self.snapshot(id as usize),
                _ => unreachable!(),
            }
        }
        true
    }

    // ------------------------------------------------------------------ links and forwarding
    /// Offer a packet to link `l` at `now`: drop (random loss, full buffer, RED) or accept and
    /// return its departure time.
    fn enqueue(&mut self, l: usize, pkt: &mut Pkt, now: u64) -> Option<u64> {
        let link = &mut self.links[l];
        let q = link.queue_at(now);
        link.arrivals += 1;
        if link.loss > 0.0 && self.rng.uniform() < link.loss {
            link.drops += 1;
            return None;
        }
        if q >= link.buffer {
            link.drops += 1;
            return None;
        }
        if let Some(red) = &link.red {
            // Average queue: EWMA with weight w_q at each arrival; after an idle period the
            // average decays as if m = idle/tx packets had arrived to an empty queue.
            if q == 0 {
                let m = now.saturating_sub(link.busy_until) as f64 / link.tx_ns as f64;
                link.red_avg *= (1.0 - red.weight).powf(m + 1.0);
            } else {
                link.red_avg += red.weight * (q as f64 - link.red_avg);
            }
            let avg = link.red_avg;
            let hard = if red.gentle {
                2.0 * red.max_th
            } else {
                red.max_th
            };
            let act = if avg < red.min_th {
                link.red_count = -1;
                false
            } else if avg < hard {
                link.red_count += 1;
                let pb = if avg < red.max_th {
                    red.max_p * (avg - red.min_th) / (red.max_th - red.min_th)
                } else {
                    red.max_p + (1.0 - red.max_p) * (avg - red.max_th) / red.max_th
                };
                let denom = 1.0 - link.red_count as f64 * pb;
                let pa = if denom <= pb { 1.0 } else { pb / denom };
                if self.rng.uniform() < pa {
                    link.red_count = 0;
                    true
                } else {
                    false
                }
            } else {
                link.red_count = 0;
                true
            };
            if act {
                if red.ecn && pkt.ect {
                    pkt.ce = true;
                    link.marks += 1;
                } else {
                    link.drops += 1;
                    return None;
                }
            }
        }
        let depart = link.busy_until.max(now) + link.tx_ns;
        link.busy_until = depart;
        link.departs.push_back(depart);
        link.accepted += 1;
        link.max_queue = link.max_queue.max(q + 1);
        Some(depart)
    }

    fn forward(&mut self, mut pkt: Pkt, now: u64) {
        let bg = pkt.owner & BG != 0;
        let path_id = if bg {
            self.bgs[(pkt.owner & !BG) as usize].path
        } else {
            self.sf[pkt.owner as usize].path
        };
        let path = &self.paths[path_id as usize];
        let l = path[pkt.hop as usize] as usize;
        let last = pkt.hop as usize + 1 == path.len();
        let was_ce = pkt.ce;
        match self.enqueue(l, &mut pkt, now) {
            None => {
                if !bg {
                    self.sf[pkt.owner as usize].drops += 1;
                }
            }
            Some(depart) => {
                if pkt.ce && !was_ce && !bg {
                    self.sf[pkt.owner as usize].marks += 1;
                }
                let arrive = depart + self.links[l].delay_ns;
                if last {
                    if !bg {
                        self.receive(pkt, arrive);
                    }
                } else {
                    pkt.hop += 1;
                    let pipe = &mut self.links[l].pipe;
                    pipe.push_back((arrive, pkt));
                    if pipe.len() == 1 {
                        self.push(arrive, K_PIPE, l as u32);
                    }
                }
            }
        }
    }

    fn pipe_event(&mut self, l: usize) {
        let (_, pkt) = self.links[l]
            .pipe
            .pop_front()
            .expect("pipe event without packet");
        if let Some(&(t, _)) = self.links[l].pipe.front() {
            self.push(t, K_PIPE, l as u32);
        }
        self.forward(pkt, self.now);
    }

    // ------------------------------------------------------------------ receiver
    fn emit_ack(&mut self, s: usize, mut ack: Ack) {
        // Host jitter: a random delay (sender/receiver processing) that breaks the phase
        // effects of a perfectly deterministic network; ACKs of a subflow stay in order.
        if self.ack_jitter_ns > 0 {
            ack.time += (self.rng.uniform() * self.ack_jitter_ns as f64) as u64;
        }
        let sf = &mut self.sf[s];
        if let Some(last) = sf.acks.back() {
            ack.time = ack.time.max(last.time);
        } else {
            ack.time = ack.time.max(sf.last_ack_time);
        }
        sf.last_ack_time = ack.time;
        sf.acks.push_back(ack);
        if sf.acks.len() == 1 {
            self.push(ack.time, K_ACK, s as u32);
        }
    }

    /// Packet `pkt` reaches its receiver at `arrive` (computed when the last link accepted it).
    fn receive(&mut self, pkt: Pkt, arrive: u64) {
        let s = pkt.owner as usize;
        let delayed = self.opt.delayed_ack;
        let sf = &mut self.sf[s];
        if sf.delack_pending && sf.delack_at <= arrive {
            // the delayed-ACK timer expired before this packet arrived
            sf.delack_pending = false;
            let mut a = sf.pending_ack;
            a.time = sf.delack_at + sf.rev_ns;
            self.emit_ack(s, a);
        }
        let sf = &mut self.sf[s];
        let in_order = pkt.seq == sf.rcv_nxt && sf.ooo.is_empty();
        if in_order {
            sf.rcv_nxt += 1; // the common case: no hole, nothing buffered
        } else if pkt.seq >= sf.rcv_nxt {
            let idx = (pkt.seq - sf.rcv_nxt) as usize;
            if idx >= sf.ooo.len() {
                sf.ooo.resize(idx + 1, false);
            }
            sf.ooo[idx] = true;
            while sf.ooo.front() == Some(&true) {
                sf.ooo.pop_front();
                sf.rcv_nxt += 1;
            }
        }
        let ack = Ack {
            time: arrive + sf.rev_ns,
            ts: pkt.ts,
            cum: sf.rcv_nxt,
            seq: pkt.seq,
            ece: pkt.ce,
        };
        if delayed && in_order && !pkt.ce {
            if sf.delack_pending {
                // second full segment: ACK both now; echo the first one's timestamp (RFC 7323)
                sf.delack_pending = false;
                let mut a = ack;
                a.ts = sf.pending_ack.ts;
                self.emit_ack(s, a);
            } else {
                sf.delack_pending = true;
                sf.pending_ack = ack;
                sf.delack_at = arrive + ns(self.opt.delayed_ack_s);
                let t = sf.delack_at;
                self.push(t, K_DELACK, s as u32);
            }
        } else {
            sf.delack_pending = false; // covered by this (immediate) ACK
            self.emit_ack(s, ack);
        }
    }

    fn delack_event(&mut self, s: usize) {
        let sf = &mut self.sf[s];
        if sf.delack_pending && sf.delack_at == self.now {
            sf.delack_pending = false;
            let mut a = sf.pending_ack;
            a.time = self.now + sf.rev_ns;
            self.emit_ack(s, a);
        }
    }

    // ------------------------------------------------------------------ sender
    #[inline]
    fn view(&self, c: usize) -> (Subflows<'_>, usize) {
        let conn = &self.conns[c];
        let (a, b) = (conn.first as usize, (conn.first + conn.n) as usize);
        (
            Subflows {
                cwnd: &self.cwnd[a..b],
                rtt: &self.srtt[a..b],
                loss_interval: &self.loss_interval[a..b],
                base_rtt: &self.base_rtt[a..b],
            },
            conn.group as usize,
        )
    }

    fn arm_rto(&mut self, s: usize, deadline: u64) {
        let sf = &mut self.sf[s];
        sf.rto_deadline = deadline;
        if deadline != 0 && deadline < sf.rto_timer_at {
            sf.rto_timer_at = deadline;
            self.push(deadline, K_RTO, s as u32);
        }
    }

    fn rto_backed_off(sf: &Subflow) -> u64 {
        (sf.rto_ns << sf.backoff.min(16)).min(MAX_RTO_NS)
    }

    /// Send while the window allows: lost segments first (lowest sequence), then new data
    /// (the application always has data: unlimited send buffer and receive window).
    fn try_send(&mut self, s: usize) {
        let c = self.sf[s].conn as usize;
        if !self.conns[c].active {
            return;
        }
        let now = self.now;
        let ect = self.opt.ecn;
        loop {
            let win = self.cwnd[s].max(1.0) as u32;
            let sf = &mut self.sf[s];
            if sf.inflight >= win {
                break;
            }
            let mut retx = None;
            while let Some(q) = sf.retx.pop_front() {
                let f = sf.sb[(q & sf.mask) as usize];
                if q >= sf.snd_una && f & LOST != 0 && f & (SACKED | INFLIGHT) == 0 {
                    retx = Some(q);
                    break;
                }
            }
            let seq = match retx {
                Some(q) => {
                    sf.sb[(q & sf.mask) as usize] |= RETRANS | INFLIGHT;
                    sf.retrans += 1;
                    q
                }
                None => {
                    if (sf.snd_nxt - sf.snd_una) as usize >= sf.sb.len() {
                        grow_scoreboard(sf);
                    }
                    let q = sf.snd_nxt;
                    sf.sb[(q & sf.mask) as usize] = INFLIGHT;
                    sf.snd_nxt += 1;
                    q
                }
            };
            sf.xmit_ts[(seq & sf.mask) as usize] = now;
            sf.tsorted.push_back((seq, now));
            sf.inflight += 1;
            sf.sent += 1;
            sf.a_sent += 1;
            if sf.rto_deadline == 0 {
                let d = now + Self::rto_backed_off(sf);
                self.arm_rto(s, d);
            }
            self.data_packets += 1;
            self.forward(
                Pkt {
                    ts: now,
                    owner: s as u32,
                    seq,
                    hop: 0,
                    ce: false,
                    ect,
                },
                now,
            );
        }
    }

    fn process_ack(&mut self, s: usize, ack: Ack) {
        let now = self.now;
        // FAST reacts to queueing delay, not to ECN marks (Tang et al. §II-B); loss still halves.
        let ecn_reacts = self.ccs[self.conns[self.sf[s].conn as usize].group as usize]
            .fast()
            .is_none();
        let rto_min = self.opt.rto_min_s;
        let sf = &mut self.sf[s];
        // RTT sample from the echoed timestamp (valid for retransmissions too); RFC 6298
        // smoothing; Linux RTO = srtt + max(4·rttvar, rto_min).
        let r = (now - ack.ts) as f64 / NS_PER_S;
        if sf.have_rtt {
            sf.rttvar = 0.75 * sf.rttvar + 0.25 * (self.srtt[s] - r).abs();
            self.srtt[s] = 0.875 * self.srtt[s] + 0.125 * r;
        } else {
            sf.have_rtt = true;
            self.srtt[s] = r;
            sf.rttvar = r / 2.0;
        }
        sf.rto_ns =
            (((self.srtt[s] + (4.0 * sf.rttvar).max(rto_min)) * NS_PER_S) as u64).min(MAX_RTO_NS);
        if r < self.base_rtt[s] {
            self.base_rtt[s] = r;
        }
        sf.rtt_sum += r;
        sf.rtt_n += 1;
        sf.a_rtt_sum += r;
        sf.a_rtt_n += 1;

        // The segment that triggered this ACK is SACKed; the cumulative ACK covers the rest.
        let mut delivered = 0u64;
        if ack.seq >= sf.snd_una && ack.seq < sf.snd_nxt {
            let i = (ack.seq & sf.mask) as usize;
            let f = sf.sb[i];
            if f & SACKED == 0 {
                if f & INFLIGHT != 0 {
                    sf.inflight -= 1;
                }
                sf.sb[i] = SACKED;
                delivered += 1;
            }
        }
        // RACK: the delivered transmission is the one whose timestamp the ACK echoes.
        if (ack.ts, ack.seq) > (sf.rack_ts, sf.rack_seq) {
            sf.rack_ts = ack.ts;
            sf.rack_seq = ack.seq;
        }
        let advanced = ack.cum > sf.snd_una;
        if advanced {
            for q in sf.snd_una..ack.cum {
                let i = (q & sf.mask) as usize;
                let f = sf.sb[i];
                if f & SACKED == 0 {
                    delivered += 1;
                    if f & INFLIGHT != 0 {
                        sf.inflight -= 1;
                    }
                }
                sf.sb[i] = 0;
            }
            sf.snd_una = ack.cum;
            sf.backoff = 0;
        }
        // Loss detection (RACK, RFC 8985, with a zero reordering window: the network never
        // reorders a subflow's packets): a transmission is lost when one sent after it has
        // been delivered. Lost retransmissions are detected the same way.
        let mut newly_lost = 0u64;
        while let Some(&(q, ts)) = sf.tsorted.front() {
            if (ts, q) >= (sf.rack_ts, sf.rack_seq) {
                break;
            }
            sf.tsorted.pop_front();
            if q < sf.snd_una {
                continue;
            }
            let i = (q & sf.mask) as usize;
            let f = sf.sb[i];
            if f & SACKED != 0 || sf.xmit_ts[i] != ts || f & INFLIGHT == 0 {
                continue; // delivered, or a newer transmission of q exists, or already lost
            }
            sf.inflight -= 1;
            sf.sb[i] = LOST | (f & RETRANS);
            sf.retx.push_back(q);
            newly_lost += 1;
        }
        sf.delivered += delivered;
        // Algorithm 2's l counts ECN marks like losses (RED marks instead of dropping, §II-B).
        sf.a_lost += newly_lost + ack.ece as u64;
        if advanced {
            let d = if sf.snd_una < sf.snd_nxt {
                now + Self::rto_backed_off(sf)
            } else {
                0
            };
            self.arm_rto(s, d);
        }
        let sf = &mut self.sf[s];
        if sf.state != OPEN && sf.snd_una >= sf.recover {
            sf.state = OPEN;
        }
        // One window reduction per recovery episode (loss) or per window of data (ECN).
        if newly_lost > 0 {
            match sf.state {
                OPEN => {
                    sf.state = RECOVERY;
                    sf.recover = sf.snd_nxt;
                    self.reduce(s);
                }
                CWR => {
                    sf.state = RECOVERY;
                    sf.recover = sf.snd_nxt;
                }
                _ => {}
            }
        } else if ack.ece && ecn_reacts && sf.state == OPEN {
            sf.state = CWR;
            sf.recover = sf.snd_nxt;
            self.reduce(s);
        }
        let st = self.sf[s].state;
        if (st == OPEN || st == LOSS) && delivered > 0 {
            // the ACK reaches cong_avoid: OLIA's marker mptcp_loss3 = snd_una
            let sf = &mut self.sf[s];
            sf.olia_loss[2] = sf.snd_una;
            self.loss_interval[s] = Self::olia_ell(&sf.olia_loss);
            let d = if self.opt.per_ack_increase { 1.0 } else { delivered as f64 };
            self.increase(s, d);
        }
    }

    /// OLIA's ℓ_r = max(mptcp_loss3 − mptcp_loss2, mptcp_loss2 − mptcp_loss1): packets
    /// acknowledged since the last loss, and between the last two losses (mptcp_olia.c).
    #[inline]
    fn olia_ell(m: &[u32; 3]) -> f64 {
        m[2].wrapping_sub(m[1]).max(m[1].wrapping_sub(m[0])) as f64
    }

    /// Slow start below ssthresh (one packet per delivered packet), then the controller's
    /// I_r per delivered packet (Linux counts SACKed packets as delivered too). OLIA follows
    /// mptcp_olia_cong_avoid() instead (see `increase_olia`).
    fn increase(&mut self, s: usize, mut d: f64) {
        let c = self.sf[s].conn as usize;
        if self.olia[self.conns[c].group as usize] {
            self.increase_olia(s);
            return;
        }
        let ss = self.sf[s].ssthresh;
        let w = self.cwnd[s];
        if self.opt.slow_start_at_ssthresh && w <= ss {
            self.cwnd[s] += d;
            return;
        }
        if w < ss {
            let inc = (ss - w).min(d);
            self.cwnd[s] += inc;
            d -= inc;
        }
        if d > 0.0 {
            let c = self.sf[s].conn as usize;
            let (view, g) = self.view(c);
            let r = s - self.conns[c].first as usize;
            let i = self.ccs[g].on_ack(&view, r);
            self.cwnd[s] = (self.cwnd[s] + i * d).max(1.0);
        }
    }

    /// mptcp_olia_cong_avoid() (MPTCP v0.88 on Linux 3.11, what Peng et al. measured), one
    /// call per ACK whatever the number of packets it acknowledges: slow start while
    /// w_r ≤ ssthresh (one packet per ACK), else I_r through the kernel's fixed-point counter
    /// (`Olia::kernel_step`: ⌊2^10·I_r⌋ per ACK, ±1 packet at ±(2^10 − 1), remainder dropped),
    /// so the window stays a whole number of packets, ≥ 1. The window that the other routes
    /// see during recovery is ssthresh (`mptcp_get_crt_cwnd`), which is what `cwnd` holds here.
    fn increase_olia(&mut self, s: usize) {
        if self.cwnd[s] <= self.sf[s].ssthresh {
            self.cwnd[s] += 1.0;
            return;
        }
        let c = self.sf[s].conn as usize;
        let (view, g) = self.view(c);
        let r = s - self.conns[c].first as usize;
        let i = self.ccs[g].on_ack(&view, r);
        match cc::Olia::kernel_step(&mut self.sf[s].olia_cnt, i) {
            1 => self.cwnd[s] += 1.0,
            -1 => self.cwnd[s] = (self.cwnd[s] - 1.0).max(1.0),
            _ => {}
        }
    }

    /// Loss event on route s: ssthresh = w = max(w − D_r, min_cwnd) (OLIA: rounded down to
    /// whole packets, tcp_reno_ssthresh = max(w >> 1, 2)).
    fn reduce(&mut self, s: usize) {
        let c = self.sf[s].conn as usize;
        let (view, g) = self.view(c);
        let r = s - self.conns[c].first as usize;
        let mut w = self.ccs[g].cwnd_after_loss(&view, r);
        if self.olia[g] {
            w = w.floor();
        }
        let total: f64 = view.cwnd.iter().sum();
        let decrease = self.cwnd[s] - w;
        if self.now >= self.measure_ns.0 && self.now <= self.measure_ns.1 {
            self.sf[s].ds_sum += decrease / total;
            self.sf[s].ds_n += 1;
        }
        self.cwnd[s] = w;
        let sf = &mut self.sf[s];
        sf.ssthresh = w;
        sf.loss_events += 1;
        // OLIA's loss markers (mptcp_olia_set_state on entering Recovery/Loss/CWR): a new
        // interval starts if data was acknowledged since the last one and this is not a
        // repeated timeout.
        if sf.olia_loss[2] != sf.olia_loss[1] && sf.backoff == 0 {
            sf.olia_loss[0] = sf.olia_loss[1];
            sf.olia_loss[1] = sf.olia_loss[2];
        }
        self.loss_interval[s] = Self::olia_ell(&sf.olia_loss);
    }

    fn rto_event(&mut self, s: usize) {
        let now = self.now;
        let sf = &mut self.sf[s];
        if now != sf.rto_timer_at {
            return; // stale entry
        }
        sf.rto_timer_at = u64::MAX;
        if sf.rto_deadline == 0 {
            return;
        }
        if sf.rto_deadline > now {
            let d = sf.rto_deadline;
            self.arm_rto(s, d);
            return;
        }
        if !self.conns[sf.conn as usize].active {
            sf.rto_deadline = 0;
            return;
        }
        // Timeout: reduce (unless this episode already did), window 1, every unSACKed
        // segment is lost, back off the timer, slow start back to ssthresh.
        sf.timeouts += 1;
        if sf.state == OPEN || sf.state == CWR {
            self.reduce(s);
        }
        self.cwnd[s] = 1.0;
        let sf = &mut self.sf[s];
        sf.retx.clear();
        let mut lost = 0;
        for q in sf.snd_una..sf.snd_nxt {
            let i = (q & sf.mask) as usize;
            if sf.sb[i] & SACKED == 0 {
                sf.sb[i] = LOST;
                sf.retx.push_back(q);
                lost += 1;
            }
        }
        sf.a_lost += lost;
        sf.inflight = 0;
        sf.tsorted.clear();
        sf.state = LOSS;
        sf.recover = sf.snd_nxt;
        sf.backoff = (sf.backoff + 1).min(16);
        let d = now + Self::rto_backed_off(sf);
        self.arm_rto(s, d);
        self.try_send(s);
    }

    // ------------------------------------------------------------------ flows
    fn start(&mut self, c: usize) {
        self.conns[c].active = true;
        let conn = &self.conns[c];
        // lowest-RTT-first: the subflow with the smallest RTT gets the first segments
        let mut order: Vec<usize> = (conn.first as usize..(conn.first + conn.n) as usize).collect();
        order.sort_by(|&a, &b| self.srtt[a].partial_cmp(&self.srtt[b]).unwrap());
        for s in order {
            self.try_send(s);
        }
    }

    fn stop(&mut self, c: usize) {
        self.conns[c].active = false;
        let conn = &self.conns[c];
        for s in conn.first as usize..(conn.first + conn.n) as usize {
            self.sf[s].rto_deadline = 0;
        }
    }

    /// FAST TCP: periodic window update (Tang et al. eq. (1)) with the mean RTT of the interval.
    fn fast_event(&mut self, c: usize) {
        let g = self.conns[c].group as usize;
        let (upd, alpha) = {
            let f = self.ccs[g].fast().expect("fast event for a non-FAST group");
            (f.update_interval_s, self.conns[c].alpha)
        };
        let (a, b) = (
            self.conns[c].first as usize,
            (self.conns[c].first + self.conns[c].n) as usize,
        );
        if self.conns[c].active {
            for s in a..b {
                let sf = &mut self.sf[s];
                if sf.rtt_n > 0 && sf.state == OPEN && self.cwnd[s] >= sf.ssthresh {
                    let rtt = sf.rtt_sum / sf.rtt_n as f64;
                    let f = self.ccs[g].fast().unwrap();
                    self.cwnd[s] = f
                        .update(self.cwnd[s], rtt, self.base_rtt[s], alpha)
                        .max(1.0);
                }
                sf.rtt_sum = 0.0;
                sf.rtt_n = 0;
            }
            for s in a..b {
                self.try_send(s);
            }
        }
        self.push(self.now + ns(upd), K_FAST, c as u32);
    }

    /// FAST α adaptation (Tang et al. Algorithm 2) from the connection's mean queueing delay
    /// and loss rate over the interval.
    fn adapt_event(&mut self, c: usize) {
        let g = self.conns[c].group as usize;
        let (a, b) = (
            self.conns[c].first as usize,
            (self.conns[c].first + self.conns[c].n) as usize,
        );
        let (mut q_sum, mut q_n, mut lost, mut sent) = (0.0, 0u64, 0u64, 0u64);
        for s in a..b {
            let sf = &mut self.sf[s];
            if sf.a_rtt_n > 0 && self.base_rtt[s].is_finite() {
                q_sum += sf.a_rtt_sum - sf.a_rtt_n as f64 * self.base_rtt[s];
                q_n += sf.a_rtt_n;
            }
            lost += sf.a_lost;
            sent += sf.a_sent;
            sf.a_rtt_sum = 0.0;
            sf.a_rtt_n = 0;
            sf.a_lost = 0;
            sf.a_sent = 0;
        }
        let f = self.ccs[g].fast().unwrap();
        if q_n > 0 && sent > 0 {
            let (q, l) = (q_sum / q_n as f64, lost as f64 / sent as f64);
            self.conns[c].alpha = f.adapt(self.conns[c].alpha, q, l);
            let t = self.now as f64 / NS_PER_S;
            self.fast_log.push((t, a as u32, self.conns[c].alpha, q, l));
        }
        let t = self.now + ns(f.adapt_interval_s);
        self.push(t, K_ADAPT, c as u32);
    }

    // ------------------------------------------------------------------ background UDP
    fn bg_toggle(&mut self, b: usize) {
        let now = self.now;
        let (on, mean_on, mean_off, stop) = {
            let g = &self.bgs[b];
            (g.on, g.mean_on_s, g.mean_off_s, g.stop_ns)
        };
        if now >= stop {
            self.bgs[b].on = false;
            return;
        }
        if on {
            self.bgs[b].on = false;
            let t = now + ns(self.rng.exponential(mean_off));
            self.push(t, K_BG_TOGGLE, b as u32);
        } else {
            self.bgs[b].on = true;
            self.bgs[b].next_send = now;
            self.push(now, K_BG_SEND, b as u32);
            let t = now + ns(self.rng.exponential(mean_on)).max(1);
            self.push(t, K_BG_TOGGLE, b as u32);
        }
    }

    fn bg_send(&mut self, b: usize) {
        let now = self.now;
        let g = &mut self.bgs[b];
        if !g.on || now != g.next_send || now >= g.stop_ns {
            return;
        }
        g.next_send = now + g.interval_ns;
        let t = g.next_send;
        self.push(t, K_BG_SEND, b as u32);
        self.forward(
            Pkt {
                ts: now,
                owner: BG | b as u32,
                seq: 0,
                hop: 0,
                ce: false,
                ect: false,
            },
            now,
        );
    }

    // ------------------------------------------------------------------ measurement
    fn sample(&mut self) {
        let now = self.now;
        let t = now as f64 / NS_PER_S;
        let dt = self.sample_ns as f64 / NS_PER_S;
        for s in 0..self.sf.len() {
            let active = self.conns[self.sf[s].conn as usize].active;
            let sf = &mut self.sf[s];
            let d = sf.delivered - sf.delivered_sample;
            sf.delivered_sample = sf.delivered;
            if !active {
                continue;
            }
            self.ts_sf_time.push(t);
            self.ts_sf_id.push(s as u32);
            self.ts_cwnd.push(self.cwnd[s]);
            self.ts_srtt
                .push(if sf.have_rtt { self.srtt[s] } else { f64::NAN });
            self.ts_rate.push(d as f64 * self.pkt_bits / dt / 1e6);
            self.ts_losses.push(sf.loss_events);
        }
        for (l, link) in self.links.iter_mut().enumerate() {
            let q = link.queue_at(now);
            self.ts_link_time.push(t);
            self.ts_link_id.push(l as u32);
            self.ts_queue.push(q);
            self.ts_drops.push(link.drops);
        }
        if now + self.sample_ns <= self.end {
            self.push(now + self.sample_ns, K_SAMPLE, 0);
        }
    }

    fn snapshot(&mut self, which: usize) {
        self.snaps[which] = Snapshot {
            taken: true,
            sf: self
                .sf
                .iter()
                .map(|f| {
                    [
                        f.delivered,
                        f.sent,
                        f.retrans,
                        f.drops,
                        f.marks,
                        f.loss_events,
                        f.timeouts,
                    ]
                })
                .collect(),
            link: self
                .links
                .iter()
                .map(|l| [l.arrivals, l.drops, l.marks, l.accepted])
                .collect(),
        };
    }

    /// The measurements (call after `run_until` returned true).
    pub fn finish(mut self) -> Output {
        if !self.snaps[1].taken {
            self.snapshot(1);
        }
        let (s0, s1) = (&self.snaps[0], &self.snaps[1]);
        let sfd = |k: usize| -> Vec<u64> {
            (0..self.sf.len())
                .map(|i| s1.sf[i][k] - s0.sf[i][k])
                .collect()
        };
        let lkd = |k: usize| -> Vec<u64> {
            (0..self.links.len())
                .map(|i| s1.link[i][k] - s0.link[i][k])
                .collect()
        };
        let columns = vec![
            ("sf_group", Column::U32(self.sf_group.clone())),
            ("sf_flow", Column::U32(self.sf_flow.clone())),
            ("sf_route", Column::U32(self.sf_route.clone())),
            ("sf_delivered", Column::U64(sfd(0))),
            ("sf_sent", Column::U64(sfd(1))),
            ("sf_retrans", Column::U64(sfd(2))),
            ("sf_drops", Column::U64(sfd(3))),
            ("sf_marks", Column::U64(sfd(4))),
            ("sf_loss_events", Column::U64(sfd(5))),
            ("sf_timeouts", Column::U64(sfd(6))),
            ("sf_srtt", Column::F64(self.srtt.clone())),
            (
                "sf_ds_sum",
                Column::F64(self.sf.iter().map(|f| f.ds_sum).collect()),
            ),
            (
                "sf_ds_n",
                Column::U64(self.sf.iter().map(|f| f.ds_n).collect()),
            ),
            ("sf_base_rtt", Column::F64(self.base_rtt.clone())),
            ("link_arrivals", Column::U64(lkd(0))),
            ("link_drops", Column::U64(lkd(1))),
            ("link_marks", Column::U64(lkd(2))),
            ("link_accepted", Column::U64(lkd(3))),
            (
                "link_max_queue",
                Column::U32(self.links.iter().map(|l| l.max_queue).collect()),
            ),
            (
                "ts_sf_time",
                Column::F64(std::mem::take(&mut self.ts_sf_time)),
            ),
            ("ts_sf_id", Column::U32(std::mem::take(&mut self.ts_sf_id))),
            ("ts_cwnd", Column::F64(std::mem::take(&mut self.ts_cwnd))),
            ("ts_srtt", Column::F64(std::mem::take(&mut self.ts_srtt))),
            ("ts_rate", Column::F64(std::mem::take(&mut self.ts_rate))),
            (
                "ts_losses",
                Column::U64(std::mem::take(&mut self.ts_losses)),
            ),
            (
                "ts_link_time",
                Column::F64(std::mem::take(&mut self.ts_link_time)),
            ),
            (
                "ts_link_id",
                Column::U32(std::mem::take(&mut self.ts_link_id)),
            ),
            ("ts_queue", Column::U32(std::mem::take(&mut self.ts_queue))),
            ("ts_drops", Column::U64(std::mem::take(&mut self.ts_drops))),
            ("fa_time", Column::F64(self.fast_log.iter().map(|e| e.0).collect())),
            ("fa_sf", Column::U32(self.fast_log.iter().map(|e| e.1).collect())),
            ("fa_alpha", Column::F64(self.fast_log.iter().map(|e| e.2).collect())),
            ("fa_q", Column::F64(self.fast_log.iter().map(|e| e.3).collect())),
            ("fa_l", Column::F64(self.fast_log.iter().map(|e| e.4).collect())),
        ];
        Output {
            columns,
            events: self.events,
            data_packets: self.data_packets,
        }
    }
}

fn grow_scoreboard(sf: &mut Subflow) {
    let old_mask = sf.mask;
    let cap = sf.sb.len() * 2;
    let mut nb = vec![0u8; cap];
    let mut nt = vec![0u64; cap];
    for q in sf.snd_una..sf.snd_nxt {
        nb[q as usize & (cap - 1)] = sf.sb[(q & old_mask) as usize];
        nt[q as usize & (cap - 1)] = sf.xmit_ts[(q & old_mask) as usize];
    }
    sf.sb = nb;
    sf.xmit_ts = nt;
    sf.mask = (cap - 1) as u32;
}

/// Parse a JSON run description and simulate it.
pub fn run_json(config: &str) -> Result<Output, String> {
    let cfg: Config =
        serde_json::from_str(config).map_err(|e| format!("bad simulator config: {e}"))?;
    Ok(Sim::new(&cfg)?.run())
}
